// Shared set-up for the end-to-end tests: a real server on a temporary SQLite store,
// the demo stage, and Chromium with the built extension loaded. `cargo xtask test`
// sets REDLINE_BIN, XTASK_BIN, REDLINE_EXTENSION_DIR and CHROMIUM.
import { spawn, execFileSync } from "node:child_process";
import { cpSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; run the end-to-end tests with \`cargo xtask test\``);
  return value;
};

/** Spawns a long-running command and resolves with the first URL it prints on a line matching `ready`. */
function spawnUntilUrl(program, args, ready) {
  const child = spawn(program, args, { stdio: ["ignore", "pipe", "inherit"] });
  return new Promise((resolve, reject) => {
    const lines = createInterface({ input: child.stdout });
    lines.on("line", (line) => {
      const url = line.match(/https?:\/\/\S+/)?.[0];
      if (url && ready.test(line)) resolve({ child, url: url.replace(/\/$/, "") });
    });
    child.on("exit", (code) => reject(new Error(`${program} exited (${code}) before it was ready`)));
    child.on("error", reject);
  });
}

/** The changes server on a fresh store, with a project, a stage at `stageUrl` and a token. */
export async function startServer({ stageUrl }) {
  const bin = env("REDLINE_BIN");
  const data = mkdtempSync(join(tmpdir(), "redline-e2e-data-"));
  const admin = (...args) => JSON.parse(execFileSync(bin, [...args, "--data", data, "--json"], { encoding: "utf8" }));
  admin("project", "add", "dev");
  admin("stage", "add", "--project", "dev", "--branch", "main", "--url", `${stageUrl}/`);
  const { token } = admin(
    "token", "create", "--project", "dev", "--name", "dev",
    "--scope", "changes:project:read,changes:project:write,changes:project:file",
  );
  const { child, url } = await spawnUntilUrl(bin, ["serve", "--addr", "127.0.0.1:0", "--data", data], /listening/);
  return {
    url,
    token,
    async stop() {
      child.kill();
      rmSync(data, { recursive: true, force: true });
    },
  };
}

/** The demo stage: plain at `/`, strict CSP at `/strict/`. */
export async function startStage() {
  const { child, url } = await spawnUntilUrl(env("XTASK_BIN"), ["serve-stage", "--addr", "127.0.0.1:0"], /demo stage/);
  return { url, stop: async () => child.kill() };
}

/**
 * Chromium with the built extension. The copy's manifest differs from what ships in one
 * way only: it pre-grants `grantOrigins`, standing in for the person who would grant the
 * stage's origin (activeTab from a real click cannot be given in a headless test).
 */
export async function launchBrowser({ grantOrigins, prepare }) {
  const extension = mkdtempSync(join(tmpdir(), "redline-e2e-extension-"));
  cpSync(env("REDLINE_EXTENSION_DIR"), extension, { recursive: true });
  const manifestPath = join(extension, "manifest.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  manifest.host_permissions = grantOrigins;
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2));
  prepare?.(extension);

  const profile = mkdtempSync(join(tmpdir(), "redline-e2e-profile-"));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: env("CHROMIUM"),
    headless: true,
    args: [
      "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update",
      "--disable-sync", "--no-first-run",
      `--load-extension=${extension}`, `--disable-extensions-except=${extension}`,
    ],
  });
  // Chromium here has no internet: anything but this machine is refused at once.
  await context.route("**/*", (route) => {
    const { hostname, protocol } = new URL(route.request().url());
    const local = hostname === "127.0.0.1" || hostname === "localhost" || protocol === "chrome-extension:";
    return local ? route.continue() : route.abort();
  });
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent("serviceworker"));
  const extensionId = new URL(worker.url()).host;
  return {
    context,
    worker,
    extensionId,
    extensionUrl: (path) => `chrome-extension://${extensionId}/${path}`,
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
      rmSync(extension, { recursive: true, force: true });
    },
  };
}

/** Collects a page's console errors and uncaught exceptions, to assert there were none. */
export function watchErrors(page) {
  const errors = [];
  page.on("pageerror", (error) => errors.push(String(error)));
  page.on("console", (message) => message.type() === "error" && errors.push(message.text()));
  return errors;
}

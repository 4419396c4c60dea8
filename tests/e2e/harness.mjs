// Shared set-up for the end-to-end tests: a real server on a temporary SQLite store,
// the demo stage, and Chromium with the built extension loaded. `cargo xtask test`
// sets REDLINE_BIN, XTASK_BIN, REDLINE_EXTENSION_DIR and CHROMIUM.
import assert from "node:assert/strict";
import { spawn, execFileSync } from "node:child_process";
import { once } from "node:events";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { chromium } from "playwright-core";

const env = (name) => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set; run the end-to-end tests with \`cargo xtask test\``);
  return value;
};

/** Every process the harness started, ended when the test process exits, however it ends. */
const started = new Set();
process.on("exit", () => {
  for (const child of started) {
    try {
      process.kill(child.detached ? -child.pid : child.pid, "SIGKILL");
    } catch {
      // already gone
    }
  }
});

/** Starts `program` and remembers it for the exit clean-up. */
export function startProcess(program, args, options) {
  const child = spawn(program, args, options);
  child.detached = Boolean(options.detached);
  started.add(child);
  child.on("exit", () => started.delete(child));
  return child;
}

/** Spawns a long-running command and resolves with the first URL it prints on a line matching `ready`. */
function spawnUntilUrl(program, args, ready) {
  const child = startProcess(program, args, { stdio: ["ignore", "pipe", "inherit"] });
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

/** The changes server running on a fresh store (see `prepareServer`); `dispose()` ends it. */
export async function startServer({ stageUrl }) {
  const server = await prepareServer({ stageUrl });
  await server.start();
  return server;
}

/**
 * The demo stage: plain at `/`, strict CSP at `/strict/`. `addr` (default any free port),
 * `app` (a changed copy of `demo/`'s sources, built before it is served) and `sha` (the
 * commit it stands for) serve another build: stop the stage and start it again on its
 * address, as a deploy would.
 */
export async function startStage({ addr = "127.0.0.1:0", app, sha } = {}) {
  const args = ["serve-stage", "--addr", addr];
  if (app) args.push("--app", app);
  if (sha) args.push("--sha", sha);
  const { child, url } = await spawnUntilUrl(env("XTASK_BIN"), args, /demo stage/);
  const stop = async () => {
    if (child.exitCode === null) {
      const exited = once(child, "exit");
      child.kill();
      await exited;
    }
  };
  return { url, addr: new URL(url).host, stop };
}

/**
 * Chromium with the built extension. The copy's manifest differs from what ships in one
 * way only: it pre-grants `grantOrigins`, standing in for the person who would grant the
 * stage's origin (activeTab from a real click cannot be given in a headless test).
 * `offline`: how requests off this machine are refused: "routed" (the default) has
 * Playwright abort each, so a test sees them fail at once; "unresolved" has Chromium's
 * resolver fail every other host name, so no request passes through Node, which costs
 * each of them tens of milliseconds (benchmarks, which measure what a person waits).
 */
export async function launchBrowser({ grantOrigins, prepare, offline = "routed" }) {
  const { extension, profile } = prepareBrowserFiles({ grantOrigins, prepare });
  return openBrowser(extension, profile, offline);
}

/**
 * A copy of the built extension pre-granting `grantOrigins` (see `launchBrowser`), run
 * by `prepare(folder)` first when given, and an empty profile: temporary folders.
 */
export function prepareBrowserFiles({ grantOrigins, prepare }) {
  const extension = mkdtempSync(join(tmpdir(), "redline-e2e-extension-"));
  cpSync(env("REDLINE_EXTENSION_DIR"), extension, { recursive: true });
  const manifestPath = join(extension, "manifest.json");
  const manifest = JSON.parse(readFileSync(manifestPath, "utf8"));
  manifest.host_permissions = grantOrigins;
  writeFileSync(manifestPath, JSON.stringify(manifest, null, 2));
  prepare?.(extension);

  const profile = mkdtempSync(join(tmpdir(), "redline-e2e-profile-"));
  return { extension, profile };
}

/**
 * Chromium's command line for `extension` on `profile`, with `offline` as in
 * `launchBrowser`; `devtools` is how DevTools is reached (a port by default).
 */
export function chromiumArgs(extension, profile, offline, devtools = "--remote-debugging-port=0") {
  return [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run", "--window-size=1280,800",
    "--enable-unsafe-extension-debugging", devtools,
    `--user-data-dir=${profile}`,
    ...(offline === "unresolved" ? ["--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1, EXCLUDE localhost, EXCLUDE *.localhost"] : []),
    `--load-extension=${extension}`, `--disable-extensions-except=${extension}`,
    "about:blank",
  ];
}

/** Chromium on `profile` with the prepared copy of the extension at `extension`. */
async function openBrowser(extension, profile, offline) {
  // Chromium is started here rather than by Playwright so that the tests can connect
  // with a browser-level DevTools session: `Extensions.triggerAction` clicks the
  // toolbar button as a person would, which grants `activeTab` (and so screenshots).
  const portFile = join(profile, "DevToolsActivePort");
  rmSync(portFile, { force: true });
  const chromiumProcess = startProcess(env("CHROMIUM"), chromiumArgs(extension, profile, offline), { stdio: "ignore", detached: true });
  const exited = once(chromiumProcess, "exit");
  let port;
  // Up to 30 s: right after a heavy build (the anchors tests run next build) a start has once taken over 10.
  for (let i = 0; i < 600 && !port; i++) {
    await new Promise((resolve) => setTimeout(resolve, 50));
    port = existsSync(portFile) ? readFileSync(portFile, "utf8").split("\n")[0] : undefined;
  }
  if (!port) throw new Error("Chromium did not open its DevTools port");
  const browser = await chromium.connectOverCDP(`http://127.0.0.1:${port}`);
  const context = browser.contexts()[0];
  // Chromium here has no internet: anything but this machine is refused at once. (Chromium
  // resolves `*.localhost` to this machine too: a test's other sites.)
  if (offline === "routed") {
    await context.route("**/*", (route) => {
      const { hostname, protocol } = new URL(route.request().url());
      const local = hostname === "127.0.0.1" || hostname === "localhost" || hostname.endsWith(".localhost") || protocol === "chrome-extension:";
      return local ? route.continue() : route.abort();
    });
  }
  const worker = context.serviceWorkers()[0] ?? (await context.waitForEvent("serviceworker"));
  const extensionId = new URL(worker.url()).host;
  const devtools = await browser.newBrowserCDPSession();
  const quit = async () => {
    await browser.close().catch(() => {});
    // Chromium's helper processes share its process group: end them all.
    try {
      process.kill(-chromiumProcess.pid, "SIGTERM");
    } catch {
      // already gone
    }
    await exited;
  };
  return {
    context,
    worker,
    extensionId,
    extensionUrl: (path) => `chrome-extension://${extensionId}/${path}`,
    /** Clicks Redline's toolbar button for `page`'s tab, as a person would; resolves with when (`Date.now()`) it was clicked. */
    async clickAction(page) {
      const { targetInfos } = await devtools.send("Target.getTargets", { filter: [{ type: "tab" }] });
      const tab = targetInfos.find((t) => t.url === page.url());
      if (!tab) throw new Error(`no tab shows ${page.url()}`);
      const clickedAt = Date.now();
      await devtools.send("Extensions.triggerAction", { id: extensionId, targetId: tab.targetId });
      return clickedAt;
    },
    async close() {
      await quit();
      removeTemporary(profile);
      removeTemporary(extension);
    },
    /**
     * Quits Chromium and starts it again on the same profile and extension copy (so the
     * same extension id and storage): what a browser restart leaves. Use the returned
     * browser from then on.
     */
    async restart() {
      await quit();
      return openBrowser(extension, profile, offline);
    },
  };
}

/** Removes a temporary folder; one a browser process still writes to is left to the OS. */
export function removeTemporary(dir) {
  try {
    rmSync(dir, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
  } catch (error) {
    console.warn(`left ${dir} behind: ${error.code}`);
  }
}

/** Collects a page's console errors (with the address of what failed) and uncaught exceptions (into `errors`), to assert there were none. */
export function watchErrors(page, errors = []) {
  page.on("pageerror", (error) => errors.push(String(error)));
  // A failed load's text does not name what failed; its location does.
  page.on("console", (message) => {
    if (message.type() !== "error") return;
    const { url } = message.location();
    errors.push(url ? `${message.text()} (${url})` : message.text());
  });
  return errors;
}

/** A port nothing listens on now. */
async function freePort() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * The changes server set up (project, stage at `stageUrl`, token) on an address chosen
 * now, but not running: `start()` and `stop()` bring it up and down on the same address
 * and store, for testing what the extension does while the server is away. With
 * `metrics`, it also serves `/metrics` (read by `metrics()`); `graceSeconds` sets the
 * project's hold (default 60).
 */
export async function prepareServer({ stageUrl, metrics = false, graceSeconds }) {
  const bin = env("REDLINE_BIN");
  const data = mkdtempSync(join(tmpdir(), "redline-e2e-data-"));
  // Bounded: this blocks the test's event loop, so a command that hung would hang the file.
  const admin = (...args) => JSON.parse(execFileSync(bin, [...args, "--data", data, "--json"], { encoding: "utf8", timeout: 60_000 }));
  const grace = graceSeconds === undefined ? [] : ["--grace-seconds", String(graceSeconds)];
  const { projectId } = admin("project", "add", "dev", ...grace);
  const { stageId } = admin("stage", "add", "--project", "dev", "--branch", "main", "--url", `${stageUrl}/`);
  const { token } = admin(
    "token", "create", "--project", "dev", "--name", "dev",
    "--scope", "changes:project:read,changes:project:write,changes:project:file",
  );
  const addr = `127.0.0.1:${await freePort()}`;
  const url = `http://${addr}`;
  const metricsAddr = metrics ? `127.0.0.1:${await freePort()}` : undefined;
  let child;
  const stop = async () => {
    if (child?.exitCode === null) {
      const exited = once(child, "exit");
      child.kill();
      await exited;
    }
    child = undefined;
  };
  return {
    url,
    token,
    projectId,
    stageId,
    /** Runs an admin command on this server's store (e.g. `auth approve`); resolves with its JSON. */
    admin: async (...args) => admin(...args),
    async start() {
      const serve = ["serve", "--addr", addr, "--data", data, ...(metricsAddr ? ["--metrics-addr", metricsAddr] : [])];
      ({ child } = await spawnUntilUrl(bin, serve, /listening/));
    },
    /** The RPC calls answered so far, by RPC name (all status classes), from `/metrics`. */
    async metrics() {
      const text = await (await fetch(`http://${metricsAddr}/metrics`)).text();
      const calls = {};
      for (const [, rpc, n] of text.matchAll(/^redline_rpc_requests_total\{rpc="([^"]+)",status="[^"]+"\} (\d+)$/gm)) {
        calls[rpc] = (calls[rpc] ?? 0) + Number(n);
      }
      return calls;
    },
    stop,
    async dispose() {
      await stop();
      rmSync(data, { recursive: true, force: true });
    },
    /** Calls an RPC with the token; resolves with the output, or throws with the error body. */
    async rpc(name, input) {
      const response = await fetch(`${url}/rpc/${name}`, {
        method: "POST",
        headers: { "Content-Type": "application/json", Authorization: `Bearer ${token}` },
        body: JSON.stringify({ rpcName: name, data: input }),
      });
      const body = await response.json();
      if (!response.ok) throw new Error(`${name}: ${response.status} ${JSON.stringify(body)}`);
      return body;
    },
    /**
     * The project's items as filed, each in full: a list answers summaries (no capture,
     * body or console errors), so each item is read with `getChange`. Done ones included.
     */
    async items() {
      const items = [];
      let cursor;
      do {
        const page = await this.rpc("listChanges", { projectId, includeDone: true, limit: 200, ...(cursor ? { cursor } : {}) });
        for (const { changeId } of page.changes) items.push((await this.rpc("getChange", { changeId })).change);
        cursor = page.nextCursor;
      } while (cursor);
      return items;
    },
    /** The item titled `title` in full, or undefined while the server has none. */
    async itemTitled(title) {
      let cursor;
      do {
        const page = await this.rpc("listChanges", { projectId, includeDone: true, limit: 200, ...(cursor ? { cursor } : {}) });
        const found = page.changes.find((c) => c.title === title);
        if (found) return (await this.rpc("getChange", { changeId: found.changeId })).change;
        cursor = page.nextCursor;
      } while (cursor);
    },
  };
}

/**
 * A changes server set up for `stage` (a started stage: `url`, `stop()`) and started, a
 * browser granted the test origins and a side panel connected to the server; `stop()`
 * closes all of it, the stage included (also when starting fails part-way).
 */
export async function startConnected(stage) {
  const server = await prepareServer({ stageUrl: stage.url });
  let browser;
  const stop = async () => {
    await browser?.close();
    await server.dispose();
    await stage.stop();
  };
  try {
    await server.start();
    browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
    const panel = await openConnectedPanel(browser, server);
    return { stage, server, browser, panel, stop };
  } catch (e) {
    await stop();
    throw e;
  }
}

/**
 * The side panel, signed in to `server` through its settings form. `viewport` sizes the
 * page first; `errors`, when given, collects the panel's errors from its first load.
 */
export async function openConnectedPanel(browser, server, { viewport, errors } = {}) {
  const panel = await browser.context.newPage();
  if (errors) watchErrors(panel, errors);
  if (viewport) await panel.setViewportSize(viewport);
  await panel.goto(browser.extensionUrl("panel.html"));
  await panel.getByRole("button", { name: "Settings" }).click();
  await panel.locator("#api-url").fill(server.url);
  await panel.locator("#token").fill(server.token);
  await panel.getByRole("button", { name: "Save" }).click();
  await panel.getByTestId("connection-status").getByText("Connected as").waitFor();
  return panel;
}

/** Draws a closed freehand loop around `box` with the mouse, as a person would. */
export async function drawLasso(page, box, { margin = 14, release = true, pace = 0, queue = false } = {}) {
  const cx = box.x + box.width / 2;
  const cy = box.y + box.height / 2;
  // An ellipse covers π/4 of its bounding box: scale it so the box sits well inside.
  const sx = (box.width / 2 + margin) * 1.45;
  const sy = (box.height / 2 + margin) * 1.45;
  const { width, height } = page.viewportSize();
  const at = (a) => [
    Math.min(Math.max(cx + sx * Math.cos(a), 2), width - 2),
    Math.min(Math.max(cy + sy * Math.sin(a), 2), height - 2),
  ];
  await page.mouse.move(...at(0));
  await page.mouse.down();
  const angles = Array.from({ length: 48 }, (_, i) => ((i + 1) / 48) * 2 * Math.PI);
  const started = Date.now();
  const due = (i) => new Promise((resolve) => setTimeout(resolve, started + (i + 1) * pace - Date.now()));
  if (queue) {
    // Each move sent at its time without waiting for the one before to be dispatched, so
    // the stroke takes 48 × `pace` ms however slow the browser is to answer.
    await Promise.all(angles.map((a, i) => due(i).then(() => page.mouse.move(...at(a)))));
  } else {
    // Each move after the one before, at least `pace` ms apart.
    for (const [i, a] of angles.entries()) {
      await due(i);
      await page.mouse.move(...at(a));
    }
  }
  if (release) await page.mouse.up();
}

/**
 * Opens `url` and starts circling from the toolbar button; resolves with the overlay frame.
 * `beforeClick(page)` runs on the loaded page before the click, ahead of anything of ours.
 */
export async function openOverlay(browser, url, viewport = { width: 1200, height: 700 }, { beforeClick } = {}) {
  const page = await browser.context.newPage();
  await page.setViewportSize(viewport);
  await page.goto(url);
  await page.bringToFront();
  await beforeClick?.(page);
  const ready = page.locator('#redline-overlay-host[data-redline-state="ready"]');
  await browser.clickAction(page);
  // On a heavily loaded machine a toolbar click has been seen to go unanswered once in
  // many runs; a person would click again, and so does the test (saying so).
  if (!(await ready.waitFor({ state: "attached", timeout: 10_000 }).then(() => true, () => false))) {
    console.warn(`no overlay 10 s after clicking the toolbar button on ${url}; clicking again`);
    await browser.clickAction(page);
    await ready.waitFor({ state: "attached" });
  }
  const overlay = page.frames().find((f) => f.url().startsWith(browser.extensionUrl("overlay.html")));
  return { page, overlay };
}

/**
 * Files an item as a person would: a lasso around `box` on `page`, `text` typed into the
 * composer and Enter. Answers the item once `server` has it (up to 10 s), or undefined.
 */
export async function fileCircled(server, { page, overlay }, box, text) {
  await drawLasso(page, box);
  const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
  await composer.getByRole("textbox").fill(text);
  await composer.getByRole("textbox").press("Enter");
  await composer.waitFor({ state: "detached" });
  const title = text.split("\n")[0];
  for (let i = 0; i < 100; i++) {
    const filed = await server.itemTitled(title);
    if (filed) return filed;
    await page.waitForTimeout(100);
  }
}

/** With REDLINE_PANEL_SCREENSHOTS=DIR, saves `panel` as NAME-light.png and NAME-dark.png (docs/using.md's pictures). */
export async function savePanelScreenshots(panel, name) {
  const dir = process.env.REDLINE_PANEL_SCREENSHOTS;
  if (!dir) return;
  await panel.bringToFront();
  for (const scheme of ["light", "dark"]) {
    await panel.emulateMedia({ colorScheme: scheme });
    await panel.waitForTimeout(300);
    await panel.screenshot({ path: join(dir, `${name}-${scheme}.png`) });
  }
  await panel.emulateMedia({ colorScheme: null });
}

/**
 * A coding agent's own place: a fresh folder (`work`) with its config dir and a git
 * checkout at `work/repo`, and the environment that points `redline` at `server`.
 */
export function agentWorkspace(server, prefix) {
  const work = mkdtempSync(join(tmpdir(), prefix));
  mkdirSync(join(work, "config"));
  mkdirSync(join(work, "repo"));
  const env = {
    ...process.env,
    XDG_CONFIG_HOME: join(work, "config"),
    HOME: work,
    REDLINE_API_URL: server.url,
    REDLINE_TOKEN: server.token,
  };
  return { work, env };
}

const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

/** Fails on any axe-core violation in `page` (a page or a frame, e.g. the overlay) as it is now. */
export async function assertAccessible(page, what = "the page") {
  // Evaluated over DevTools, which an extension page's CSP does not govern.
  if (!(await page.evaluate(() => "axe" in window))) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    const { violations } = await window.axe.run(document, { resultTypes: ["violations"] });
    return violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`);
  });
  assert.deepEqual(violations, [], `axe-core finds no violations in ${what}`);
}

/**
 * The sign-in as the extension keeps it (`src/browser/sign_in_store.rs`): read in `context`, a
 * page or the worker of the extension's origin; `undefined` when none is saved.
 */
export function storedSignIn(context) {
  return context.evaluate(() => new Promise((resolve, reject) => {
    const opening = indexedDB.open("redline-sign-in");
    opening.onupgradeneeded = () => opening.result.createObjectStore("sign-in");
    opening.onerror = () => reject(opening.error);
    opening.onsuccess = () => {
      const db = opening.result;
      const reading = db.transaction("sign-in").objectStore("sign-in").get("settings");
      reading.onerror = () => reject(reading.error);
      reading.onsuccess = () => {
        db.close();
        resolve(reading.result);
      };
    };
  }));
}

/**
 * Saves `settings` as the panel's form does (`src/browser/sign_in_store.rs`): into the extension
 * origin's IndexedDB, then the non-secret `signedIn` flag the worker listens for.
 */
export function saveSignIn(context, settings) {
  return context.evaluate((settings) => new Promise((resolve, reject) => {
    const opening = indexedDB.open("redline-sign-in");
    opening.onupgradeneeded = () => opening.result.createObjectStore("sign-in");
    opening.onerror = () => reject(opening.error);
    opening.onsuccess = () => {
      const db = opening.result;
      const writing = db.transaction("sign-in", "readwrite");
      writing.objectStore("sign-in").put(settings, "settings");
      writing.onerror = () => reject(writing.error);
      writing.oncomplete = () => {
        db.close();
        resolve();
      };
    };
  }).then(() => chrome.storage.local.set({ signedIn: { apiUrl: settings.apiUrl, savedAtMs: Date.now() } })), settings);
}

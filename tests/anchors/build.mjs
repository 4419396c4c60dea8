// Building and serving the anchors test apps: each build in a clean environment (no
// REDLINE_ANCHORS, no CI commit variable unless given), timed; a static file server.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { createReadStream, existsSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { createRequire } from "node:module";
import { extname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const require = createRequire(import.meta.url);
const { SHA_VARIABLES } = require("../../plugins/redline-anchors/src/build-info.cjs");

export const REPO = resolve(fileURLToPath(new URL("../..", import.meta.url)));
export const appDir = (name) => join(REPO, "tests/anchors", name);

/** The environment a build sees: ours, less anything that would turn anchors on or name a commit. */
export function buildEnv(extra = {}) {
  const env = { ...process.env };
  for (const name of ["REDLINE_ANCHORS", "REDLINE_ANCHORS_ROOT", "ANCHORS_TEST_WITHOUT_PLUGIN", ...SHA_VARIABLES]) delete env[name];
  return { ...env, NEXT_TELEMETRY_DISABLED: "1", ...extra };
}

/** Runs `program args` in `cwd` with `env`; resolves with the milliseconds it took. */
export function timed(program, args, { cwd, env }) {
  const started = performance.now();
  execFileSync(program, args, { cwd, env, stdio: ["ignore", "pipe", "inherit"] });
  return performance.now() - started;
}

/** `vite build` of a Vite test app (React's unless named) into `outDir`. */
export function viteBuild(outDir, env = {}, name = "vite-app") {
  const app = appDir(name);
  return timed(join(app, "node_modules/.bin/vite"), ["build", "--outDir", outDir, "--emptyOutDir", "--logLevel", "warn"], {
    cwd: app,
    env: buildEnv(env),
  });
}

/** `next build` of next-app with `env`, its export moved to `outDir`; the milliseconds it took. */
export function nextBuild(outDir, env = {}) {
  const app = appDir("next-app");
  rmSync(join(app, ".next"), { recursive: true, force: true });
  const ms = timed(join(app, "node_modules/.bin/next"), ["build"], { cwd: app, env: buildEnv(env) });
  rmSync(outDir, { recursive: true, force: true });
  renameSync(join(app, "out"), outDir);
  rmSync(join(app, ".next"), { recursive: true, force: true });
  return ms;
}

/** The same with the Babel plugin: Next.js compiles with Babel while a babel.config.js exists. */
export function nextBabelBuild(outDir) {
  const config = join(appDir("next-app"), "babel.config.js");
  writeFileSync(config, 'module.exports = require("redline-anchors/next").babelConfig();\n');
  try {
    return nextBuild(outDir, { REDLINE_ANCHORS: "1", ANCHORS_TEST_WITHOUT_PLUGIN: "1" });
  } finally {
    rmSync(config);
  }
}

/** Every file under `dir`, by relative path, with its bytes. */
export function filesOf(dir) {
  const files = new Map();
  const walk = (d) => {
    for (const name of readdirSync(d)) {
      const path = join(d, name);
      if (statSync(path).isDirectory()) walk(path);
      else files.set(relative(dir, path), readFileSync(path));
    }
  };
  walk(dir);
  return files;
}

/** The files under `a` and under `b` are the same, name for name and byte for byte. */
export function assertSameFiles(a, b) {
  const [left, right] = [filesOf(a), filesOf(b)];
  assert.deepEqual([...left.keys()].sort(), [...right.keys()].sort());
  for (const [name, bytes] of left) assert.ok(bytes.equals(right.get(name)), `${name} differs`);
}

/** The text of every file under `dir` joined, to search a build for what it holds. */
export const textOf = (dir) => [...filesOf(dir).values()].map((b) => b.toString("utf8")).join("\n");

export const gitHead = () => execFileSync("git", ["rev-parse", "HEAD"], { cwd: REPO, encoding: "utf8" }).trim();

const TYPES = { ".html": "text/html; charset=utf-8", ".js": "text/javascript", ".css": "text/css", ".json": "application/json", ".txt": "text/plain" };

/** Serves `dir` on 127.0.0.1 at a free port (index.html for folders, `x.html` for `/x`); resolves with `{ url, stop }`. */
export async function serveDir(dir) {
  const server = createServer((request, response) => {
    const path = decodeURIComponent(new URL(request.url, "http://x").pathname);
    const candidates = [join(dir, path), join(dir, path, "index.html"), join(dir, `${path}.html`)];
    const file = candidates.find((f) => f.startsWith(dir) && existsSync(f) && statSync(f).isFile());
    if (!file) {
      response.writeHead(404).end("not found");
      return;
    }
    response.writeHead(200, { "Content-Type": TYPES[extname(file)] ?? "application/octet-stream", "Cache-Control": "no-store" });
    createReadStream(file).pipe(response);
  });
  await new Promise((done) => server.listen(0, "127.0.0.1", done));
  return {
    url: `http://127.0.0.1:${server.address().port}`,
    stop: () =>
      new Promise((done) => {
        server.close(done);
        server.closeAllConnections(); // a browser's kept-alive connections would hold close() for a minute
      }),
  };
}

/** The 1-based line of the first line of `file` (repo-relative) that contains `needle`. */
export function lineOf(file, needle) {
  const index = readFileSync(join(REPO, file), "utf8").split("\n").findIndex((l) => l.includes(needle));
  if (index < 0) throw new Error(`${needle} is not in ${file}`);
  return index + 1;
}

// CSS paths: ours against @medv/finder 4.0.2 (default options) on every element of each
// page in tests/fixtures/pages, in headless Chromium, in one run. Reports per tool:
// share of paths that match exactly their element, mean length, share with positional
// (`:nth-*`) steps, and µs per element (median of RUNS passes over all elements).
// Ours runs as it ships (the wasm2js content module) and as plain wasm, each in one
// batch (one cache for all elements, as a capture does) and with each element alone.
// Run with `cargo xtask bench`, which builds the bench-only modules this script loads.
import { createServer } from "node:http";
import { readFile } from "node:fs/promises";
import { extname, join, normalize } from "node:path";
import { fileURLToPath } from "node:url";
import { chromium } from "playwright-core";

const repo = fileURLToPath(new URL("../..", import.meta.url));
const pagesDir = process.env.REDLINE_FIXTURE_PAGES ?? join(repo, "tests/fixtures/pages");
const modulesDir = process.env.REDLINE_SELECTORS_DIR ?? join(repo, "target/bench/selectors");
const PAGES = ["github.com", "stripe.com", "tailwindcss"];
const RUNS = Number(process.env.RUNS ?? 7);

// Everything the page loads comes from here: the fixture pages, finder and our modules.
const mounts = { "/pages/": pagesDir, "/finder/": join(repo, "node_modules/@medv/finder"), "/ours/": modulesDir };
const types = { ".html": "text/html", ".js": "text/javascript", ".wasm": "application/wasm" };
const server = createServer(async (request, response) => {
  const path = decodeURIComponent(new URL(request.url, "http://x").pathname);
  const [prefix, dir] = Object.entries(mounts).find(([p]) => path.startsWith(p)) ?? [];
  try {
    if (!dir) throw new Error("not found");
    const body = await readFile(join(dir, normalize(path.slice(prefix.length))));
    response.writeHead(200, { "content-type": types[extname(path)] ?? "application/octet-stream" });
    response.end(body);
  } catch {
    response.writeHead(404).end();
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const origin = `http://127.0.0.1:${server.address().port}`;

const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM ?? "/usr/bin/chromium",
  args: ["--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-component-update", "--disable-sync", "--no-first-run"],
});

/** Runs in the page: every tool over every element, RUNS times. */
async function measureAll({ runs }) {
  const { finder } = await import("/finder/finder.js");
  const shipped = await import("/ours/js/content.js");
  const wasm = await import("/ours/wasm/selectors.js");
  await wasm.default({ module_or_path: "/ours/wasm/selectors_bg.wasm" });
  const elements = [...document.querySelectorAll("*")];
  const tools = {
    "@medv/finder": (els) => els.map((el) => { try { return finder(el); } catch { return null; } }),
    "ours, wasm2js, one batch": (els) => shipped.benchCssPaths(els, true),
    "ours, wasm2js, each alone": (els) => shipped.benchCssPaths(els, false),
    "ours, wasm, one batch": (els) => wasm.benchCssPaths(els, true),
    "ours, wasm, each alone": (els) => wasm.benchCssPaths(els, false),
  };
  const findsOnly = (path, el) => {
    try {
      const matches = document.querySelectorAll(path);
      return matches.length === 1 && matches[0] === el;
    } catch {
      return false;
    }
  };
  // Passes alternate between the tools, so a busy moment on a shared machine hits all.
  const times = Object.fromEntries(Object.keys(tools).map((name) => [name, []]));
  const lastPaths = {};
  for (let i = 0; i < runs; i++) {
    for (const [name, run] of Object.entries(tools)) {
      const started = performance.now();
      lastPaths[name] = run(elements);
      times[name].push(performance.now() - started);
    }
  }
  const results = {};
  for (const name of Object.keys(tools)) {
    const sorted = times[name].sort((a, b) => a - b);
    const paths = lastPaths[name];
    const found = paths.filter(Boolean);
    results[name] = {
      elements: elements.length,
      unique: paths.filter((p, i) => p && findsOnly(p, elements[i])).length / elements.length,
      meanLength: found.reduce((sum, p) => sum + p.length, 0) / found.length,
      positional: found.filter((p) => p.includes(":nth-")).length / elements.length,
      micros: (sorted[Math.floor(runs / 2)] * 1000) / elements.length,
    };
  }
  return results;
}

const rows = [];
for (const name of PAGES) {
  const context = await browser.newContext();
  await context.route("**/*", (route) =>
    new URL(route.request().url()).hostname === "127.0.0.1" ? route.continue() : route.abort());
  const page = await context.newPage();
  await page.goto(`${origin}/pages/${name}.html`);
  const results = await page.evaluate(measureAll, { runs: RUNS });
  const finder = results["@medv/finder"];
  for (const [tool, r] of Object.entries(results)) {
    rows.push({ page: name, tool, ...r, lengthRatio: r.meanLength / finder.meanLength, speedup: finder.micros / r.micros });
  }
  await context.close();
}
await browser.close();
server.close();

const pct = (x) => `${(x * 100).toFixed(0)} %`;
console.log("| page | tool | elements | unique | mean length | `nth-*` share | µs per element | length vs finder | speed vs finder |");
console.log("|---|---|---|---|---|---|---|---|---|");
for (const r of rows) {
  console.log(`| ${r.page} | ${r.tool} | ${r.elements} | ${pct(r.unique)} | ${r.meanLength.toFixed(1)} | ${pct(r.positional)} | ${r.micros.toFixed(1)} | ${r.lengthRatio.toFixed(2)}× | ${r.speedup.toFixed(1)}× |`);
}

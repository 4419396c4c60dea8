// Start-up of the extension's modules and of the overlay, in Chromium, in one run:
// - each page module (worker, overlay, panel) and the alternative single module (all three):
//   fetch + compile + instantiate through its wasm-bindgen glue, in an extension page;
// - a gesture's injection → overlay ready, on the plain and the strict-CSP demo stage.
// Run with `cargo xtask bench`. Prints medians and 90th percentiles.
import { cpSync } from "node:fs";
import { join } from "node:path";
import { launchBrowser, startStage } from "../e2e/harness.mjs";

const RUNS = Number(process.env.RUNS ?? 15);
const stats = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return `median ${at(0.5).toFixed(1)} ms, p90 ${at(0.9).toFixed(1)} ms (n=${sorted.length})`;
};

const stage = await startStage();
const browser = await launchBrowser({
  grantOrigins: ["http://127.0.0.1/*"],
  prepare: (dir) => cpSync(process.env.REDLINE_COMBINED_DIR, join(dir, "bench"), { recursive: true }),
});

const modules = [
  ["worker module", "pkg/worker.js"],
  ["overlay module", "pkg/overlay.js"],
  ["panel module", "pkg/panel.js"],
  ["combined worker+pages module", "bench/combined.js"],
];
for (const [label, glue] of modules) {
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const page = await browser.context.newPage();
    // A blank extension page: the module's glue is imported fresh in each new page.
    await page.goto(browser.extensionUrl("overlay.css"));
    times.push(await page.evaluate(async (glue) => {
      const started = performance.now();
      const module = await import(`/${glue}`);
      await module.default({ module_or_path: new URL(`/${glue.replace(/\.js$/, "_bg.wasm")}`, location.href) });
      return performance.now() - started;
    }, glue));
    await page.close();
  }
  console.log(`${label.padEnd(28)} import + init: ${stats(times)}`);
}

for (const [label, path] of [["plain stage", "/"], ["strict-CSP stage", "/strict/"]]) {
  const times = [];
  for (let i = 0; i < RUNS; i++) {
    const page = await browser.context.newPage();
    await page.goto(`${stage.url}${path}`);
    const tabUrl = page.url();
    // Noted by the page itself the moment the host's state flips, free of polling delay.
    await page.evaluate(() => {
      new MutationObserver(() => {
        if (document.querySelector('#redline-overlay-host[data-redline-state="ready"]')) window.readyAt ??= Date.now();
      }).observe(document.documentElement, { subtree: true, childList: true, attributes: true });
    });
    const injectedAt = await browser.worker.evaluate(async (tabUrl) => {
      const [tab] = (await chrome.tabs.query({})).filter((t) => t.url === tabUrl);
      const at = Date.now();
      await chrome.scripting.executeScript({ target: { tabId: tab.id }, files: ["content.js"] });
      return at;
    }, tabUrl);
    await page.locator('#redline-overlay-host[data-redline-state="ready"]').waitFor({ state: "attached" });
    times.push((await page.evaluate(() => window.readyAt)) - injectedAt);
    await page.close();
  }
  console.log(`${("overlay ready, " + label).padEnd(28)} injection → ready: ${stats(times)}`);
}

await browser.close();
await stage.stop();

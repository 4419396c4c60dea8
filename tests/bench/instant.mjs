// The waits a person sees, this build against the build of the commit before, in one run
// (`cargo xtask bench instant`, also part of `cargo xtask bench`):
// - gesture → lasso takes a stroke: from the toolbar click (`Extensions.triggerAction`)
//   to the frame in which the mount script's pen takes input (its `redline:pen-ready`
//   mark); the build before had no pen, so there the overlay app being up is the moment;
// - gesture → overlay app up: from the click to the overlay's host reading `ready` (the
//   overlay app is up and has told the content script), noted by the page itself; the
//   headline is this wait as a person has it, measured in a browser of each build that
//   no debugger holds (`unheld.mjs`: DevTools over a pipe, attached to the browser and
//   the clicked page only). Playwright, connected, holds every new frame until it has
//   attached to it (`waitForDebuggerOnStart`), the overlay's too; the same wait is also
//   measured in a browser Playwright drives (where the release's waits below are
//   measured) and in one whose new frames are held by a client that lets each go at once,
//   so the hold's share and Playwright's are both shown;
// - release → composer open: from the lasso's `pointerup` in the overlay to the frame
//   after the composer dialog is in the DOM with its text box focused, noted by the
//   overlay itself;
// - release → elements in the composer: to the frame after the circled elements' chips
//   are in it (this build opens the composer at release and the capture joins it; the
//   build before opened it with the chips);
// on the demo stage and on a large real-world page (tests/fixtures/pages, served from
// 127.0.0.1), a fresh tab per run, clicked once the page has settled (no request for
// 500 ms), the two builds' browsers taking turns run by run.
// Also where gesture → overlay app up went (the overlay frame's start and its own marks,
// and when the page's content module was there to take the overlay's `ready`),
// what a page loads of each build (the mount script and the content module), and the
// machine's load average. Medians and 90th percentiles.
// Requests off this machine fail in Chromium's resolver (`OFFLINE=unresolved`, the
// default), not in Playwright's routing (`OFFLINE=routed`, as the e2e tests have it),
// which passes every request of the page and the overlay through Node and so adds to the
// wait for the overlay what a person's browser does not.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:http";
import { loadavg } from "node:os";
import { join } from "node:path";
import { gzipSync } from "node:zlib";
import { drawLasso, launchBrowser, startStage } from "../e2e/harness.mjs";
import { watchComposer } from "./composer-watch.mjs";
import { launchUnheld } from "./unheld.mjs";

const RUNS = Number(process.env.RUNS ?? 10);
const OFFLINE = process.env.OFFLINE ?? "unresolved";
const BIG_PAGE = "tailwindcss.html";
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");

const builds = [
  { name: `before (${process.env.REDLINE_BEFORE_COMMIT})`, dir: process.env.REDLINE_BEFORE_EXTENSION_DIR },
  { name: "this build", dir: process.env.REDLINE_EXTENSION_DIR },
];

/** What a page loads of a build: the injected script and every module under content/. */
function pageLoads(dir) {
  const files = ["content.js", ...readdirSync(join(dir, "content")).map((f) => join("content", f))]
    .filter((f) => f.endsWith(".js") && statSync(join(dir, f)).isFile());
  const bytes = files.map((f) => readFileSync(join(dir, f)));
  const raw = bytes.reduce((sum, b) => sum + b.length, 0);
  const gzipped = bytes.reduce((sum, b) => sum + gzipSync(b, { level: 9 }).length, 0);
  return { files: files.length, raw, gzipped };
}

const pagesDir = process.env.REDLINE_FIXTURE_PAGES;
const fixtures = createServer((request, response) => {
  try {
    response.writeHead(200, { "content-type": "text/html" }).end(readFileSync(join(pagesDir, BIG_PAGE)));
  } catch {
    response.writeHead(404).end();
  }
});
await new Promise((resolve) => fixtures.listen(0, "127.0.0.1", resolve));
const stage = await startStage();
const pages = [
  { name: "demo stage", url: `${stage.url}/` },
  { name: `large page (${BIG_PAGE})`, url: `http://127.0.0.1:${fixtures.address().port}/${BIG_PAGE}` },
];

console.log(`load average at the start: ${load()}; requests off this machine ${OFFLINE}`);
for (const build of builds) {
  process.env.REDLINE_EXTENSION_DIR = build.dir;
  build.browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"], offline: OFFLINE });
  build.unheld = await launchUnheld({ grantOrigins: ["http://127.0.0.1/*"] });
  build.held = await launchUnheld({ grantOrigins: ["http://127.0.0.1/*"], hold: true });
  build.ahead = await launchUnheld({ grantOrigins: ["http://127.0.0.1/*"], enableStage: "http://127.0.0.1/*" });
  console.log(`${build.name}: ${build.ahead.enabled ? "enables the stage" : "cannot enable a stage: measured on a gesture alone"}`);
  const size = pageLoads(build.dir);
  console.log(`${build.name}: what a page loads: ${size.files} files, ${size.raw} B, ${size.gzipped} B gzipped`);
}

/** One run on a fresh tab: the click's wait for the overlay, then the release's for the composer. */
async function measure(browser, url) {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width: 1200, height: 700 });
  await page.goto(url);
  // A person clicks on a page they are looking at. Clicked at its load event, the demo
  // stage (a React app) was still rendering its first frames, and the pen's first frame
  // waited for them: 30–63 ms across runs, against 17–29 once the page had settled.
  await page.waitForLoadState("networkidle");
  await page.bringToFront();
  await page.evaluate(() => {
    new MutationObserver(() => {
      if (document.querySelector('#redline-overlay-host[data-redline-state="ready"]')) window.benchReadyAt ??= Date.now();
    }).observe(document.documentElement, { subtree: true, childList: true, attributes: true });
  });
  const clickedAt = await browser.clickAction(page);
  await page.locator('#redline-overlay-host[data-redline-state="ready"]').waitFor({ state: "attached" });
  const readyAt = await page.evaluate(() => window.benchReadyAt);
  const [penAt, contentAt] = await page.evaluate(() => ["redline:pen-ready", "redline:content-module"].map((name) => {
    const mark = performance.getEntriesByName(name)[0];
    return mark && performance.timeOrigin + mark.startTime;
  }));
  const ready = readyAt - clickedAt;
  const drawable = (penAt ?? readyAt) - clickedAt;

  const overlay = page.frames().find((f) => f.url().startsWith(browser.extensionUrl("overlay.html")));
  // Where the wait went, from the overlay's own marks (`static/overlay.js`; older builds
  // have none): its frame started, its glue imported, its module up.
  const steps = await overlay.evaluate(() => {
    const at = (name) => {
      const mark = performance.getEntriesByName(name)[0];
      return mark && performance.timeOrigin + mark.startTime;
    };
    return { frame: performance.timeOrigin, glue: at("redline:overlay-glue"), module: at("redline:overlay-module") };
  });
  await overlay.evaluate(watchComposer);
  await drawLasso(page, { x: 300, y: 150, width: 420, height: 280 }, { pace: 12.5 });
  await overlay.waitForFunction(() => window.benchCapturedAt !== undefined);
  const [composer, captured] = await overlay.evaluate(() =>
    [window.benchOpenAt - window.benchReleasedAt, window.benchCapturedAt - window.benchReleasedAt]);
  const retaken = await page.evaluate(() => performance.getEntriesByName("redline:screenshot-retaken").length);
  await page.close();
  const since = (t) => (t === undefined ? undefined : t - clickedAt);
  return {
    drawable, ready, composer, captured, retaken,
    frame: since(steps.frame), glue: since(steps.glue), module: since(steps.module), content: since(contentAt),
  };
}

const results = {};
const note = (key, times) => {
  const { retaken = 0, ...ms } = times;
  const r = (results[key] ??= { retaken: 0 });
  for (const [what, value] of Object.entries(ms)) if (value !== undefined) (r[what] ??= []).push(value);
  r.retaken += retaken;
};
for (let run = 0; run < RUNS; run++) {
  // Taking turns, the order swapped every run, so both builds and all three ways of
  // driving the browser see the same machine.
  const order = run % 2 === 0 ? builds : [...builds].reverse();
  for (const page of pages) {
    for (const build of order) {
      const ways = [
        async () => note(`${build.name}|${page.name}`, await measure(build.browser, page.url)),
        async () => note(`${build.name}|${page.name}|unheld`, await build.unheld.measure(page.url)),
        async () => note(`${build.name}|${page.name}|held`, await build.held.measure(page.url)),
        async () => note(`${build.name}|${page.name}|ahead`, await build.ahead.measure(page.url)),
      ];
      for (const way of run % 2 === 0 ? ways : ways.reverse()) await way();
    }
  }
}
console.log(`load average at the end: ${load()}; ${RUNS} runs of each`);
const cell = (xs) => `median ${quantile(xs, 0.5).toFixed(1)} ms, p90 ${quantile(xs, 0.9).toFixed(1)} ms`;
const compare = (what, key, suffix = "") => {
  const [before, now] = builds.map((b) => results[`${b.name}|${what.page}${suffix}`][key]);
  console.log(`${what.page}, ${what.label}:`);
  // A build without the mark a figure is read from has none of it.
  console.log(`  ${builds[0].name.padEnd(16)} ${before ? cell(before) : "—"}`);
  const ratio = before && now ? `  ${(quantile(now, 0.5) / quantile(before, 0.5)).toFixed(2)}× before` : "";
  console.log(`  ${builds[1].name.padEnd(16)} ${now ? cell(now) : "—"}${ratio}`);
};
const stepsOf = (r) => [
  ["overlay frame started", "frame"], ["its glue imported", "glue"], ["its module instantiated", "module"],
  ["the page's content module up", "content"], ["the app posted `ready`", "posted"], ["app up", "ready"],
  ["the app shown again after the screenshot taken ahead", "shown"],
]
  .filter(([, key]) => r[key]).map(([what, key]) => `${what} ${quantile(r[key], 0.5).toFixed(1)}`).join(", ");
for (const page of pages) {
  // What a person sees: no debugger holds the overlay's frame (`unheld.mjs`).
  compare({ page: page.name, label: "gesture → overlay app up, no DevTools hold on new frames" }, "ready", "|unheld");
  compare({ page: page.name, label: "gesture → lasso takes a stroke, no DevTools hold" }, "drawable", "|unheld");
  compare({ page: page.name, label: "gesture → overlay app up on an enabled stage (put in the page ahead), no DevTools hold" }, "ready", "|ahead");
  compare({ page: page.name, label: "gesture → overlay shown again after the screenshot ahead, on an enabled stage" }, "shown", "|ahead");
  compare({ page: page.name, label: "gesture → overlay shown again after the screenshot ahead, no DevTools hold" }, "shown", "|unheld");
  compare({ page: page.name, label: "gesture → overlay app up, new frames held and let go at once (own client)" }, "ready", "|held");
  for (const [label, key] of [
    ["gesture → lasso takes a stroke (Playwright)", "drawable"],
    ["gesture → overlay app up (Playwright, which holds each new frame while it attaches)", "ready"],
    ["release → composer open", "composer"],
    ["release → elements in the composer", "captured"],
  ]) compare({ page: page.name, label }, key);
  console.log(`${page.name}: screenshots taken again at release (the page had changed): ${results[`${builds[1].name}|${page.name}`].retaken} of ${RUNS}`);
  for (const build of builds) {
    const [unheld, held, playwright] = ["|unheld", "|held", ""].map((suffix) => quantile(results[`${build.name}|${page.name}${suffix}`].ready, 0.5));
    console.log(`${page.name}, ${build.name}: overlay app up, no hold ÷ Playwright ${(unheld / playwright).toFixed(2)}×, held at once ÷ no hold ${(held / unheld).toFixed(2)}×`);
    for (const [way, suffix] of [["no hold", "|unheld"], ["enabled stage", "|ahead"], ["held, own client", "|held"], ["Playwright", ""]]) {
      console.log(`${page.name}, ${build.name}, ${way}: gesture → ${stepsOf(results[`${build.name}|${page.name}${suffix}`])} ms (medians)`);
    }
  }
}

for (const build of builds) await Promise.all([build.browser.close(), build.unheld.close(), build.held.close(), build.ahead.close()]);
await stage.stop();
fixtures.close();

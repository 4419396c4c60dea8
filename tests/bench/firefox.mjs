// The waits a person sees, in Firefox ESR (`cargo xtask bench firefox`, also part of
// `cargo xtask bench`), measured as `instant.mjs` measures them in Chromium:
// - gesture → lasso takes a stroke: from the toolbar click (the browser's own action
//   trigger, run in its chrome context, which notes the time) to the mount script's
//   `redline:pen-ready` mark;
// - release → composer open: from the lasso's `pointerup` in the overlay to the frame
//   after the composer dialog is in the DOM with its text box focused;
// - release → elements in the composer: to the frame after the circled elements' chips
//   are in it;
// on the demo stage, a fresh tab per run, clicked once the page has loaded. Beside them,
// Chromium's same three on the same page in the same run (the anchor: both browsers on
// one machine at one time). Medians and 90th percentiles.
import { loadavg } from "node:os";
import { drawLasso as drawInChromium, launchBrowser, startStage } from "../e2e/harness.mjs";
import { drawLasso, find, launchFirefox, overlayFrame } from "../firefox/harness.mjs";
import { watchComposer } from "./composer-watch.mjs";

const RUNS = Number(process.env.RUNS ?? 10);
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const load = () => loadavg().map((l) => l.toFixed(2)).join(" ");
const LASSO = { x: 300, y: 150, width: 420, height: 280 };

const penAt = () => {
  const mark = performance.getEntriesByName("redline:pen-ready")[0];
  return mark && performance.timeOrigin + mark.startTime;
};

async function measureFirefox(firefox, url) {
  const { driver } = firefox;
  await firefox.openTab(url);
  await driver.wait(async () => (await driver.executeScript("return document.readyState")) === "complete", 20_000);
  const clickedAt = await firefox.clickAction();
  await find(driver, '#redline-overlay-host[data-redline-state="ready"]');
  const drawable = (await driver.executeScript(`return (${penAt})()`)) - clickedAt;
  await driver.switchTo().frame(await overlayFrame(driver));
  await driver.executeScript(`(${watchComposer})()`);
  await driver.switchTo().defaultContent();
  await drawLasso(driver, LASSO, 0);
  await driver.switchTo().frame(await overlayFrame(driver));
  await driver.wait(() => driver.executeScript("return window.benchCapturedAt !== undefined"), 20_000);
  const [composer, captured] = await driver.executeScript(
    "return [window.benchOpenAt - window.benchReleasedAt, window.benchCapturedAt - window.benchReleasedAt]");
  await driver.switchTo().defaultContent();
  await driver.close();
  await driver.switchTo().window((await driver.getAllWindowHandles())[0]);
  return { drawable, composer, captured };
}

async function measureChromium(browser, url) {
  const page = await browser.context.newPage();
  await page.setViewportSize({ width: 1200, height: 700 });
  await page.goto(url);
  await page.bringToFront();
  const clickedAt = await browser.clickAction(page);
  await page.locator('#redline-overlay-host[data-redline-state="ready"]').waitFor({ state: "attached" });
  const drawable = (await page.evaluate(penAt)) - clickedAt;
  const overlay = page.frames().find((f) => f.url().startsWith(browser.extensionUrl("overlay.html")));
  await overlay.evaluate(watchComposer);
  await drawInChromium(page, LASSO, { pace: 12.5 });
  await overlay.waitForFunction(() => window.benchCapturedAt !== undefined);
  const [composer, captured] = await overlay.evaluate(() =>
    [window.benchOpenAt - window.benchReleasedAt, window.benchCapturedAt - window.benchReleasedAt]);
  await page.close();
  return { drawable, composer, captured };
}

const stage = await startStage();
const url = `${stage.url}/`;
console.log(`load average at the start: ${load()}`);
const chromium = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
// The Firefox package as shipped: the zip `dist` writes (REDLINE_EXTENSION_ZIP).
const firefox = await launchFirefox({ grantOrigins: ["http://127.0.0.1/*"] });
const results = { Chromium: { drawable: [], composer: [], captured: [] }, Firefox: { drawable: [], composer: [], captured: [] } };
try {
  for (let run = 0; run < RUNS; run++) {
    for (const [name, measured] of [
      ["Firefox", await measureFirefox(firefox, url)],
      ["Chromium", await measureChromium(chromium, url)],
    ]) {
      for (const key of Object.keys(measured)) results[name][key].push(measured[key]);
    }
  }
} finally {
  await firefox.close();
  await chromium.close();
  await stage.stop();
}
console.log(`load average at the end: ${load()}; ${RUNS} runs of each`);
const cell = (xs) => `median ${quantile(xs, 0.5).toFixed(1)} ms, p90 ${quantile(xs, 0.9).toFixed(1)} ms`;
for (const [what, key] of [
  ["gesture → lasso takes a stroke", "drawable"],
  ["release → composer open", "composer"],
  ["release → elements in the composer", "captured"],
]) {
  const ratio = quantile(results.Firefox[key], 0.5) / quantile(results.Chromium[key], 0.5);
  console.log(`demo stage, ${what}:`);
  console.log(`  Chromium ${cell(results.Chromium[key])}`);
  console.log(`  Firefox  ${cell(results.Firefox[key])}  ${ratio.toFixed(2)}× Chromium`);
}

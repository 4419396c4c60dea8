// The server calls a held batch costs (`cargo xtask bench held`): five items circled and
// filed on the demo stage from one overlay, then the overlay left open until its tray says
// all five went to the agent (the default 60 s grace after the last). No side panel is
// open, so every call counted is the overlay's or the worker's; counted by the server
// itself (`/metrics`, by RPC). The tray's reads are the `getChange` calls; filing costs
// `uploadShot` and `createChange` once an item, and the worker's badge (`getSession`,
// `countChanges`) comes with its alarm whatever the tray does.
import { drawLasso, launchBrowser, prepareServer, startStage } from "../e2e/harness.mjs";

const TEST_IDS = ["orders.title", "orders.summary", "orders.export", "orders.new.customer", "orders.new.total"];
/** The default grace (60 s) after the last item, and time to spare. */
const SETTLED_TIMEOUT_MS = 150_000;

const stage = await startStage();
const server = await prepareServer({ stageUrl: stage.url, metrics: true });
await server.start();
const browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
try {
  await browser.worker.evaluate((settings) => chrome.storage.local.set({ settings }), { apiUrl: server.url, token: server.token });
  const page = await browser.context.newPage();
  await page.setViewportSize({ width: 1200, height: 700 });
  await page.goto(`${stage.url}/`);
  await page.bringToFront();
  await browser.clickAction(page);
  await page.locator('#redline-overlay-host[data-redline-state="ready"]').waitFor({ state: "attached" });
  const overlay = page.frames().find((f) => f.url().startsWith(browser.extensionUrl("overlay.html")));

  const started = Date.now();
  for (const [i, testId] of TEST_IDS.entries()) {
    await drawLasso(page, await page.getByTestId(testId).boundingBox());
    const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
    await composer.getByRole("list", { name: "Circled elements" }).getByText(testId, { exact: true }).waitFor();
    await composer.getByRole("textbox").fill(`Held batch item ${i + 1}`);
    await composer.getByRole("textbox").press("Enter");
    await composer.waitFor({ state: "detached" });
  }
  const rows = overlay.locator(".tray-item");
  await overlay.waitForFunction((n) => document.querySelectorAll(".tray-item").length === n, TEST_IDS.length);
  await overlay.waitForFunction(
    (n) => [...document.querySelectorAll(".tray-item")].filter((row) => row.textContent.includes("sent to the agent")).length === n,
    TEST_IDS.length,
    { timeout: SETTLED_TIMEOUT_MS, polling: 250 },
  );
  const seconds = ((Date.now() - started) / 1000).toFixed(0);
  const calls = await server.metrics();
  const total = Object.values(calls).reduce((sum, n) => sum + n, 0);
  console.log(`${await rows.count()} items filed and sent to the agent in ${seconds} s`);
  console.log(`server calls by RPC: ${JSON.stringify(calls)}`);
  console.log(`the tray's reads (getChange): ${calls.getChange ?? 0}; all calls: ${total}`);
} finally {
  await browser.close();
  await server.dispose();
  await stage.stop();
}

// The overlay's tray follows its batch without polling: an item is read from the server
// when the worker's published outbox lets it go and when its hold ends, so a batch whose
// hold runs out shows as sent to the agent with no Send now, in a few reads an item
// (counted by the server's /metrics).
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { drawLasso, launchBrowser, openOverlay, prepareServer, saveSignIn, startStage } from "./harness.mjs";

/** Short enough to wait out; the tray's countdown and reads are the same at 60 s. */
const GRACE_SECONDS = 8;

describe("the tray", () => {
  let stage, server, browser;

  before(async () => {
    stage = await startStage();
    server = await prepareServer({ stageUrl: stage.url, metrics: true, graceSeconds: GRACE_SECONDS });
    await server.start();
    browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
    await saveSignIn(browser.worker, { apiUrl: server.url, token: server.token });
  });

  after(async () => {
    await browser?.close();
    await server?.dispose();
    await stage?.stop();
  });

  test("a batch whose hold ends shows as sent to the agent, read a few times an item, not every second", async () => {
    const { overlay, page } = await openOverlay(browser, `${stage.url}/`);
    const titles = ["Title too big", "Summary wrong"];
    for (const [i, testId] of ["orders.title", "orders.summary"].entries()) {
      await drawLasso(page, await page.getByTestId(testId).boundingBox());
      const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
      await composer.getByRole("list", { name: "Circled elements" }).getByText(testId, { exact: true }).waitFor();
      await composer.getByRole("textbox").fill(titles[i]);
      await composer.getByRole("textbox").press("Enter");
      await composer.waitFor({ state: "detached" });
    }
    const row = (title) => overlay.locator(".tray-item", { hasText: title });
    // Both held together: filing the second holds the first until the same end.
    for (const title of titles) await row(title).getByText(/held · goes to the agent in \d+\u00a0s/).waitFor();
    for (const title of titles) await row(title).getByText("sent to the agent").waitFor({ timeout: 60_000 });
    const { getChange = 0 } = await server.metrics();
    // Once as it left the outbox, once as its hold ended; one more for a write of the
    // outbox that outran a delivery, or a hold end read before the server's clock got there.
    assert.ok(getChange >= titles.length && getChange <= 3 * titles.length, `the tray read ${getChange} times`);
    await page.close();
  });
});

// More context for the agent, end to end: on a stage whose console the person keeps, the
// page's failed requests (a 404 from the demo's own code, a refused connection, an XHR
// and an image that 404) are filed with the item, without their query strings, and each
// circled element carries its computed styles; `redline show` prints both, `--css`
// choosing how much of the styles.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { rmSync } from "node:fs";
import { createServer } from "node:net";
import { after, before, describe, test } from "node:test";
import { agentWorkspace, assertAccessible, fileCircled, openOverlay, startConnected, startStage } from "./harness.mjs";

/** An address on loopback nothing listens on: a port taken and given back. */
async function closedPortUrl() {
  const server = createServer();
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address();
  await new Promise((resolve) => server.close(resolve));
  return `http://127.0.0.1:${port}`;
}

describe("styles and failed requests", () => {
  let stage, server, browser, panel, stopAll, workspace;

  before(async () => {
    ({ stage, server, browser, panel, stop: stopAll } = await startConnected(await startStage()));
    workspace = agentWorkspace(server, "redline-e2e-context-");
  });

  after(async () => {
    await stopAll?.();
    if (workspace) rmSync(workspace.work, { recursive: true, force: true });
  });

  function show(item, ...args) {
    return execFileSync(process.env.REDLINE_BIN, ["show", item, ...args], { encoding: "utf8", env: workspace.env });
  }

  test("a circled button's changed styles and the page's failed requests reach `redline show` and the side panel", async () => {
    const first = await openOverlay(browser, `${stage.url}/`);
    await first.overlay.getByRole("button", { name: "Keep Redline ready on this stage" }).click();
    await first.overlay.getByText("From the next page load: console errors kept, and Redline opens at once.").waitFor();
    await first.page.close();

    const refused = await closedPortUrl();
    // The demo asks its missing totals API on load (a 404); a token in the page's own
    // address and in each request's must not be filed.
    const { page, overlay } = await openOverlay(browser, `${stage.url}/?live-totals&token=s3cret`);
    await page.evaluate(async (refused) => {
      await fetch(`${refused}/updates?key=s3cret`).catch(() => {});
      const xhr = new XMLHttpRequest();
      xhr.open("put", "api/orders/1042?draft=s3cret");
      await new Promise((resolve) => {
        xhr.onloadend = resolve;
        xhr.send("{}");
      });
      const image = new Image();
      image.src = "missing-logo.png?v=s3cret";
      await new Promise((resolve) => (image.onerror = resolve));
      await fetch("index.html?ok=1");
    }, refused);
    // Resource Timing reports the image to the buffer's observer a moment after it failed:
    // ask the buffer (in the page's world, as the content script does) until it has it.
    await page.waitForFunction(() => {
      let kept = "";
      const answer = (event) => (kept = event.detail);
      document.addEventListener("redline:console-errors", answer);
      document.dispatchEvent(new Event("redline:console-request"));
      document.removeEventListener("redline:console-errors", answer);
      return kept.includes("missing-logo.png");
    });

    const button = page.getByTestId("orders.export");
    const computed = await button.evaluate((b) => {
      const style = getComputedStyle(b);
      return { padding: style.padding, background: style.backgroundColor, fontSize: style.fontSize };
    });
    const filed = await fileCircled(server, { page, overlay }, await button.boundingBox(), "Export has no totals");
    assert.ok(filed, "the server has the item");
    assert.ok(!JSON.stringify(filed).includes("s3cret"), "no query string is filed");

    const origin = stage.url.replace(/\/$/, "");
    const failed = filed.capture.failedRequests;
    const expected = [
      { method: "GET", url: `${origin}/api/order-totals`, status: 404 },
      { method: "GET", url: `${refused}/updates`, status: 0 },
      { method: "PUT", url: `${origin}/api/orders/1042`, status: 404 },
      { method: "GET", url: `${origin}/missing-logo.png`, status: 404 },
    ];
    assert.deepEqual(
      [...failed].sort((a, b) => a.url.localeCompare(b.url)),
      [...expected].sort((a, b) => a.url.localeCompare(b.url)),
      "each failed request once (the stage's successful ones are not failures)",
    );

    const [element] = filed.capture.elements;
    assert.equal(element.testId, "orders.export");
    const { changed, unchanged } = element.styles;
    // The demo's CSS gives buttons their own padding and background, and `font: inherit`.
    assert.equal(changed.padding, computed.padding, "padding differs from a button's default");
    assert.equal(changed["background-color"], computed.background);
    assert.equal(unchanged["font-size"], computed.fontSize, "the font is the parent's");
    console.log(`the button's styles: ${JSON.stringify(element.styles)}`);
    assert.equal(unchanged.position, "static", "a button's default position is not a change");
    assert.equal(Object.keys(changed).length + Object.keys(unchanged).length, 14, "the whole compact set, in two halves");

    const shown = show(filed.shortId);
    console.log(`redline show ${filed.shortId}:\n${shown}`);
    const styles = shown.match(/^ {5}styles: {4}(.+)$/m)?.[1];
    assert.ok(styles, "show prints the element's styles");
    assert.ok(styles.includes(`padding: ${computed.padding.replace(/\b0px\b/g, "0")}`), styles);
    assert.ok(styles.includes("background-color: #"), styles);
    assert.ok(!styles.includes("font-size"), "what did not change is left out by default");
    for (const line of [
      `Failed requests (4):`,
      `  - GET ${origin}/api/order-totals: 404`,
      `  - GET ${refused}/updates: no response`,
      `  - PUT ${origin}/api/orders/1042: 404`,
      `  - GET ${origin}/missing-logo.png: 404`,
    ]) {
      assert.ok(shown.includes(line), `show prints ${JSON.stringify(line)}`);
    }

    const full = show(filed.shortId, "--css", "full").match(/^ {5}styles: {4}(.+)$/m)?.[1];
    assert.ok(full.includes(`font-size: ${computed.fontSize}`) && full.includes("display: "), full);
    assert.ok(!/^ {5}styles:/m.test(show(filed.shortId, "--css", "none")), "--css none prints no styles");
    await page.close();

    // The filer sees the same in the side panel.
    await panel.bringToFront();
    await panel.locator(".row-main", { hasText: "Export has no totals" }).click();
    const requests = panel.getByRole("region", { name: "Failed requests" });
    await requests.waitFor();
    const listed = (await requests.getByRole("listitem").allTextContents()).map((t) => t.replace(/\s+/g, " "));
    for (const line of [
      `GET ${origin}/api/order-totals 404`,
      `GET ${refused}/updates no response`,
      `PUT ${origin}/api/orders/1042 404`,
      `GET ${origin}/missing-logo.png 404`,
    ]) {
      assert.ok(listed.includes(line), `the panel lists ${JSON.stringify(line)} (${JSON.stringify(listed)})`);
    }
    const disclosure = panel.getByRole("region", { name: "Circled elements" }).locator("details.styles");
    await disclosure.locator("summary").click();
    const changedShown = await disclosure.locator("dl.changed").textContent();
    assert.ok(changedShown.includes("padding") && changedShown.includes(computed.padding), changedShown);
    assert.ok(!changedShown.includes("font-size"), "what did not change is not among the changes");
    assert.ok((await disclosure.locator("dl.unchanged").textContent()).includes("font-size"), "the rest is there too");
    await assertAccessible(panel, "the panel with an item's styles and failed requests");
  });
});

// Circling inside frames and closed shadow roots (demo/public/frames.html): a button in a
// frame of the stage's own origin, one in a frame of another origin the person granted,
// one in a closed shadow root, each filed with the right element and a CSS path that
// "Show on page" follows back to it; and a frame of an origin not granted, filed as the
// frame element with the composer saying why.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { after, before, describe, test } from "node:test";
import { drawLasso, launchBrowser, openConnectedPanel, openOverlay, prepareServer, startStage, watchErrors } from "./harness.mjs";

const VIEWPORT = { width: 1200, height: 700 };
const FRAME_SEPARATOR = " |> ";
const axeSource = readFileSync(createRequire(import.meta.url).resolve("axe-core/axe.min.js"), "utf8");

describe("frames and closed shadow roots", () => {
  let stage, server, browser, page, overlay, errors;

  before(async () => {
    stage = await startStage();
    server = await prepareServer({ stageUrl: stage.url });
    await server.start();
    // The person granted the stage's site and `localhost`, not `elsewhere.localhost`.
    browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*", "http://localhost/*"] });
    await openConnectedPanel(browser, server);
    ({ page, overlay } = await openOverlay(browser, `${stage.url}/frames.html`, VIEWPORT));
    errors = watchErrors(page);
    // Every frame has loaded its button.
    for (const [frame, label] of [["#same-origin", "Pay here"], ["#granted", "Pay granted"], ["#not-granted", "Pay elsewhere"]]) {
      await page.frameLocator(frame).getByRole("button", { name: label }).waitFor();
    }
  });

  after(async () => {
    await browser?.close();
    await server?.dispose();
    await stage?.stop();
  });

  /** Circles `box` (top viewport), files it as `title` and resolves with the item the server got. */
  async function fileAround(box, title, { beforeFiling } = {}) {
    await drawLasso(page, box, { margin: 8 });
    const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
    await composer.waitFor();
    await beforeFiling?.(composer);
    await composer.getByRole("textbox").fill(title);
    await composer.getByRole("textbox").press("Enter");
    await composer.waitFor({ state: "detached" });
    for (let i = 0; i < 100; i++) {
      const filed = await server.itemTitled(title);
      if (filed) return filed;
      await page.waitForTimeout(100);
    }
    assert.fail(`the server never got "${title}"`);
  }

  /** "Show on page" for `elements` as the panel asks the worker; resolves with what it found. */
  async function showOnPage(elements) {
    await page.bringToFront();
    const reply = await overlay.evaluate((elements) => chrome.runtime.sendMessage({ kind: "showOnPage", elements }), elements);
    assert.ok(reply.Ok, JSON.stringify(reply));
    return reply.Ok;
  }

  /** The outlines "Show on page" drew in `frame` (the page, or a frame of it). */
  async function outlines(frame) {
    const host = frame.locator("#redline-show-host");
    await host.waitFor({ state: "attached" });
    return JSON.parse(await host.getAttribute("data-redline-boxes"));
  }

  /**
   * Where `button` in frame `frameId` shows in the top viewport: the frame's content box
   * (inside border and padding) plus the button's box in the frame. (Playwright's own
   * box for an element in a frame of another origin came out 6 px, this frame's border
   * and padding, to the left of that; for a frame of the stage's origin, measured in one
   * process, the two agree, which this checks.)
   */
  async function inTopViewport(frameId, button) {
    const content = await page.locator(frameId).evaluate((f) => {
      const r = f.getBoundingClientRect();
      const style = getComputedStyle(f);
      return { x: r.x + f.clientLeft + parseFloat(style.paddingLeft), y: r.y + f.clientTop + parseFloat(style.paddingTop) };
    });
    const inner = await button.evaluate((b) => b.getBoundingClientRect().toJSON());
    const box = { x: content.x + inner.x, y: content.y + inner.y, width: inner.width, height: inner.height };
    if (frameId === "#same-origin") assertNear(box, await button.boundingBox(), "Chromium's own box agrees:");
    return box;
  }

  function assertNear(actual, expected, what) {
    for (const key of ["x", "y", "width", "height"]) {
      assert.ok(Math.abs(actual[key] - expected[key]) < 1.5, `${what} ${key}: ${actual[key]} vs ${expected[key]}`);
    }
  }

  /** Only the element's CSS path: what finds it must be the path. */
  const byPath = (element) => [{ cssPath: element.cssPath, tag: element.tag }];

  // The outline is drawn in the top page over a frame of the stage's origin, and inside
  // a frame of another origin (the top page cannot read where its button is).
  for (const [name, frameId, label, outlinedIn] of [
    ["the stage's own origin", "#same-origin", "Pay here", () => page],
    ["another origin the person granted", "#granted", "Pay granted", () => page.frames().find((f) => f.url().startsWith("http://localhost:"))],
  ]) {
    test(`a button in a frame of ${name}`, async () => {
      const button = page.frameLocator(frameId).getByRole("button", { name: label });
      const box = await inTopViewport(frameId, button);
      const filed = await fileAround(box, `${label} button`);
      const [element, ...others] = filed.capture.elements;
      assert.deepEqual(others, [], "only the button was circled");
      assert.equal(element.tag, "button");
      assert.equal(element.name, label);
      assert.ok(element.cssPath.startsWith(`${frameId}${FRAME_SEPARATOR}`), element.cssPath);
      assertNear(element.rect, box, "the rect is in the top viewport:");

      const located = await showOnPage(byPath(element));
      assert.deepEqual(located.map((l) => [l.matchedBy, l.count]), [["cssPath", 1]]);
      const frame = outlinedIn();
      const [outline] = await outlines(frame);
      const expected = frame === page ? box : await frame.locator("button.pay").evaluate((b) => b.getBoundingClientRect().toJSON());
      assertNear(outline, expected, "the outline");
    });
  }

  test("a button in a closed shadow root files its host", async () => {
    const host = await page.locator("closed-widget").boundingBox();
    // The button sits 40 px into the widget; the test cannot see inside either.
    const filed = await fileAround({ x: host.x + 42, y: host.y + 42, width: 110, height: 24 }, "Closed widget button");
    const [element, ...others] = filed.capture.elements;
    assert.deepEqual(others, [], "only the host was filed");
    assert.equal(element.tag, "closed-widget");
    assertNear(element.rect, host, "the host's rect");

    const located = await showOnPage(byPath(element));
    assert.deepEqual(located.map((l) => [l.matchedBy, l.count]), [["cssPath", 1]]);
    const [outline] = await outlines(page);
    assertNear(outline, host, "the outline");
  });

  test("a frame of an origin not granted files the frame, and the composer says why", async () => {
    const frame = await page.locator("#not-granted").boundingBox();
    const button = await page.frameLocator("#not-granted").getByRole("button", { name: "Pay elsewhere" }).boundingBox();
    const origin = stage.url.replace("127.0.0.1", "elsewhere.localhost");
    const filed = await fileAround(button, "Ungranted widget", {
      async beforeFiling(composer) {
        await composer.getByRole("note").getByText(origin).waitFor();
        assert.match(await composer.getByRole("note").innerText(), /could not look inside the frame from .*: it has no access to that site/);
        if (!(await overlay.evaluate(() => "axe" in window))) await overlay.evaluate(axeSource);
        const violations = await overlay.evaluate(async () => {
          const { violations } = await window.axe.run(document, { resultTypes: ["violations"] });
          return violations.map((v) => `${v.id}: ${v.help} (${v.nodes.map((n) => n.target.join(" ")).join(", ")})`);
        });
        assert.deepEqual(violations, [], "axe-core finds no violations in the composer");
      },
    });
    const [element, ...others] = filed.capture.elements;
    assert.deepEqual(others, [], "only the frame was filed");
    assert.equal(element.tag, "iframe");
    assert.equal(element.cssPath, "#not-granted");
    assertNear(element.rect, frame, "the frame's rect");
    assert.deepEqual(errors, []);
  });
});

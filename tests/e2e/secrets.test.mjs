// Capture keeps secrets (issue #37), end to end on the demo stage: in the screenshot
// filed, a card field inside a closed shadow root is black as one in an open root is,
// and a frame of another origin (a payment form Redline cannot read) is black whole,
// while a frame of the stage's own origin shows; console errors that print a request's
// `Authorization` header or a JSON web token are filed with those scrubbed.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { drawLasso, openOverlay, startConnected, startStage, watchErrors } from "./harness.mjs";

const VIEWPORT = { width: 1200, height: 700 };
const JWT = "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiJhbm4iLCJleHAiOjE3OTk5OTk5OTl9.Xq3hZ2uVb8mR1sKp0tYw4nLc7aEeDfGh9iJkOlMnPq";
const BEARER = "s3cr3tAccessT0ken-4f9a";
const BASIC = "YW5uOmNvcnJlY3QgaG9yc2U=";

describe("capture keeps secrets", () => {
  let stage, server, browser, panel, stopAll;

  before(async () => {
    ({ stage, server, browser, panel, stop: stopAll } = await startConnected(await startStage()));
  });

  after(async () => {
    await stopAll?.();
  });

  /** Circles `box`, files it as `title` and resolves with the item once the server has it (and its screenshot, if `shot`). */
  async function fileAround(page, overlay, box, title, { shot = false } = {}) {
    await drawLasso(page, box);
    const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
    await composer.getByRole("textbox").fill(title);
    await composer.getByRole("textbox").press("Enter");
    await composer.waitFor({ state: "detached" });
    for (let i = 0; i < 150; i++) {
      const filed = await server.itemTitled(title);
      if (filed && (!shot || filed.screenshotKey)) return filed;
      await page.waitForTimeout(100);
    }
    assert.fail(`the server never got "${title}"`);
  }

  /** The brightest channel of the stored screenshot `url` inside each of `rects` (CSS px, each 4 px in from its edges). */
  function brightestIn(url, rects) {
    return panel.evaluate(async ({ url, rects }) => {
      const image = new Image();
      image.src = url;
      await image.decode();
      const canvas = new OffscreenCanvas(image.naturalWidth, image.naturalHeight);
      const context = canvas.getContext("2d");
      context.drawImage(image, 0, 0);
      return rects.map((r) => {
        const data = context.getImageData(Math.round(r.x) + 4, Math.round(r.y) + 4, Math.round(r.width) - 8, Math.round(r.height) - 8).data;
        let max = 0;
        for (let i = 0; i < data.length; i += 4) max = Math.max(max, data[i], data[i + 1], data[i + 2]);
        return max;
      });
    }, { url, rects });
  }

  test("a closed shadow root's card field and a frame of another origin are black in the stored screenshot", async () => {
    const otherOrigin = stage.url.replace("127.0.0.1", "elsewhere.localhost");
    // What the masks set inline, and what the page had there: read before the gesture,
    // since the overlay takes a screenshot ahead of the stroke as soon as it is up, and
    // the masks are on while that screenshot is taken.
    const styles = (page) => page.evaluate(() =>
      [window.payFormRoot.querySelector("input"), document.getElementById("card-frame")].map((e) => [e.style.filter, e.style.backgroundColor]),
    );
    let before;
    const { page, overlay } = await openOverlay(browser, `${stage.url}/`, VIEWPORT, {
      beforeClick: async (page) => {
        await page.evaluate((otherOrigin) => {
          const frame = "display: block; width: 360px; height: 160px; border: 0; margin: 20px";
          document.body.innerHTML = `
            <h1 style="margin: 20px; font: 32px system-ui">Checkout</h1>
            <pay-form style="display: block; width: 420px; margin: 20px"></pay-form>
            <iframe id="card-frame" title="Card, another site" style="${frame}" src="${otherOrigin}/frame-button.html?label=Pay+elsewhere"></iframe>
            <iframe id="own-frame" title="This site" style="${frame}" src="/frame-button.html?label=Pay+here"></iframe>`;
          // A widget whose insides neither the page's other scripts nor the test can
          // reach but through the handle its author keeps.
          const root = document.querySelector("pay-form").attachShadow({ mode: "closed" });
          root.innerHTML = `<p style="font: 28px system-ui; margin: 0 0 8px">Card details</p>
            <input autocomplete="cc-number" value="4242 4242 4242 4242" style="display: block; width: 320px; height: 44px; font-size: 28px; background: white; color: black">`;
          window.payFormRoot = root;
        }, otherOrigin);
        for (const [frame, label] of [["#card-frame", "Pay elsewhere"], ["#own-frame", "Pay here"]]) {
          await page.frameLocator(frame).getByRole("button", { name: label }).waitFor();
        }
        before = await styles(page);
      },
    });
    const errors = watchErrors(page);

    const heading = await page.getByRole("heading", { name: "Checkout" }).boundingBox();
    const filed = await fileAround(page, overlay, heading, "Checkout heading", { shot: true });
    const rects = await page.evaluate(() => {
      const box = (e) => e.getBoundingClientRect().toJSON();
      return {
        field: box(window.payFormRoot.querySelector("input")),
        label: box(window.payFormRoot.querySelector("p")),
        cardFrame: box(document.getElementById("card-frame")),
        ownFrame: box(document.getElementById("own-frame")),
      };
    });
    const { change } = await server.rpc("getChange", { changeId: filed.changeId });
    const [field, label, cardFrame, ownFrame] = await brightestIn(change.screenshotUrl, [rects.field, rects.label, rects.cardFrame, rects.ownFrame]);
    assert.ok(field < 40, `the card field in the closed shadow root is black (brightest channel ${field})`);
    assert.ok(cardFrame < 40, `the frame of another origin is black whole (brightest channel ${cardFrame})`);
    // Chrome opens the closed root, so only its field is masked, not the whole widget;
    // a frame of the stage's origin is read and shows as before.
    assert.ok(label > 200, `the closed root's label shows (brightest channel ${label})`);
    assert.ok(ownFrame > 200, `the frame of the stage's own origin shows (brightest channel ${ownFrame})`);
    // Restored once the screenshot the overlay takes ahead of the next stroke is taken.
    let now = await styles(page);
    for (let i = 0; i < 50 && JSON.stringify(now) !== JSON.stringify(before); i++) {
      await page.waitForTimeout(100);
      now = await styles(page);
    }
    assert.deepEqual(now, before, "the page is restored");
    assert.equal(await page.evaluate(() => window.payFormRoot.querySelector("input").value), "4242 4242 4242 4242");
    assert.deepEqual(errors, []);
    await page.close();
  });

  test("console errors printing an Authorization header or a JSON web token are filed scrubbed", async () => {
    const first = await openOverlay(browser, `${stage.url}/`);
    await first.overlay.getByRole("button", { name: "Keep Redline ready on this stage" }).click();
    await first.overlay.getByText("From the next page load: console errors kept, and Redline opens at once.").waitFor();
    await first.page.close();

    const { page, overlay } = await openOverlay(browser, `${stage.url}/`);
    await page.evaluate(({ JWT, BEARER, BASIC }) => {
      // As a page's own code logs a failed request, a token and a header it read.
      console.error("request failed", { url: "/api/orders", headers: { Authorization: `Bearer ${BEARER}`, Accept: "application/json" } });
      console.error(new Error(`session ${JWT} has expired`));
      console.error(`retrying with Authorization: Basic ${BASIC}`);
    }, { JWT, BEARER, BASIC });
    const box = await page.getByTestId("orders.export").boundingBox();
    const filed = await fileAround(page, overlay, box, "Export fails after sign-in");

    const errors = filed.consoleErrors;
    const [request, session, retry] = ["request failed", "Error: session", "retrying with"].map((start) => errors.find((e) => e.startsWith(start)));
    assert.equal(request, 'request failed {"url":"/api/orders","headers":{"Authorization":"Bearer [redacted]","Accept":"application/json"}}');
    assert.equal(session, "Error: session [redacted] has expired");
    assert.equal(retry, "retrying with Authorization: Basic [redacted]");
    const stored = JSON.stringify(filed);
    for (const secret of [BEARER, BASIC, JWT.split(".")[1], JWT.split(".")[2]]) {
      assert.ok(!stored.includes(secret), `"${secret}" was filed: ${errors.join("\n")}`);
    }
    await page.close();
  });
});

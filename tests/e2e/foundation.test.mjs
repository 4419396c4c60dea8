// The foundation works end to end: the worker answers from Rust, the panel reaches the
// server (its token kept out of storage.local, and moved out of it after an upgrade), and
// the overlay mounts on a stage, also under a strict CSP, and leaves on Esc.
import assert from "node:assert/strict";
import { after, before, describe, test } from "node:test";
import { launchBrowser, startServer, startStage, storedSignIn, watchErrors } from "./harness.mjs";

const HOST = "#redline-overlay-host";

describe("the extension's foundation", () => {
  let stage, server, browser, panel;

  before(async () => {
    stage = await startStage();
    server = await startServer({ stageUrl: stage.url });
    browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
    panel = await browser.context.newPage();
    await panel.goto(browser.extensionUrl("panel.html"));
  });

  after(async () => {
    await browser?.close();
    await server?.dispose();
    await stage?.stop();
  });

  test("the worker answers from Rust, and refuses a message that is not Redline's", async () => {
    const reply = await panel.evaluate(() => chrome.runtime.sendMessage({ kind: "selfDestruct" }));
    assert.deepEqual(reply, { Err: { error: "notACall", message: "no call of kind selfDestruct" } });
    const unshaped = await panel.evaluate(() => chrome.runtime.sendMessage({ kind: "enableStage" }));
    assert.equal(unshaped.Err?.error, "notACall", JSON.stringify(unshaped));
  });

  test("the panel says what to do before it is set up", async () => {
    await panel.getByTestId("connection-status").getByText("Not set up yet").waitFor();
  });

  test("a wrong token shows as signed out, the right one as connected", async () => {
    const errors = watchErrors(panel);
    const save = async (token) => {
      await panel.getByRole("button", { name: "Settings" }).click();
      await panel.locator("#api-url").fill(server.url);
      await panel.locator("#token").fill(token);
      await panel.getByRole("button", { name: "Save" }).click();
    };
    await save("rl_not_a_real_token");
    await panel.getByTestId("connection-status").getByText("Signed out").waitFor();

    await save(server.token);
    await panel.getByTestId("connection-status").getByText("Connected as").waitFor();
    assert.deepEqual(await storedSignIn(panel), { apiUrl: server.url, token: server.token });
    // What storage.local holds (and a content script could read in Firefox) is only that a sign-in was saved.
    const local = await panel.evaluate(() => chrome.storage.local.get(null));
    assert.ok(!JSON.stringify(local).includes(server.token), "no token in storage.local");
    assert.equal(local.signedIn.apiUrl, server.url);

    await panel.reload();
    await panel.getByTestId("connection-status").getByText("Connected as").waitFor();
    assert.deepEqual(errors.filter((e) => !/401/.test(e)), []);
  });

  test("a token an earlier version kept in storage.local is moved out of it at the next start", async () => {
    // What an earlier version left: the settings in storage.local, no sign-in database.
    await panel.evaluate(async (legacy) => {
      await new Promise((resolve, reject) => {
        const deleting = indexedDB.deleteDatabase("redline-sign-in");
        deleting.onsuccess = resolve;
        deleting.onerror = () => reject(deleting.error);
      });
      await chrome.storage.local.set({ settings: legacy });
    }, { apiUrl: server.url, token: server.token });
    browser = await browser.restart();
    // The worker moves it at its start, before any page asks.
    const legacyLeft = () => browser.worker.evaluate(() => chrome.storage.local.get("settings").then((items) => "settings" in items));
    for (let i = 0; i < 100 && (await legacyLeft()); i++) await new Promise((resolve) => setTimeout(resolve, 100));
    assert.equal(await legacyLeft(), false, "removed from storage.local");
    assert.deepEqual(await storedSignIn(browser.worker), { apiUrl: server.url, token: server.token });
    panel = await browser.context.newPage();
    await panel.goto(browser.extensionUrl("panel.html"));
    await panel.getByTestId("connection-status").getByText("Connected as").waitFor();
  });

  test("settings refuse plain http to another machine and keep what was typed", async () => {
    await panel.getByRole("button", { name: "Settings" }).click();
    await panel.locator("#api-url").fill("http://192.0.2.10:7878");
    await panel.locator("#token").fill("rl_x");
    await panel.getByRole("button", { name: "Save" }).click();
    await panel.getByRole("alert").getByText("in clear").waitFor();
    assert.equal(await panel.locator("#api-url").inputValue(), "http://192.0.2.10:7878");
    await panel.getByRole("button", { name: "Settings" }).click();
  });

  for (const [name, path, csp] of [
    ["a plain stage", "/", undefined],
    ["a stage with a strict CSP", "/strict/", "default-src 'self'; script-src 'self'"],
  ]) {
    test(`the panel's Circle button mounts the overlay on ${name}; Esc removes it`, async () => {
      const page = await browser.context.newPage();
      const errors = watchErrors(page);
      const response = await page.goto(`${stage.url}${path}`);
      assert.equal(response.headers()["content-security-policy"], csp);
      await page.bringToFront();

      const started = performance.now();
      await panel.getByRole("button", { name: "Circle" }).click();
      await page.locator(`${HOST}[data-redline-state="ready"]`).waitFor({ state: "attached" });
      const readyMs = performance.now() - started;
      console.log(`overlay ready on ${name} ${readyMs.toFixed(0)} ms after the click`);

      const overlay = page.frames().find((f) => f.url().startsWith(browser.extensionUrl("overlay.html")));
      assert.ok(overlay, "the overlay frame is an extension page");
      await overlay.getByText("Circle what is wrong").waitFor();

      // A second gesture keeps the one overlay rather than stacking another. The button is
      // disabled until the worker answers, which it does once the mount script has run in
      // the tab: the count is taken after that.
      const circle = panel.getByRole("button", { name: "Circle" });
      const answered = circle.evaluate(
        (button) =>
          new Promise((resolve) => {
            new MutationObserver((_, observer) => {
              if (!button.disabled) {
                observer.disconnect();
                resolve();
              }
            }).observe(button, { attributes: true, attributeFilter: ["disabled"] });
          }),
      );
      await circle.click();
      await answered;
      assert.equal(await page.locator(HOST).count(), 1);

      // Esc goes to the overlay's frame, which has focus. Its key-up is sent only once the
      // frame is gone: Chromium never acknowledges a key event sent to a frame that is
      // being torn down, so a press (down and up at once) can leave the driver waiting.
      await page.bringToFront();
      await page.keyboard.down("Escape");
      await page.locator(HOST).waitFor({ state: "detached" });
      await page.keyboard.up("Escape");
      assert.deepEqual(errors, []);
      await page.close();
    });
  }

  test("a page cannot find Redline at its fixed address, and the overlay still mounts there", async () => {
    const page = await browser.context.newPage();
    await page.goto(`${stage.url}/`);
    await page.bringToFront();
    await browser.clickAction(page);
    await page.locator(`${HOST}[data-redline-state="ready"]`).waitFor({ state: "attached" });
    const overlay = page.frames().find((f) => f.url().startsWith(browser.extensionUrl("overlay.html")));
    await overlay.getByText("Circle what is wrong").waitFor();
    // Shown again once the screenshot taken ahead of the stroke is done.
    await page.waitForFunction((selector) => getComputedStyle(document.querySelector(selector)).opacity === "1", HOST);
    const host = await page.evaluate((selector) => {
      const element = document.querySelector(selector);
      const style = getComputedStyle(element);
      return { position: style.position, zIndex: style.zIndex, shadowRoot: element.shadowRoot };
    }, HOST);
    assert.deepEqual(host, { position: "fixed", zIndex: "2147483647", shadowRoot: null }, "over the page, its shadow root closed to it");

    // Every web-accessible file is served only at this session's random address
    // (`use_dynamic_url`): at the extension's fixed address a page gets nothing, so it
    // cannot tell that Redline is installed, nor frame the overlay.
    const reached = await page.evaluate(async (base) => {
      const found = [];
      for (const path of ["overlay.html", "content/content.js", "content.js"]) {
        try {
          await fetch(`${base}/${path}`);
          found.push(path);
        } catch {
          // refused, as it should be
        }
      }
      return found;
    }, `chrome-extension://${browser.extensionId}`);
    assert.deepEqual(reached, [], "nothing is reachable at the fixed address");
    await page.close();
  });

  test("the toolbar button mounts the overlay; Esc pressed in the page removes it", async () => {
    const page = await browser.context.newPage();
    await page.goto(`${stage.url}/strict/`);
    await page.bringToFront();
    await browser.clickAction(page);
    await page.locator(`${HOST}[data-redline-state="ready"]`).waitFor({ state: "attached" });
    await page.getByTestId("orders.search").focus();
    await page.keyboard.press("Escape");
    await page.locator(HOST).waitFor({ state: "detached" });
    await page.close();
  });
});

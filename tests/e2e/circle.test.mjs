// Circle and file, end to end: the toolbar button (a real gesture) opens the overlay on
// the demo stage, Playwright draws a lasso, the filer types and presses Enter, and the
// server then holds one item with what was circled, the page's context and a screenshot.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import { mkdtempSync, rmSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { assertAccessible, drawLasso, openOverlay, startConnected, startStage, watchErrors } from "./harness.mjs";

const VIEWPORT = { width: 1200, height: 700 };
/** What one arrow key moves or resizes a hidden area by, in CSS px (`redact::STEP`). */
const STEP = 8;
/** The context the composer's crop keeps around the circle, in CSS px (`ui/shot.rs`). */
const CROP_MARGIN = 48;

const right = (r) => r.x + r.width;
const bottom = (r) => r.y + r.height;
const inflate = (r, by) => ({ x: r.x - by, y: r.y - by, width: r.width + 2 * by, height: r.height + 2 * by });
const overlaps = (a, b) => a.x < right(b) && b.x < right(a) && a.y < bottom(b) && b.y < bottom(a);
const covers = (outer, inner) => outer.x <= inner.x && outer.y <= inner.y && right(outer) >= right(inner) && bottom(outer) >= bottom(inner);

describe("circle and file", () => {
  let stage, server, browser, panel, stopAll, sha;
  const agentHome = mkdtempSync(join(tmpdir(), "redline-e2e-agent-"));

  before(async () => {
    ({ stage, server, browser, panel, stop: stopAll } = await startConnected(await startStage()));
  });

  after(async () => {
    await stopAll?.();
    rmSync(agentHome, { recursive: true, force: true });
  });

  /** Opens the stage at `path` and starts circling from the toolbar button. */
  async function openStage(path, options) {
    const opened = await openOverlay(browser, `${stage.url}${path}`, VIEWPORT, options);
    sha = await opened.page.locator('meta[name="fabric-git-sha"]').getAttribute("content");
    return opened;
  }

  async function fileAround(page, overlay, testId, text) {
    await drawLasso(page, await page.getByTestId(testId).boundingBox());
    const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
    await composer.waitFor();
    // The chip names the element caught by its test id (src/rules/chip.rs).
    await composer.getByRole("list", { name: "Circled elements" }).getByText(testId, { exact: true }).waitFor();
    await composer.getByRole("textbox").fill(text);
    await composer.getByRole("textbox").press("Enter");
    await composer.waitFor({ state: "detached" });
  }

  /** `redline show` as an agent runs it, signed in by environment, with a home of its own. */
  function agentShow(item) {
    return execFileSync(process.env.REDLINE_BIN, ["show", "--change-id", item], {
      encoding: "utf8",
      env: { PATH: process.env.PATH, HOME: agentHome, TZ: "UTC", REDLINE_API_URL: server.url, REDLINE_TOKEN: server.token },
    });
  }

  async function changes() {
    return server.items();
  }

  /** The item titled `title` once the server has it (the outbox delivers it shortly). */
  async function filedAs(page, title) {
    for (let i = 0; i < 100; i++) {
      const filed = await server.itemTitled(title);
      if (filed) return filed;
      await page.waitForTimeout(100);
    }
  }

  /** The item titled `title` once the server has it and its screenshot. */
  async function filedWithScreenshot(page, title) {
    for (let i = 0; i < 100; i++) {
      const filed = await server.itemTitled(title);
      if (filed?.screenshotKey) return filed;
      await page.waitForTimeout(100);
    }
  }

  /**
   * Measures each of `rects` (CSS px; the tests' pages are at ratio 1) in the image at
   * `url`, read in the panel: its brightest channel, the brightest in `reference` (an
   * image of the page as it looked), and the mean difference per channel between them.
   */
  function measurePixels(url, rects, reference = url) {
    return panel.evaluate(async ({ url, reference, rects }) => {
      const pixelsOf = async (src) => {
        const image = new Image();
        image.src = src;
        await image.decode();
        const canvas = new OffscreenCanvas(image.naturalWidth, image.naturalHeight);
        const context = canvas.getContext("2d");
        context.drawImage(image, 0, 0);
        return context;
      };
      const [stored, page] = await Promise.all([pixelsOf(url), pixelsOf(reference)]);
      return rects.map((r) => {
        const area = [Math.round(r.x), Math.round(r.y), Math.round(r.width), Math.round(r.height)];
        const a = stored.getImageData(...area).data;
        const b = page.getImageData(...area).data;
        let max = 0, referenceMax = 0, difference = 0;
        for (let i = 0; i < a.length; i += 4) {
          for (let c = 0; c < 3; c++) {
            max = Math.max(max, a[i + c]);
            referenceMax = Math.max(referenceMax, b[i + c]);
            difference += Math.abs(a[i + c] - b[i + c]);
          }
        }
        return { max, referenceMax, meanDifference: difference / ((a.length / 4) * 3) };
      });
    }, { url, reference, rects });
  }

  for (const [name, path] of [["the demo stage", "/"], ["the demo stage under a strict CSP", "/strict/"]]) {
    test(`a lasso on ${name} files one item with what was circled`, async () => {
      const { page, overlay } = await openStage(path);
      const errors = watchErrors(page);
      const before = (await changes()).length;
      await fileAround(page, overlay, "orders.export", "Export is cramped\nIt touches the search box.");

      await overlay.getByText("This batch").waitFor();
      let filed;
      for (let i = 0; i < 100 && !filed; i++) {
        filed = (await changes()).find((c) => c.title === "Export is cramped" && c.route === path);
        if (!filed) await page.waitForTimeout(100);
      }
      assert.ok(filed, "the server has the item");
      assert.equal((await changes()).length, before + 1, "exactly one item was filed");
      assert.equal(filed.body, "It touches the search box.");
      assert.equal(filed.held, true);
      assert.equal(filed.gitSha, sha);
      assert.deepEqual(filed.viewport, VIEWPORT);
      assert.equal(filed.source, "extension");

      const [element, ...others] = filed.capture.elements;
      assert.deepEqual(others, [], "only the button was circled");
      assert.equal(element.testId, "orders.export");
      assert.equal(element.componentTestId, "order-toolbar");
      assert.equal(element.sourceAnchor, await page.getByTestId("orders.export").getAttribute("data-fabric-src"));
      assert.equal(element.tag, "button");
      assert.equal(element.role, "button");
      assert.equal(element.name, "Export CSV");
      assert.equal(element.text, "Export CSV");
      const matches = await page.evaluate((path) => [...document.querySelectorAll(path)].map((e) => e.dataset.testid), element.cssPath);
      assert.deepEqual(matches, ["orders.export"], `cssPath ${element.cssPath} finds the button alone`);
      assert.ok(filed.capture.stroke.length >= 3);
      assert.equal(filed.capture.devicePixelRatio, 1);

      const { change } = await server.rpc("getChange", { changeId: filed.changeId });
      assert.ok(change.screenshotUrl, "the item has a screenshot");
      const size = await panel.evaluate(async (url) => {
        const image = new Image();
        image.src = url;
        await image.decode();
        return { width: image.naturalWidth, height: image.naturalHeight };
      }, change.screenshotUrl);
      assert.deepEqual(size, VIEWPORT, "the screenshot is the whole viewport at the page's pixel ratio");

      // What the agent reads of the same item, as `redline show` prints it.
      const shown = agentShow(filed.shortId);
      console.log(`redline show --change-id ${filed.shortId}, for this item:\n${shown}`);
      for (const line of [
        "#" + filed.shortId + " Export is cramped",
        "It touches the search box.",
        "test id:   orders.export",
        "component: order-toolbar",
        `source:    ${element.sourceAnchor} as of ${sha.slice(0, 7)}`,
        `css:       ${element.cssPath}`,
        'text:      "Export CSV"',
        `rect:      x ${Math.round(element.rect.x)} y ${Math.round(element.rect.y)}, ${Math.round(element.rect.width)}x${Math.round(element.rect.height)}`,
      ]) {
        assert.ok(shown.includes(line), `show prints ${JSON.stringify(line)}`);
      }
      const screenshot = shown.match(/^Screenshot: (.+)$/m)?.[1];
      assert.ok(screenshot && statSync(screenshot).size > 1000, "the screenshot is saved where show says");
      assert.deepEqual(errors, []);
      await page.close();
    });
  }

  test("a stroke drawn before the overlay app is up is taken and filed with what it circled", async () => {
    // The press races the overlay app's start, which on a quiet machine can win in the
    // few milliseconds between the pen's mark and the press: a try the app won shows
    // nothing about the pen, so it is tried again on a new tab (the pen must win one).
    let page, box, errors;
    const seen = [];
    for (let attempt = 1; ; attempt++) {
      page = await browser.context.newPage();
      await page.setViewportSize(VIEWPORT);
      await page.goto(`${stage.url}/strict/`);
      await page.bringToFront();
      errors = watchErrors(page);
      box = await page.getByTestId("orders.export").boundingBox();
      // What the overlay's host says when the stroke's press reaches the page: the pen
      // takes it there, while the overlay app loads (once that is up, a press goes to its
      // frame). Read in the page as the press arrives: a call from here takes a turn of
      // the page's thread, which the content module's import holds meanwhile.
      await page.evaluate(() => addEventListener("pointerdown", () => {
        window.stateAtPress ??= document.getElementById("redline-overlay-host")?.getAttribute("data-redline-state");
      }, true));
      await browser.clickAction(page);
      // The mount script marks when its pen takes input; the overlay app loads behind it.
      await page.waitForFunction(() => performance.getEntriesByName("redline:pen-ready").length > 0);
      await drawLasso(page, box);
      const stateAtPress = await page.evaluate(() => window.stateAtPress);
      if (stateAtPress === "loading") break;
      // Else the app was up: its frame took the press (the page saw none) or the host
      // said "ready".
      seen.push(stateAtPress ?? "the press went to the overlay's frame");
      await page.close();
      assert.ok(attempt < 5, `in 5 tries the stroke never began before the overlay app was up: ${seen.join("; ")}`);
    }

    await page.locator('#redline-overlay-host[data-redline-state="ready"]').waitFor({ state: "attached" });
    const overlay = page.frames().find((f) => f.url().startsWith(browser.extensionUrl("overlay.html")));
    const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
    await composer.waitFor();
    await composer.getByRole("textbox").fill("Drawn at once");
    await composer.getByRole("textbox").press("Enter");
    await composer.waitFor({ state: "detached" });
    const filed = await filedAs(page, "Drawn at once");
    assert.ok(filed, "the server has the item");
    assert.deepEqual(filed.capture.elements.map((e) => e.testId), ["orders.export"]);
    const { x, y } = filed.capture.bounds;
    assert.ok(x < box.x && y < box.y, "the outline is the stroke drawn around the button");
    assert.deepEqual(errors, []);
    await page.close();
  });

  test("the composer opens at release; words filed before the capture arrives go with it", async () => {
    // The page is busy when the release reaches it: a listener of its own, added before
    // the content script's and so run first, holds its thread.
    const { page, overlay } = await openStage("/", {
      beforeClick: (page) => page.evaluate(() => {
        addEventListener("message", (event) => {
          if (event.data?.type !== "redline:circled") return;
          const until = Date.now() + 1500;
          while (Date.now() < until);
          window.busyUntil = until;
        }, true);
      }),
    });
    const errors = watchErrors(page);
    // The filer types and presses Enter right after the release, in the overlay (whose
    // own process the busy page does not hold up), before the capture can have come.
    await overlay.evaluate(() => {
      new MutationObserver(() => {
        if (document.querySelector('[aria-label="Circled elements"]')) window.capturedAt ??= Date.now();
      }).observe(document.body, { subtree: true, childList: true });
      addEventListener("pointerup", () => setTimeout(() => {
        const composer = document.querySelector('[role="dialog"]');
        window.statusAtFiling = composer?.querySelector('[role="status"]')?.textContent ?? null;
        const textbox = composer.querySelector("textarea");
        textbox.value = "Typed before the capture";
        textbox.dispatchEvent(new Event("input", { bubbles: true }));
        textbox.dispatchEvent(new KeyboardEvent("keydown", { key: "Enter", bubbles: true }));
      }), { capture: true, once: true });
    });
    await drawLasso(page, await page.getByTestId("orders.export").boundingBox());
    const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
    await composer.waitFor({ state: "detached" });
    assert.equal(await overlay.evaluate(() => window.statusAtFiling), "Capturing what you circled…");
    const [busyUntil, capturedAt] = [await page.evaluate(() => window.busyUntil), await overlay.evaluate(() => window.capturedAt)];
    assert.ok(busyUntil <= capturedAt, `the capture came after the page was busy (${busyUntil} ≤ ${capturedAt})`);
    const filed = await filedWithScreenshot(page, "Typed before the capture");
    assert.ok(filed, "the server has the item and its screenshot");
    assert.deepEqual(filed.capture.elements.map((e) => e.testId), ["orders.export"]);
    assert.ok(filed.capture.elements[0].styles, "the styles that follow the capture were waited for too");
    assert.deepEqual(errors, []);
    await page.close();
  });

  test("a page script cannot stand in for the content script: its forged captures are ignored", async () => {
    const { page, overlay } = await openStage("/");
    const errors = watchErrors(page);
    // The page's own script answers the overlay's release, as the issue's attack did:
    // through the message's source, once as a window message and once through a channel
    // of its own offered with a guessed secret, each time with a fake element and route.
    await page.evaluate(() => {
      const forged = {
        type: "redline:captured",
        capture: { stroke: [{ x: 0, y: 0 }, { x: 9, y: 0 }, { x: 9, y: 9 }], bounds: null, elements: [{ testId: "forged.element", tag: "div" }], devicePixelRatio: 1, scroll: { x: 0, y: 0 } },
        route: "/forged",
        locale: null,
        viewport: { width: 10, height: 10 },
        gitSha: null,
        consoleErrors: [],
        screenshot: { Err: "forged" },
      };
      window.forgeries = 0;
      addEventListener("message", (event) => {
        if (event.data?.type !== "redline:circled" || !event.source) return;
        window.forgeries++;
        event.source.postMessage(forged, "*");
        const channel = new MessageChannel();
        event.source.postMessage({ type: "redline:port", token: "guessed" }, "*", [channel.port2]);
        channel.port1.postMessage(forged);
      });
    });
    await fileAround(page, overlay, "orders.export", "Only what was circled");
    assert.equal(await page.evaluate(() => window.forgeries), 1, "the page heard the release and answered it");

    const filed = await filedAs(page, "Only what was circled");
    assert.ok(filed, "the server has the item");
    assert.equal(filed.route, "/");
    assert.deepEqual(filed.capture.elements.map((e) => e.testId), ["orders.export"]);
    assert.deepEqual(errors, []);
    await page.close();
  });

  test("an overlay that a page frames itself does nothing", async () => {
    const page = await browser.context.newPage();
    await page.goto(`${stage.url}/`);
    // The overlay page is web-accessible (the content script frames it) at this session's
    // random address only; a page that learnt that address could frame it too, with a
    // secret of its own choosing.
    const address = await browser.worker.evaluate(() => chrome.runtime.getURL("overlay.html"));
    assert.ok(!address.startsWith(browser.extensionUrl("")), "the overlay is served at a random address");
    const src = `${address}?page=${encodeURIComponent(`${stage.url}/`)}&channel=chosen-by-the-page`;
    await page.evaluate((src) => {
      window.overlayMessages = [];
      addEventListener("message", (event) => window.overlayMessages.push(event.data?.type));
      const frame = document.createElement("iframe");
      frame.src = src;
      document.body.append(frame);
    }, src);
    let overlay;
    for (let i = 0; i < 100 && !overlay; i++) {
      overlay = page.frames().find((f) => f.url().startsWith(browser.extensionUrl("overlay.html")));
      if (!overlay) await page.waitForTimeout(100);
    }
    await overlay.getByText("Redline did not open this overlay here, so it does nothing.").waitFor();
    assert.equal(await overlay.locator(".lasso, svg, [role=dialog]").count(), 0, "no lasso, no composer");
    assert.deepEqual(await page.evaluate(() => window.overlayMessages), [], "it never told the page it was ready");
    await page.close();
  });

  test("the worker screenshots a tab only for the content script, not for the overlay's page", async () => {
    const { page, overlay } = await openStage("/");
    // The overlay is an extension page in the tab, but only the content script hides the
    // overlay and masks secret fields before a screenshot.
    const reply = await overlay.evaluate(() => chrome.runtime.sendMessage({ kind: "captureVisibleTab" }));
    assert.deepEqual(reply, { Err: { error: "notFromThere" } });
    await page.close();
  });

  test("the route filed and the stage looked up leave out the query string and fragment", async () => {
    const { page, overlay } = await openStage("/?token=s3cret&email=a%40b.example#me@b.example");
    await fileAround(page, overlay, "orders.title", "Title with a query");
    const filed = await filedAs(page, "Title with a query");
    assert.ok(filed, "the stage was found from origin and path, and the item filed");
    assert.equal(filed.route, "/");
    assert.ok(!JSON.stringify(filed).includes("s3cret"), "nothing filed holds the query's token");
    await page.close();
  });

  test("the tray counts down the hold; Send now hands the batch to the agent", async () => {
    const { page, overlay } = await openStage("/");
    await fileAround(page, overlay, "orders.title", "Heading is too big");
    const row = overlay.locator(".tray-item", { hasText: "Heading is too big" });
    const countdown = row.getByText(/held · goes to the agent in \d+\u00a0s/);
    await countdown.waitFor();
    const secondsShown = async () => Number((await countdown.textContent()).match(/in (\d+)\u00a0s/)[1]);
    // The count is the server's hold: no more than what is left of it (rounded up).
    const shown = await secondsShown();
    const held = (await changes()).find((c) => c.title === "Heading is too big");
    const left = Math.ceil((Date.parse(held.heldUntil) - Date.now()) / 1000);
    assert.ok(shown > 1 && shown <= left + 1, `shows ${shown} s with ${left} s of the hold left`);
    // And it counts down: a lower number comes while the item is still held.
    await overlay.waitForFunction(
      (shown) =>
        [...document.querySelectorAll(".tray-item")].some((item) => {
          const seconds = item.textContent.includes("Heading is too big") && item.textContent.match(/goes to the agent in (\d+)\u00a0s/);
          return seconds && Number(seconds[1]) < shown;
        }),
      shown,
      { polling: 100 },
    );
    await overlay.getByRole("button", { name: "Send now" }).click();
    await row.getByText("sent to the agent").waitFor();
    const filed = (await changes()).find((c) => c.title === "Heading is too big");
    assert.equal(filed.held, false);
    await page.close();
  });

  test("a held item can be edited and withdrawn from the tray", async () => {
    const { page, overlay } = await openStage("/");
    await fileAround(page, overlay, "orders.summary", "Summary wrong");
    const row = overlay.locator(".tray-item", { hasText: "Summary wrong" });
    await row.getByText(/held/).waitFor();
    await row.getByRole("button", { name: "Edit" }).click();
    const title = overlay.locator(".tray").getByRole("textbox", { name: "Title" });
    await title.fill("Summary total is wrong");
    await title.press("Enter");
    const edited = overlay.locator(".tray-item", { hasText: "Summary total is wrong" });
    await edited.getByText(/held/).waitFor();
    await edited.getByRole("button", { name: "Withdraw" }).click();
    await edited.getByText("withdrawn").waitFor();
    const filed = (await changes()).find((c) => c.title === "Summary total is wrong");
    assert.equal(filed.status, "dismissed");
    await page.close();
  });

  test("card numbers are masked in the screenshot", async () => {
    const { page, overlay } = await openStage("/");
    await page.getByTestId("orders.new.card").fill("4242 4242 4242 4242");
    await fileAround(page, overlay, "orders.new.card", "Card field misaligned");
    const filed = await filedWithScreenshot(page, "Card field misaligned");
    const { change } = await server.rpc("getChange", { changeId: filed.changeId });
    const { rect } = filed.capture.elements.find((e) => e.testId === "orders.new.card");
    // Every pixel inside the field is black: the number never reached the image.
    const [{ max: brightest }] = await measurePixels(change.screenshotUrl, [inflate(rect, -4)]);
    assert.ok(brightest < 40, `the card field is masked (brightest channel ${brightest})`);
    assert.equal(await page.getByTestId("orders.new.card").inputValue(), "4242 4242 4242 4242", "the page is restored");
    await page.close();
  });

  test("parts hidden in the composer, by keyboard and by pointer, are black in the stored image and the rest is as the page was", async () => {
    const { page, overlay } = await openStage("/");
    const errors = watchErrors(page);
    // The page as it looks, without the overlay, to compare the stored image with.
    const host = page.locator("#redline-overlay-host");
    await host.evaluate((h) => (h.style.visibility = "hidden"));
    const reference = `data:image/png;base64,${(await page.screenshot()).toString("base64")}`;
    await host.evaluate((h) => (h.style.visibility = ""));
    const heading = await page.getByTestId("orders.title").boundingBox();
    const summary = await page.getByTestId("orders.summary").boundingBox();

    const exportButton = await page.getByTestId("orders.export").boundingBox();
    await drawLasso(page, exportButton);
    const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
    await composer.waitFor();
    await composer.getByRole("textbox").fill("Export hides the search");
    const previewSource = () => composer.locator("img.shot").getAttribute("src");
    const unredactedPreview = await previewSource();

    // Keyboard only: Tab to "Hide part of the screenshot", Enter adds a box and focuses it.
    const press = async (key, times) => {
      for (let i = 0; i < times; i++) await page.keyboard.press(key);
    };
    const focusedName = () => overlay.evaluate(() => document.activeElement?.getAttribute("aria-label") ?? document.activeElement?.textContent);
    for (let i = 0; i < 10 && (await focusedName()) !== "Hide part of the screenshot"; i++) await page.keyboard.press("Tab");
    assert.equal(await focusedName(), "Hide part of the screenshot", "the control is reached with Tab");
    await page.keyboard.press("Enter");
    const redactor = overlay.getByRole("dialog", { name: "Hide parts of the screenshot" });
    await redactor.waitFor();
    const first = redactor.getByRole("button", { name: /^Hidden area 1:/ });
    assert.match(await focusedName(), /^Hidden area 1:/, "the new box has focus");

    // Arrows move the box to just above and left of the heading; Shift+arrows then size it
    // to cover the heading. Each takes the presses that bring a value within a step of its
    // goal: `atMost` to no more than it, `atLeast` to no less.
    const atMost = (from, to, less, more) => (to < from ? [less, Math.ceil((from - to) / STEP)] : [more, Math.floor((to - from) / STEP)]);
    const atLeast = (from, to, less, more) => (to > from ? [more, Math.ceil((to - from) / STEP)] : [less, Math.floor((from - to) / STEP)]);
    const want = inflate(heading, 2);
    let box = await first.boundingBox();
    await press(...atMost(box.x, want.x, "ArrowLeft", "ArrowRight"));
    await press(...atMost(box.y, want.y, "ArrowUp", "ArrowDown"));
    box = await first.boundingBox();
    await press(...atLeast(box.width, right(want) - box.x, "Shift+ArrowLeft", "Shift+ArrowRight"));
    await press(...atLeast(box.height, bottom(want) - box.y, "Shift+ArrowUp", "Shift+ArrowDown"));
    const keyboardBox = await first.boundingBox();
    assert.ok(covers(keyboardBox, heading), `the keyboard's box ${JSON.stringify(keyboardBox)} covers the heading ${JSON.stringify(heading)}`);
    assert.match(await focusedName(), new RegExp(`^Hidden area 1: ${Math.round(keyboardBox.width)} × ${Math.round(keyboardBox.height)} px at ${Math.round(keyboardBox.x)}, ${Math.round(keyboardBox.y)}$`), "its name says its size and place");

    // A box removed with Delete is gone.
    await redactor.getByRole("button", { name: "Hide another part" }).press("Enter");
    assert.match(await focusedName(), /^Hidden area 2:/);
    await page.keyboard.press("Delete");
    assert.equal(await redactor.getByRole("button", { name: /^Hidden area/ }).count(), 1);

    // The pointer drags a box over the summary line, and one just above the circle,
    // inside the composer's crop.
    const drag = async (r, number) => {
      await page.mouse.move(r.x, r.y);
      await page.mouse.down();
      await page.mouse.move(r.x + r.width / 2, r.y + r.height / 2, { steps: 4 });
      await page.mouse.move(right(r), bottom(r), { steps: 4 });
      await page.mouse.up();
      return redactor.getByRole("button", { name: new RegExp(`^Hidden area ${number}:`) }).boundingBox();
    };
    const pointerBox = await drag(inflate(summary, 3), 2);
    assert.ok(covers(pointerBox, summary), `the dragged box ${JSON.stringify(pointerBox)} covers the summary ${JSON.stringify(summary)}`);
    // Dragging a box moves it.
    const second = redactor.getByRole("button", { name: /^Hidden area 2:/ });
    const moveBy = async (dx) => {
      const r = await second.boundingBox();
      await page.mouse.move(r.x + r.width / 2, r.y + r.height / 2);
      await page.mouse.down();
      await page.mouse.move(r.x + r.width / 2 + dx, r.y + r.height / 2, { steps: 4 });
      await page.mouse.up();
      return second.boundingBox();
    };
    assert.equal(Math.round((await moveBy(40)).x), Math.round(pointerBox.x + 40), "a dragged box moves with the pointer");
    assert.deepEqual(await moveBy(-40), pointerBox, "and back");
    const cropBox = await drag({ x: exportButton.x, y: exportButton.y - 40, width: exportButton.width, height: 30 }, 3);
    await assertAccessible(overlay, "the composer hiding parts of the screenshot");

    // Esc leaves the boxes and goes back to the composer, which keeps the text; its
    // preview, cut from the same pixels as the image filed, shows the boxes black.
    await page.keyboard.press("Escape");
    await redactor.waitFor({ state: "detached" });
    await composer.getByText("3 parts hidden").waitFor();
    assert.equal(await focusedName(), "Hide part of the screenshot", "focus is back on the control");
    assert.equal(await composer.getByRole("textbox").inputValue(), "Export hides the search");
    await assertAccessible(overlay, "the composer with parts hidden");
    await overlay.waitForFunction((old) => document.querySelector("img.shot")?.getAttribute("src") !== old, unredactedPreview);
    const preview = await overlay.evaluate(async () => {
      const image = document.querySelector("img.shot");
      await image.decode();
      const canvas = document.createElement("canvas");
      [canvas.width, canvas.height] = [image.naturalWidth, image.naturalHeight];
      canvas.getContext("2d").drawImage(image, 0, 0);
      return canvas.toDataURL("image/png");
    });
    await composer.getByRole("textbox").press("Enter");
    await composer.waitFor({ state: "detached" });

    const filed = await filedWithScreenshot(page, "Export hides the search");
    assert.ok(filed, "the server has the item and its screenshot");
    const circle = filed.capture.bounds;
    for (const hidden of [keyboardBox, pointerBox]) {
      assert.ok(!overlaps(inflate(hidden, 16), inflate(circle, 4)), "the boxes and the strips beside them are clear of the circle");
    }
    const { change } = await server.rpc("getChange", { changeId: filed.changeId });

    // The box above the circle is black in the crop the composer showed and in the image.
    const crop = { x: Math.max(0, Math.floor(circle.x - CROP_MARGIN)), y: Math.max(0, Math.floor(circle.y - CROP_MARGIN)) };
    assert.ok(cropBox.x >= crop.x && cropBox.y >= crop.y, "the third box is inside the crop");
    const insideCropBox = inflate(cropBox, -3);
    const inCrop = (r) => ({ ...r, x: r.x - crop.x, y: r.y - crop.y });
    const [{ max: inPreview }, { max: buttonInPreview }] = await measurePixels(preview, [inCrop(insideCropBox), inCrop(inflate(exportButton, -3))]);
    assert.ok(inPreview < 16, `the box is black in the composer's crop (brightest channel ${inPreview})`);
    assert.ok(buttonInPreview > 150, `the circled button beside it is not (brightest channel ${buttonInPreview})`);
    const [{ max: inImage, referenceMax: onPage }] = await measurePixels(change.screenshotUrl, [insideCropBox], reference);
    assert.ok(onPage > 150 && inImage < 16, `the box is black in the image filed (brightest channel ${inImage}, on the page ${onPage})`);

    // Inside each box: black in the stored image, where the page showed something.
    // Beside each box and across the lower page: as the page was (WebP's loss aside).
    const strips = (r) => [
      { x: r.x, y: r.y - 12, width: r.width, height: 8 },
      { x: r.x, y: bottom(r) + 4, width: r.width, height: 8 },
      { x: r.x - 12, y: r.y, width: 8, height: r.height },
      { x: right(r) + 4, y: r.y, width: 8, height: r.height },
    ].filter((s) => s.x >= 0 && s.y >= 0 && right(s) <= VIEWPORT.width && bottom(s) <= VIEWPORT.height);
    const below = Math.ceil(Math.max(bottom(keyboardBox), bottom(pointerBox), bottom(circle))) + 24;
    const lower = { x: 0, y: below, width: VIEWPORT.width, height: VIEWPORT.height - below };
    assert.ok(lower.height >= 100, "there is page below the boxes and the circle to compare");
    const beside = [...strips(keyboardBox), ...strips(pointerBox)];
    assert.equal(beside.length, 8, "four strips beside each box");
    const [headingPixels, summaryPixels, lowerPixels, ...besidePixels] = await measurePixels(
      change.screenshotUrl,
      [inflate(heading, -3), inflate(summary, -3), lower, ...beside],
      reference,
    );
    console.log(`pixels measured: ${JSON.stringify({ headingPixels, summaryPixels, lowerPixels, besidePixels })}`);
    for (const [name, { max, referenceMax }] of [["heading", headingPixels], ["summary", summaryPixels]]) {
      assert.ok(referenceMax > 150, `the page shows the ${name} there (brightest channel ${referenceMax})`);
      assert.ok(max < 16, `the ${name} is black in the stored image (brightest channel ${max})`);
    }
    for (const [i, { meanDifference }] of besidePixels.entries()) {
      assert.ok(meanDifference < 4, `strip ${i} beside a box is as the page was (mean difference ${meanDifference.toFixed(1)})`);
    }
    assert.ok(lowerPixels.meanDifference < 3, `the lower page is as it was (mean difference ${lowerPixels.meanDifference.toFixed(1)})`);
    assert.deepEqual(errors, []);
    await page.close();
  });

  test("on a stage with console capture on, the page's errors are filed with the item", async () => {
    const first = await openStage("/");
    await first.overlay.getByRole("button", { name: "Keep Redline ready on this stage" }).click();
    await first.overlay.getByText("From the next page load: console errors kept, and Redline opens at once.").waitFor();
    await first.page.close();

    const { page, overlay } = await openStage("/");
    await page.evaluate(() => {
      console.error("Order total failed to load", { status: 500 });
      setTimeout(() => {
        throw new TypeError("rows is undefined");
      });
    });
    await page.waitForTimeout(100);
    await fileAround(page, overlay, "orders.summary", "Totals missing");
    let filed;
    for (let i = 0; i < 100 && !filed; i++) {
      filed = (await changes()).find((c) => c.title === "Totals missing");
      if (!filed) await page.waitForTimeout(100);
    }
    assert.deepEqual(filed.consoleErrors, ['Order total failed to load {"status":500}', "TypeError: rows is undefined"]);
    await page.close();
  });

  test("on an enabled stage the overlay waits hidden from the page load, and a gesture shows it", async () => {
    const first = await openStage("/");
    await first.overlay.getByRole("button", { name: "Keep Redline ready on this stage" }).click();
    await first.overlay.getByText("From the next page load: console errors kept, and Redline opens at once.").waitFor();
    await first.page.close();
    // Every screenshot the worker takes, counted (Chrome's function is looked up per call).
    await browser.worker.evaluate(() => {
      const capture = chrome.tabs.captureVisibleTab.bind(chrome.tabs);
      globalThis.capturesTaken = 0;
      chrome.tabs.captureVisibleTab = (...args) => {
        globalThis.capturesTaken += 1;
        return capture(...args);
      };
    });

    const page = await browser.context.newPage();
    await page.setViewportSize(VIEWPORT);
    await page.goto(`${stage.url}/`);
    const host = page.locator("#redline-overlay-host");
    await page.locator('#redline-overlay-host[data-redline-state="asleep"]').waitFor({ state: "attached" });
    let overlay;
    while (!(overlay = page.frames().find((f) => f.url().startsWith(browser.extensionUrl("overlay.html"))))) {
      await page.waitForEvent("frameattached");
    }
    // The overlay app is up behind it, unseen, unfocused and deaf to the page's keys.
    await overlay.waitForFunction(() => performance.getEntriesByName("redline:overlay-ready").length === 1);
    assert.equal(await host.evaluate((h) => getComputedStyle(h).visibility), "hidden");
    assert.equal(await page.evaluate(() => document.activeElement === document.body), true);
    await page.keyboard.press("Escape");
    assert.equal(await host.getAttribute("data-redline-state"), "asleep");
    // A page of another origin (the same stage by another name) gets nothing before a gesture.
    const other = await browser.context.newPage();
    await other.goto(`${stage.url.replace("127.0.0.1", "localhost")}/`);
    assert.equal(await other.locator("#redline-overlay-host").count(), 0);
    await other.close();

    await page.bringToFront();
    await browser.clickAction(page);
    await page.locator('#redline-overlay-host[data-redline-state="ready"]').waitFor({ state: "attached" });
    assert.equal(await host.evaluate((h) => getComputedStyle(h).visibility), "visible");
    // The screenshot ahead is taken once, after the gesture: none while it slept.
    await page.waitForFunction(() => performance.getEntriesByName("redline:shot-ahead-posted").length > 0);
    const [shots, penAt, shotAt] = await page.evaluate(() => {
      const [shot] = performance.getEntriesByName("redline:shot-ahead-posted");
      return [performance.getEntriesByName("redline:shot-ahead-posted").length, performance.getEntriesByName("redline:pen-ready")[0]?.startTime, shot.startTime];
    });
    assert.equal(shots, 1);
    assert.ok(penAt !== undefined && shotAt > penAt, `the shot (${shotAt}) follows the gesture (${penAt})`);
    assert.equal(await browser.worker.evaluate(() => globalThis.capturesTaken), 1);
    await assertAccessible(overlay, "the overlay woken on an enabled stage");
    await fileAround(page, overlay, "orders.export", "Filed from an overlay that waited");
    assert.ok(await filedAs(page, "Filed from an overlay that waited"));
    // Esc puts it back to sleep, hidden, and the next gesture shows it again at once.
    await overlay.locator("body").press("Escape");
    await page.locator('#redline-overlay-host[data-redline-state="asleep"]').waitFor({ state: "attached" });
    assert.equal(await host.evaluate((h) => getComputedStyle(h).visibility), "hidden");
    await browser.clickAction(page);
    await page.locator('#redline-overlay-host[data-redline-state="ready"]').waitFor({ state: "attached" });
    await page.waitForFunction(() => performance.getEntriesByName("redline:shot-ahead-posted").length === 2);
    await fileAround(page, overlay, "orders.summary", "Filed after a second gesture");
    assert.ok(await filedAs(page, "Filed after a second gesture"));
    await page.close();
  });

  test("on a page that is no known stage the filer is told so and keeps the text", async () => {
    const { page, overlay } = await openOverlay(browser, stage.url.replace("127.0.0.1", "localhost") + "/", VIEWPORT);
    await overlay.getByText("is not a stage Redline knows").waitFor();
    await drawLasso(page, await page.getByTestId("orders.export").boundingBox());
    const composer = overlay.getByRole("dialog", { name: "Say what is wrong" });
    await composer.getByRole("textbox").fill("Still worth saying");
    await composer.getByRole("textbox").press("Enter");
    await composer.getByRole("alert").getByText("is not a stage Redline knows").waitFor();
    assert.equal(await composer.getByRole("textbox").inputValue(), "Still worth saying");
    await page.close();
  });
});

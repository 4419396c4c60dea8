// Redline in Firefox ESR, end to end against a real server: the Firefox zip installed
// as a temporary add-on, the panel signed in and live, the toolbar button and the
// shortcut opening the overlay on the demo stage (plain and strict CSP), a lasso filed
// with its screenshot through the composer and the grace window, a circle inside a
// closed shadow root filing its host, the outbox holding an
// item while the server is down, a question answered by picking an option image, a
// question notified and the notification clicked, the sidebar, "Check on stage" with
// its after-shot and Fixed, and signing in by code. axe-core checks the panel, the
// composer and the check.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { By, Key, until } from "selenium-webdriver";
import {
  assertAccessible, button, drawLasso, find, launchFirefox, overlayFrame, prepareServer, signIn, startStage, waitForNone, waitForText,
} from "./harness.mjs";

const run = promisify(execFile);

describe("Redline in Firefox", () => {
  let stage, server, firefox, driver, panelTab, stageTab, agentHome;

  before(async () => {
    stage = await startStage();
    server = await prepareServer({ stageUrl: stage.url });
    await server.start();
    firefox = await launchFirefox({ grantOrigins: ["http://127.0.0.1/*"] });
    ({ driver } = firefox);
    stageTab = await driver.getWindowHandle();
    await driver.get(`${stage.url}/`);
    panelTab = await firefox.openTab(firefox.extensionUrl("panel.html"));
    agentHome = mkdtempSync(join(tmpdir(), "redline-firefox-agent-"));
  });

  after(async () => {
    await firefox?.close();
    await server?.dispose();
    await stage?.stop();
    if (agentHome) rmSync(agentHome, { recursive: true, force: true });
  });

  /** `redline` as an agent runs it, signed in by environment. */
  const redline = (args, cwd) =>
    run(process.env.REDLINE_BIN, args, {
      cwd,
      env: { PATH: process.env.PATH, HOME: agentHome, REDLINE_API_URL: server.url, REDLINE_TOKEN: server.token },
    });

  /** The panel's row for `title` in the section `section` (e.g. `section-waiting`). */
  const rowIn = (section) => `[data-testid="${section}"] [data-testid="queue-row"]`;

  test("the panel signs in, follows the stage's tab and stays live", async () => {
    await driver.switchTo().window(panelTab);
    await signIn(driver, server);
    // The stage's tab in front, the panel (a tab here, the sidebar for a person) follows it.
    await firefox.selectTab(stage.url);
    await waitForText(driver, '[data-testid="scope-line"]', "Stage main");
    await waitForText(driver, '[data-testid="link-state"]', "live");
    await find(driver, '[data-testid="queue-empty"]');
    // Live: an item filed elsewhere comes by itself, and goes once dismissed elsewhere.
    const { change } = await server.rpc("createChange", { stageId: server.stageId, title: "Filed from another tab", route: "/" });
    await server.rpc("releaseChanges", { stageId: server.stageId });
    await waitForText(driver, rowIn("section-waiting"), "Filed from another tab");
    await assertAccessible(driver, "the panel with its queue");
    await server.rpc("setChangeStatus", { changeId: change.changeId, status: "dismissed" });
    await find(driver, '[data-testid="queue-empty"]');
  });

  /** Circles the demo's Export button; resolves with what the composer names it by. */
  async function circleExport() {
    await drawLasso(driver, await (await find(driver, '[data-testid="orders.export"]')).getRect());
    return "orders.export";
  }

  /**
   * On the stage at `path` (in front), opens the overlay with `open`, circles with
   * `circle` (the Export button unless told) and files `text` through the composer, which
   * then closes; `beforeFiling` runs just before Enter.
   */
  async function fileOnStage(path, open, text, { beforeFiling = async () => {}, circle = circleExport } = {}) {
    await driver.switchTo().window(stageTab);
    await driver.get(`${stage.url}${path}`);
    await open();
    await find(driver, '#redline-overlay-host[data-redline-state="ready"]');
    const circled = await circle();
    await driver.switchTo().frame(await overlayFrame(driver));
    const composer = '[role="dialog"][aria-label="Say what is wrong"]';
    await waitForText(driver, `${composer} [aria-label="Circled elements"]`, circled);
    await assertAccessible(driver, "the composer");
    const [title, ...body] = text.split("\n");
    const box = await find(driver, `${composer} textarea`);
    await box.sendKeys(title);
    // Shift+Enter starts the body's line; Enter files.
    let keys = driver.actions();
    for (const line of body) keys = keys.keyDown(Key.SHIFT).sendKeys(Key.ENTER).keyUp(Key.SHIFT).sendKeys(line);
    await keys.perform();
    await beforeFiling();
    await driver.actions().sendKeys(Key.ENTER).perform();
    await waitForNone(driver, composer);
    await driver.switchTo().defaultContent();
  }

  /** The item titled `title` once the server has it with its screenshot (up to `timeout` ms). */
  async function filedOnServer(title, timeout = 20_000) {
    let filed;
    await driver.wait(async () => {
      filed = await server.itemTitled(title);
      return Boolean(filed?.screenshotKey);
    }, timeout, `the server has "${title}" with its screenshot`);
    return filed;
  }

  /** [`fileOnStage`], then the item as the server has it; the tray says the batch is held. */
  async function circleAndFile(path, open, text, circle) {
    await fileOnStage(path, open, text, { circle });
    await driver.switchTo().frame(await overlayFrame(driver));
    await waitForText(driver, "body", "This batch");
    await driver.switchTo().defaultContent();
    return filedOnServer(text.split("\n")[0]);
  }

  for (const [name, path] of [["the demo stage", "/"], ["the demo stage under a strict CSP", "/strict/"]]) {
    test(`the toolbar button and a lasso on ${name} file an item with what was circled and a screenshot`, async () => {
      const filed = await circleAndFile(path, () => firefox.clickAction(), `Export is cramped ${path}\nIt touches the search box.`);
      assert.equal(filed.body, "It touches the search box.");
      assert.equal(filed.route, path);
      assert.equal(filed.held, true, "held for the grace window");
      assert.equal(filed.source, "extension");
      assert.equal(filed.capture.elements[0].testId, "orders.export");
      assert.ok(filed.capture.stroke.length > 10, "the circle drawn is filed with it");
      assert.ok(filed.screenshotUrl, "the item has a screenshot");
      const image = await fetch(filed.screenshotUrl, { headers: { Authorization: `Bearer ${server.token}` } });
      assert.equal(image.status, 200, "the screenshot is stored");
      assert.match(image.headers.get("content-type"), /^image\//);
      assert.ok((await image.arrayBuffer()).byteLength > 1000, "Firefox's captureVisibleTab took the page, not an empty image");
    });
  }

  test("Alt+Shift+C opens the overlay too, and what is filed shows in the panel once its hold ends", async () => {
    await circleAndFile("/", () => firefox.pressShortcut(), "Shortcut filed");
    await server.rpc("releaseChanges", { stageId: server.stageId });
    await driver.switchTo().window(panelTab);
    await firefox.selectTab(stage.url);
    await waitForText(driver, rowIn("section-waiting"), "Shortcut filed");
  });

  test("a button circled inside a closed shadow root files its host, which Firefox opens to the content script", async () => {
    let host;
    const filed = await circleAndFile("/frames.html", () => firefox.clickAction(), "Closed widget button", async () => {
      host = await (await find(driver, "closed-widget")).getRect();
      // The button sits 40 px into the widget; neither the page nor the test sees inside.
      await drawLasso(driver, { x: host.x + 42, y: host.y + 42, width: 110, height: 24 }, 8);
      return "closed-widget";
    });
    const [element, ...others] = filed.capture.elements;
    assert.deepEqual(others, [], "only the host was filed");
    assert.equal(element.tag, "closed-widget");
    assert.equal(element.cssPath, "closed-widget");
    for (const side of ["x", "y", "width", "height"]) {
      assert.ok(Math.abs(element.rect[side] - host[side]) <= 2, `the host's rect: ${JSON.stringify(element.rect)} against ${JSON.stringify(host)}`);
    }
  });

  test("filed while the server is down, the item waits in the outbox and is delivered once when it is back", async () => {
    // The server goes away once the overlay knows the stage, as the filer types.
    try {
      await fileOnStage("/", () => firefox.clickAction(), "Filed offline", { beforeFiling: () => server.stop() });
    } finally {
      await server.start();
    }
    // Retries come after 2, 4, 8… s (alarms), as in Chromium.
    await filedOnServer("Filed offline", 60_000);
    assert.equal((await server.items()).filter((c) => c.title === "Filed offline").length, 1, "delivered once");
  });

  test("a question is answered by picking an option image", async () => {
    const { change } = await server.rpc("createChange", { stageId: server.stageId, title: "Export button colour", route: "/" });
    await server.rpc("releaseChanges", { stageId: server.stageId });
    await redline(["next", "--claim", "--claimed-by", "agent-1", "--once"]);
    await redline(["ask", change.shortId, "Which colour?", "--option", "Red", "--option", "Green"]);
    // One option image each, labelled like its option: the extension's own icons.
    for (const [label, size] of [["Red", 16], ["Green", 32]]) {
      const path = join(process.env.REDLINE_EXTENSION_DIR, "icons", `${size}.png`);
      await redline(["shot", change.shortId, "--image", path, "--label", label, "--kind", "option"]);
    }
    await driver.switchTo().window(panelTab);
    await firefox.selectTab(stage.url);
    await waitForText(driver, rowIn("section-needs-answer"), "Export button colour");
    await (await find(driver, rowIn("section-needs-answer"))).click();
    await waitForText(driver, '[data-testid="answer"] [data-testid="question"]', "Which colour?");
    await driver.wait(async () => {
      const images = await driver.findElements(By.css('[data-testid="answer"] [data-testid="option"] img'));
      return images.length === 2;
    }, 20_000, "both option images show");
    await assertAccessible(driver, "the panel's question");
    await (await button(driver, "Pick Green")).click();
    await driver.wait(async () => {
      const { thread } = await server.rpc("getChange", { changeId: change.changeId });
      return thread.at(-1).type === "answer";
    }, 20_000, "the server has the answer");
    const { thread } = await server.rpc("getChange", { changeId: change.changeId });
    assert.equal(thread.at(-1).body, "Green");
  });

  /**
   * Runs `script` (a function body) in the panel's tab, which WebDriver is in, with the
   * extension's `chrome`; resolves with what it returns.
   */
  async function inPanel(script, ...args) {
    return driver.executeAsyncScript(
      `const done = arguments[arguments.length - 1];
       const chrome = (window.wrappedJSObject ?? window).chrome;
       Promise.resolve((async (...args) => { ${script} })(...[...arguments].slice(0, -1)))
         .then((value) => done(JSON.parse(JSON.stringify(value ?? null))), (error) => done({ failed: String(error) }));`,
      ...args,
    );
  }

  test("a question is notified by the worker's poll; a click on it opens the item in a tab, as Firefox gives the click no gesture to open the sidebar with", async () => {
    const { change } = await server.rpc("createChange", { stageId: server.stageId, title: "Header overlaps the menu", route: "/" });
    await server.rpc("releaseChanges", { stageId: server.stageId });
    await redline(["claim", "--change-ids", change.shortId, "--claimed-by", "agent-1"]);
    await redline(["ask", change.shortId, "Which menu do you mean?", "--option", "Top", "--option", "Side"]);
    // One poll now, as the panel asks for one (the badge's alarm polls every 30 s).
    await driver.switchTo().window(panelTab);
    const polled = await inPanel(`return chrome.runtime.sendMessage({ kind: "refreshBadge" });`);
    assert.ok(polled.Ok >= 1, JSON.stringify(polled));
    const id = `redline-item:${change.changeId}`;
    await driver.wait(async () => (await firefox.notifications()).includes(id), 20_000, "Firefox shows the notification").catch(async (error) => {
      const { notified } = await inPanel(`return chrome.storage.local.get("notified");`);
      throw new Error(`${error.message}; the worker announced: ${JSON.stringify(notified)}; Firefox shows ${await firefox.notifications()}; ${JSON.stringify(await inPanel("return chrome.notifications.getAll();"))}`);
    });

    const before = new Set(await driver.getAllWindowHandles());
    await firefox.clickNotification(id);
    let opened;
    try {
      await driver.wait(async () => {
        opened = (await driver.getAllWindowHandles()).find((h) => !before.has(h));
        return Boolean(opened);
      }, 20_000, "the panel opens in a tab");
      await driver.switchTo().window(opened);
      // A new tab is about:blank until its page commits.
      let url;
      await driver.wait(async () => (url = await driver.getCurrentUrl()) === firefox.extensionUrl("panel.html"), 20_000)
        .catch(() => assert.equal(url, firefox.extensionUrl("panel.html"), "the new tab is the panel"));
      assert.ok(!(await firefox.notifications()).includes(id), "the clicked notification goes");
      // The item opens in a panel: the one already open here or the new tab, whichever
      // takes it first (it is taken once).
      const showing = async (handle) => {
        await driver.switchTo().window(handle);
        const titles = await driver.findElements(By.css('[data-testid="item-title"]'));
        return titles.length > 0 && (await titles[0].getText()).includes("Header overlaps the menu");
      };
      let shownIn;
      await driver.wait(async () => {
        for (const handle of [opened, panelTab]) if (await showing(handle)) shownIn = handle;
        return Boolean(shownIn);
      }, 20_000, "a panel opens the item");
      await waitForText(driver, '[data-testid="question"]', "Which menu do you mean?");
    } finally {
      // The next tests read the queue in the panel's tab, whatever happened here.
      if (opened) {
        await driver.switchTo().window(opened);
        await driver.close();
      }
      await backToQueue();
    }
  });

  test("the sidebar a person opens from View → Sidebar is the panel: signed in, following the stage's tab, with its queue, live", async () => {
    await server.rpc("createChange", { stageId: server.stageId, title: "Seen in the sidebar", route: "/" });
    await server.rpc("releaseChanges", { stageId: server.stageId });
    // WebDriver in the panel's tab, the stage's in front.
    await driver.switchTo().window(panelTab);
    await firefox.selectTab(stage.url);
    assert.equal(await firefox.openSidebar(), firefox.extensionUrl("panel.html"));
    // The sidebar's page is one of the extension's own views, read from the panel's tab.
    // Live too, while the panel's tab holds a stream of the same URL (once kept waiting
    // about 20 s behind that stream's HTTP cache entry).
    const sidebar = `return chrome.extension.getViews({ type: "sidebar" }).map((view) =>
      ['[data-testid="connection-status"]', '[data-testid="scope-line"]', '[data-testid="section-waiting"]', '[data-testid="link-state"]']
        .map((css) => view.document.querySelector(css)?.textContent ?? "").join(" | "));`;
    let shown;
    await driver.wait(async () => {
      shown = await inPanel(sidebar);
      return shown.length === 1 && /Connected as dev/.test(shown[0]) && /Stage main/.test(shown[0]) && /Seen in the sidebar/.test(shown[0]) && /\blive\b/.test(shown[0]);
    }, 20_000, "the sidebar shows the stage's queue, live").catch((error) => {
      throw new Error(`${error.message}; the sidebar shows: ${JSON.stringify(shown)}`);
    });
  });

  /** Shows the queue in the panel's tab, closing an item left open there. */
  async function backToQueue() {
    await driver.switchTo().window(panelTab);
    for (const back of await driver.findElements(By.css("article.item button.back"))) await back.click();
    await waitForNone(driver, "article.item");
  }

  /** The row titled `title` in the panel's section `section`, once it is there. */
  async function rowTitled(section, title) {
    let found;
    await driver.wait(async () => {
      for (const row of await driver.findElements(By.css(rowIn(section)))) {
        if ((await row.getText().catch(() => "")).includes(title)) found = row;
      }
      return Boolean(found);
    }, 20_000, `the ${section} row "${title}"`);
    return found;
  }

  test("a fix the stage serves is checked there, before beside after, and Fixed verifies it", async () => {
    // Filed as the composer files: the stage's screenshot and where the Export button is.
    await driver.switchTo().window(stageTab);
    await driver.get(`${stage.url}/`);
    const { x, y, width, height } = await (await find(driver, '[data-testid="orders.export"]')).getRect();
    const viewport = await driver.executeScript("return { width: innerWidth, height: innerHeight }");
    const png = await driver.takeScreenshot();
    const { screenshotKey } = await server.rpc("uploadShot", { projectId: server.projectId, contentType: "image/png", imageBase64: png });
    const title = "Export needs room";
    const { change } = await server.rpc("createChange", {
      stageId: server.stageId, title, route: "/", viewport, screenshotKey,
      capture: { stroke: [], devicePixelRatio: 1, elements: [{ testId: "orders.export", tag: "button", rect: { x, y, width, height } }] },
    });
    await server.rpc("releaseChanges", { stageId: server.stageId });

    // The agent fixes it in a commit; the stage then serves that commit (the same app:
    // Chromium's suite checks a changed build) and `stage deploy` says so.
    const repo = join(agentHome, "repo");
    mkdirSync(repo);
    const git = (...args) => run("git", args, { cwd: repo });
    await git("init", "-q", "-b", "main");
    await git("-c", "user.name=agent", "-c", "user.email=agent@example.com", "commit", "-q", "--allow-empty", "-m", `Give Export room\n\nChange: #${change.shortId}`);
    const sha = (await git("rev-parse", "HEAD")).stdout.trim();
    await redline(["claim", "--change-ids", change.shortId, "--claimed-by", "agent-1"], repo);
    await redline(["done", change.shortId, "--note", "Gave Export room"], repo);
    const addr = stage.addr;
    await stage.stop();
    stage = await startStage({ addr, sha });
    const cwd = process.cwd();
    process.chdir(repo);
    try {
      assert.deepEqual((await server.admin("stage", "deploy", "--stage", "main", "--sha", sha)).live, [String(change.shortId)]);
    } finally {
      process.chdir(cwd);
    }

    await backToQueue();
    await firefox.selectTab(stage.url);
    const row = await rowTitled("section-check", title).catch(async (error) => {
      throw new Error(`${error.message}; the panel shows: ${await (await find(driver, "body")).getText()}`);
    });
    await (await row.findElement(By.css(".row-main"))).click();
    await (await button(driver, "Check on stage")).click();
    const check = '[data-testid="check"]';
    await driver.wait(until.elementLocated(By.css(`${check} [data-testid="check-located"]`)), 30_000, "the check looks into the stage tab");
    await driver.wait(until.elementLocated(By.css(`${check} [data-testid="after"] img, ${check} [data-testid="needs-toolbar-click"]`)), 30_000, "an after-shot or why not");
    // Firefox screenshots a tab only with activeTab, which a host permission does not
    // stand in for and which it takes back when the tab loads again: the panel says to
    // click the toolbar button there, and doing it works.
    await waitForText(driver, `${check} [data-testid="needs-toolbar-click"]`, "click on Redline\u2019s toolbar button");
    await assertAccessible(driver, "the check without an after-shot");
    await firefox.clickAction();
    await (await button(driver, "Check again")).click();
    await find(driver, `${check} [data-testid="after"] img`);
    await waitForNone(driver, `${check} [data-testid="needs-toolbar-click"]`);
    await waitForText(driver, `${check} [data-testid="check-located"] li`, "orders.export: found by test id");
    await waitForText(driver, check, `After, on ${sha.slice(0, 7)}`);
    const widths = await driver.executeAsyncScript(`const done = arguments[arguments.length - 1];
      const images = [...document.querySelectorAll('[data-testid="before"] img, [data-testid="after"] img')];
      Promise.all(images.map((i) => i.decode().then(() => i.naturalWidth))).then(done, (e) => done(String(e)));`);
    assert.ok(Array.isArray(widths) && widths.length === 2 && widths.every((w) => w > 50), `before and after load: ${widths}`);
    await assertAccessible(driver, "the check");

    await (await button(driver, "Fixed")).click();
    await waitForText(driver, '[data-testid="item-verified"]', "fixed");
    const { change: checked, thread } = await server.rpc("getChange", { changeId: change.changeId });
    assert.equal(checked.status, "done");
    assert.ok(checked.verifiedAt, "verified");
    assert.equal(thread.at(-1).type, "verdict");
    assert.equal(thread.at(-1).attachments.length, 1, "the after-shot goes with the verdict");
    await driver.actions().sendKeys(Key.ESCAPE).perform();
  });

  test("Settings signs in with a code approved on the server host", async () => {
    await driver.switchTo().window(panelTab);
    await (await button(driver, "Settings")).click();
    await (await button(driver, "Get a sign-in code")).click();
    const code = (await (await find(driver, '[data-testid="sign-in-code"]')).getText()).trim();
    await server.admin("auth", "approve", code, "--project", "dev", "--scope", "changes:project:read,changes:project:file", "--name", "reviewer");
    await waitForText(driver, '[data-testid="connection-status"]', "Connected as reviewer");
    // Kept in the extension origin's IndexedDB (`src/browser/sign_in_store.rs`), not in storage.local,
    // which Firefox leaves open to content scripts.
    const settings = await inPanel(`return new Promise((resolve, reject) => {
      const opening = indexedDB.open("redline-sign-in");
      opening.onerror = () => reject(opening.error);
      opening.onsuccess = () => {
        const reading = opening.result.transaction("sign-in").objectStore("sign-in").get("settings");
        reading.onerror = () => reject(reading.error);
        reading.onsuccess = () => { opening.result.close(); resolve(reading.result); };
      };
    });`);
    assert.equal(settings.apiUrl, server.url);
    assert.notEqual(settings.token, server.token, "a token of its own");
    const local = JSON.stringify(await inPanel(`return chrome.storage.local.get(null);`));
    assert.ok(!local.includes(settings.token), `storage.local holds: ${local}`);
  });
});

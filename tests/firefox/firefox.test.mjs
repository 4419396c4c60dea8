// Redline in Firefox ESR, end to end against a real server: the Firefox package installed
// as a temporary add-on, the panel signed in and live, the toolbar button and the
// shortcut opening the overlay on the demo stage (plain and strict CSP), a lasso filed
// with its screenshot through the composer and the grace window, the outbox holding an
// item while the server is down, and a question answered by picking an option image. axe-core checks the panel and the composer.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { after, before, describe, test } from "node:test";
import { By, Key } from "selenium-webdriver";
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
  const redline = (args) =>
    run(process.env.REDLINE_BIN, args, {
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

  /**
   * On the stage at `path` (in front), opens the overlay with `open`, circles the Export
   * button and files `text` through the composer, which then closes; `beforeFiling` runs
   * just before Enter.
   */
  async function fileOnStage(path, open, text, beforeFiling = async () => {}) {
    await driver.switchTo().window(stageTab);
    await driver.get(`${stage.url}${path}`);
    await open();
    await find(driver, '#redline-overlay-host[data-redline-state="ready"]');
    const exportButton = await find(driver, '[data-testid="orders.export"]');
    await drawLasso(driver, await exportButton.getRect());
    await driver.switchTo().frame(await overlayFrame(driver));
    const composer = '[role="dialog"][aria-label="Say what is wrong"]';
    await waitForText(driver, `${composer} [aria-label="Circled elements"]`, "orders.export");
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
  async function circleAndFile(path, open, text) {
    await fileOnStage(path, open, text);
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

  test("filed while the server is down, the item waits in the outbox and is delivered once when it is back", async () => {
    // The server goes away once the overlay knows the stage, as the filer types.
    try {
      await fileOnStage("/", () => firefox.clickAction(), "Filed offline", () => server.stop());
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
});

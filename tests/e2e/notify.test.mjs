// Browser notifications, end to end against the real server and the agent CLI: the agent
// asks a question on an item the person filed, and the worker's own poll (its badge
// alarm) shows a notification for it, read back with `chrome.notifications.getAll()` in
// the worker; it is not shown again by the next poll; what a click on it leaves for the
// panel opens the item there; with the switch in Settings off, a question shows none.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { rmSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { agentWorkspace, assertAccessible, launchBrowser, openConnectedPanel, prepareServer } from "./harness.mjs";

const run = promisify(execFile);

describe("notifications", () => {
  let server, browser, panel, work, agentEnv, errors;

  before(async () => {
    // No stage page is needed: items are filed through the API, as the panel's person.
    server = await prepareServer({ stageUrl: "http://127.0.0.1:9" });
    await server.start();
    browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
    errors = [];
    panel = await openConnectedPanel(browser, server, { viewport: { width: 420, height: 900 }, errors });
    ({ work, env: agentEnv } = agentWorkspace(server, "redline-e2e-notify-"));
  });

  after(async () => {
    await browser?.close();
    await server?.dispose();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const redline = (args) => run(process.env.REDLINE_BIN, args, { env: agentEnv, cwd: join(work, "repo") });

  /** Files an item as the panel's person (the token's name), ends its hold, and has the agent ask about it. */
  async function asked(title) {
    const { change } = await server.rpc("createChange", { stageId: server.stageId, title, route: "/" });
    await server.rpc("releaseChanges", { stageId: server.stageId });
    await redline(["claim", "--change-ids", change.shortId, "--claimed-by", "agent-1"]);
    await redline(["ask", change.shortId, "Which menu do you mean?", "--option", "Top", "--option", "Side"]);
    return change;
  }

  /** The ids of the notifications Redline shows now, as Chrome lists them. */
  const shown = async () => Object.keys(await browser.worker.evaluate(() => chrome.notifications.getAll()));

  /** One poll of the worker now, as the panel asks for one: resolves once it is done. */
  const poll = () => panel.evaluate(() => chrome.runtime.sendMessage({ kind: "refreshBadge" }));

  /** Waits until the switch's state is stored. */
  async function saved(notify) {
    for (let i = 0; i < 50; i++) {
      const { preferences } = await panel.evaluate(() => chrome.storage.local.get("preferences"));
      if (preferences?.notify === notify) return;
      await panel.waitForTimeout(100);
    }
    assert.fail(`notifications were not switched ${notify ? "on" : "off"}`);
  }

  test("a question on an item the person filed is notified by the worker's poll, once", async () => {
    const change = await asked("Header overlaps the menu");
    const id = `redline-item:${change.changeId}`;
    // The badge's alarm polls every 30 s; nothing else asks the worker here.
    let ids = [];
    for (let i = 0; i < 90 && !ids.includes(id); i++) {
      await new Promise((resolve) => setTimeout(resolve, 500));
      ids = await shown();
    }
    assert.deepEqual(ids, [id], "one notification, for the item asked about");

    // Taken away (as a person closing it would), it does not come back at the next poll:
    // the worker remembers what it announced.
    await browser.worker.evaluate((id) => chrome.notifications.clear(id), id);
    assert.deepEqual(await poll(), { Ok: 1 });
    assert.deepEqual(await shown(), []);
    const { notified } = await browser.worker.evaluate(() => chrome.storage.local.get("notified"));
    assert.equal(notified.items[change.changeId].reason, "question");
  });

  test("what a click on a notification leaves for the panel opens the item there", async () => {
    await panel.bringToFront();
    const { changes } = await server.rpc("listChanges", { projectId: server.projectId });
    const change = changes.find((c) => c.title === "Header overlaps the menu");
    // A click (which a headless browser cannot make on a system notification) opens the
    // side panel and leaves the item here; this is the panel's half of it.
    await browser.worker.evaluate((id) => chrome.storage.session.set({ openItem: id }), change.changeId);
    await panel.getByTestId("item-title").getByText("Header overlaps the menu").waitFor();
    await panel.getByTestId("question").getByText("Which menu do you mean?").waitFor();
    assert.equal(await browser.worker.evaluate(() => chrome.storage.session.get("openItem").then((s) => s.openItem)), undefined, "taken once");
    await panel.keyboard.press("Escape");
  });

  test("with the switch in Settings off, a new question is not notified", async () => {
    await panel.getByRole("button", { name: "Settings" }).click();
    const toggle = panel.getByLabel("Notify me when an agent asks me something or a fix of mine is live to check");
    assert.equal(await toggle.isChecked(), true, "on by default");
    await assertAccessible(panel, "the settings");
    await toggle.uncheck();
    await saved(false);

    const change = await asked("Footer links are grey");
    assert.deepEqual(await poll(), { Ok: 2 }, "the poll sees both questions");
    assert.deepEqual(await shown(), []);
    // Remembered all the same: switching on again does not announce what already waited.
    const { notified } = await browser.worker.evaluate(() => chrome.storage.local.get("notified"));
    assert.equal(notified.items[change.changeId].reason, "question");

    await toggle.check();
    await saved(true);
    assert.deepEqual(await poll(), { Ok: 2 });
    assert.deepEqual(await shown(), []);
    assert.deepEqual(errors, []);
  });
});

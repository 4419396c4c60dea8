// The side panel, end to end against the real server and the agent CLI: it follows the
// tab's stage, shows the agent's question with its options and their images live (at 320
// and 420 px without scrolling sideways, and without axe-core violations), picks one (the
// agent wakes), shows
// what got done (and "live" once deployed), renders server text as text, and outlines an
// item's elements on the page; while the server is away it shows what waits to send, and
// a held item's failed edit or withdraw with a Retry.
import assert from "node:assert/strict";
import { execFile } from "node:child_process";
import { randomUUID } from "node:crypto";
import { rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { after, before, describe, test } from "node:test";
import { promisify } from "node:util";
import { agentWorkspace, assertAccessible, launchBrowser, openConnectedPanel, prepareServer, savePanelScreenshots, startStage, storedSignIn } from "./harness.mjs";

const run = promisify(execFile);
describe("the side panel", () => {
  let stage, server, browser, panel, stagePage, work, agentEnv, errors;

  before(async () => {
    stage = await startStage();
    server = await prepareServer({ stageUrl: stage.url });
    await server.start();
    browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
    stagePage = await browser.context.newPage();
    await stagePage.setViewportSize({ width: 1200, height: 700 });
    await stagePage.goto(`${stage.url}/`);
    errors = [];
    panel = await openConnectedPanel(browser, server, { viewport: { width: 420, height: 900 }, errors });

    // The agent: its own config dir, and a git checkout for `redline done`.
    ({ work, env: agentEnv } = agentWorkspace(server, "redline-e2e-agent-"));
    const git = (...args) => run("git", args, { cwd: join(work, "repo"), env: agentEnv });
    await git("init", "-q", "-b", "main");
    await git("-c", "user.name=agent", "-c", "user.email=agent@example.com", "commit", "-q", "--allow-empty", "-m", "Fix");
  });

  after(async () => {
    await browser?.close();
    await server?.dispose();
    await stage?.stop();
    if (work) rmSync(work, { recursive: true, force: true });
  });

  const redline = (args, options = {}) =>
    run(process.env.REDLINE_BIN, args, { env: agentEnv, cwd: join(work, "repo"), ...options });

  /** Files an item as the panel's person would, and ends its hold at once. */
  async function file(title, extra = {}) {
    const { change } = await server.rpc("createChange", { stageId: server.stageId, title, route: "/", ...extra });
    await server.rpc("releaseChanges", { stageId: server.stageId });
    return change;
  }

  /** A small PNG of one colour, drawn by the browser. */
  async function png(colour) {
    const base64 = await panel.evaluate(async (colour) => {
      const canvas = new OffscreenCanvas(160, 90);
      const context = canvas.getContext("2d");
      context.fillStyle = colour;
      context.fillRect(0, 0, 160, 90);
      const bytes = new Uint8Array(await (await canvas.convertToBlob({ type: "image/png" })).arrayBuffer());
      return btoa(String.fromCharCode(...bytes));
    }, colour);
    const path = join(work, `${colour}.png`);
    writeFileSync(path, Buffer.from(base64, "base64"));
    return path;
  }

  const row = (title) => panel.getByTestId("queue-row").filter({ hasText: title });
  /** The row once the item reached "Waiting" (its hold is over). */
  const waitingRow = (title) => panel.getByTestId("section-waiting").getByTestId("queue-row").filter({ hasText: title });

  test("follows the tab's stage and stays live", async () => {
    await stagePage.bringToFront();
    await panel.getByTestId("scope-line").getByText("Stage main").waitFor();
    await panel.getByTestId("link-state").getByText("live").waitFor();
    await panel.getByTestId("queue-empty").waitFor();
    // Live: what happens on the server reaches the panel by itself, with no reload and no
    // click: an item filed elsewhere comes, and goes once dismissed elsewhere.
    const change = await file("Filed from another tab");
    await waitingRow("Filed from another tab").waitFor();
    await server.rpc("setChangeStatus", { changeId: change.changeId, status: "dismissed" });
    await row("Filed from another tab").waitFor({ state: "detached" });
    await panel.getByTestId("queue-empty").waitFor();
    await panel.getByTestId("link-state").getByText("live").waitFor();
  });

  /** Fails when the panel, `width` px wide, scrolls sideways. */
  async function assertNoSidewaysScroll(width) {
    await panel.setViewportSize({ width, height: 900 });
    // Wait for the layout at the new width (and for images, which may widen it).
    await panel.waitForFunction((w) => window.innerWidth === w, width);
    await panel.evaluate(() => Promise.all([...document.images].map((image) => image.decode().catch(() => {}))));
    const { scrollWidth, clientWidth } = await panel.evaluate(() => {
      const { scrollWidth, clientWidth } = document.scrollingElement;
      return { scrollWidth, clientWidth };
    });
    assert.ok(scrollWidth <= clientWidth, `at ${width} px the panel scrolls sideways: ${scrollWidth} > ${clientWidth}`);
  }

  test("the agent asks with three options and an option image for each; picking one answers with its key and wakes the agent", async () => {
    // The side panel is visible while used (it keeps following the stage's tab).
    await panel.bringToFront();
    const change = await file("Export button colour", {
      capture: { stroke: [], elements: [{ testId: "orders.export", tag: "button" }] },
    });
    await row("Export button colour").waitFor();

    await redline(["next", "--claim", "--claimed-by", "agent-1", "--once"]);
    await panel.getByTestId("section-working").getByText("Export button colour").waitFor();
    await panel.getByTestId("section-working").getByText("claimed by agent-1").waitFor();
    // Words without a break opportunity must wrap rather than widen the panel.
    const question = "Which colour should the button be? See_the_mock_up_in_frame_Orders_Export_version_2";
    const labels = ["Red, as in brand_guide_section_four_point_two", "Green", "Blue"];
    await redline(["ask", change.shortId, question, ...labels.flatMap((label) => ["--option", label])]);
    // As Fabric's skill tells agents: one option shot per option, labelled like it.
    for (const [label, colour] of [[labels[0], "red"], ["green", "green"], ["Blue", "blue"]]) {
      await redline(["shot", change.shortId, "--image", await png(colour), "--label", label, "--kind", "option"]);
    }
    const asked = (await server.rpc("getChange", { changeId: change.changeId })).thread.find((m) => m.type === "question");
    const keys = asked.attachments.map((option) => option.key);
    assert.equal(new Set(keys).size, 3, "three options, three keys");

    await panel.getByTestId("section-needs-answer").getByText("Export button colour").waitFor();
    let badge;
    for (let i = 0; i < 50 && badge !== "1"; i++) {
      badge = await browser.worker.evaluate(() => chrome.action.getBadgeText({}));
      if (badge !== "1") await panel.waitForTimeout(100);
    }
    assert.equal(badge, "1", "the toolbar badge counts the question");

    // The agent waits for the answer.
    const waiting = redline(["next", "--claimed-by", "agent-1", "--timeout", "60"]);

    await panel.getByTestId("section-needs-answer").getByText("Export button colour").click();
    const box = panel.getByTestId("answer");
    assert.equal(await box.getByTestId("question").textContent(), question, "the question asked, not a shot's label");
    const options = box.getByTestId("option");
    await options.nth(2).locator("img").waitFor();
    assert.equal(await options.count(), 3, "one choice per label: each shot is its option's image");
    assert.deepEqual(await options.locator(".choice-label").allTextContents(), labels);
    assert.deepEqual(await options.evaluateAll((all) => all.map((o) => o.dataset.optionKey)), keys);
    const widths = await options.locator("img").evaluateAll((images) =>
      Promise.all(images.map((image) => image.decode().then(() => image.naturalWidth))),
    );
    assert.deepEqual(widths, [160, 160, 160], "the three images load");
    await savePanelScreenshots(panel, "panel");
    for (const width of [320, 420]) await assertNoSidewaysScroll(width);
    await assertAccessible(panel);

    await box.getByRole("button", { name: "Pick Green" }).click();
    const woke = await waiting;
    assert.match(woke.stdout, /green|answer/i, "redline next printed the answer");
    const { change: answered, thread } = await server.rpc("getChange", { changeId: change.changeId });
    assert.equal(answered.status, "in_progress");
    const answer = thread.at(-1);
    assert.equal(answer.authorKind, "user");
    assert.equal(answer.type, "answer");
    assert.equal(answer.chosenOption, keys[1], "the text option's key");
    assert.equal(answer.body, "Green", "the answer repeats the chosen label");
    // The thread shows the choice by its label.
    const shown = panel.locator('[data-testid="message"][data-type="answer"]');
    await shown.getByTestId("chosen").getByText("Green", { exact: true }).waitFor();
    assert.ok(!(await shown.textContent()).includes(keys[1]), "never the raw key");
    await panel.getByTestId("answer").waitFor({ state: "detached" });
    for (const width of [320, 420]) await assertNoSidewaysScroll(width);

    // The fix's commit names the item in its trailer: `done` records that commit.
    const fix = ["commit", "-q", "--allow-empty", "-m", `fix(export): #${change.shortId} make it green`];
    await run("git", ["-c", "user.name=agent", "-c", "user.email=agent@example.com", ...fix, "-m", `Change: #${change.shortId}`],
      { cwd: join(work, "repo"), env: agentEnv });
    await redline(["done", change.shortId, "--note", "Made it green"]);
    const { stdout: head } = await run("git", ["rev-parse", "HEAD"], { cwd: join(work, "repo") });
    await panel.getByTestId("item-build").getByText(`main @ ${head.trim().slice(0, 7)}`).waitFor();
    await panel.keyboard.press("Escape");
    const done = panel.getByTestId("section-done").getByTestId("queue-row").filter({ hasText: "Export button colour" });
    await done.getByText(`main @ ${head.trim().slice(0, 7)}`).waitFor();
    const decoration = await done.getByTestId("row-title").evaluate((e) => getComputedStyle(e).textDecorationLine);
    assert.equal(decoration, "line-through");
    badge = await browser.worker.evaluate(() => chrome.action.getBadgeText({}));
    assert.equal(badge, "", "no question is left");

    // The stage now serves that commit: `redline stage deploy` on the server host, in the
    // checkout that has it, marks the item live.
    const cwd = process.cwd();
    process.chdir(join(work, "repo"));
    let deployed;
    try {
      deployed = await server.admin("stage", "deploy", "--stage", "main", "--sha", head.trim());
    } finally {
      process.chdir(cwd);
    }
    assert.deepEqual(deployed.live, [String(change.shortId)]);
    // The deploy ran in another process; its `status` event reaches the open panel
    // through the running server, which re-reads: without a reload the item moves from
    // Done to the fixes to check on the stage (tests/e2e/verify.test.mjs), saying "live".
    const toCheck = panel.getByTestId("section-check").getByTestId("queue-row").filter({ hasText: "Export button colour" });
    await toCheck.locator(".live").getByText("live", { exact: true }).waitFor({ timeout: 10_000 });
    assert.equal(await done.count(), 0, "no longer under Done");
  });

  test("server text is rendered as text", async () => {
    // The side panel is visible while used; a background tab's timers are throttled.
    await panel.bringToFront();
    let dialogs = 0;
    panel.on("dialog", (dialog) => {
      dialogs++;
      dialog.dismiss();
    });
    const title = "<img src=x onerror=alert(1)>";
    await file(title, { body: "<b>bold?</b>" });
    const shown = waitingRow(title);
    await shown.waitFor();
    assert.equal(await shown.getByTestId("row-title").textContent(), title);
    assert.equal(await panel.locator("main img[src=x]").count(), 0);
    await shown.locator(".row-main").click();
    await panel.getByTestId("item-title").getByText(title).waitFor();
    await panel.getByText("<b>bold?</b>").waitFor();
    assert.equal(await panel.locator("main b").count(), 0);
    await panel.keyboard.press("Escape");
    assert.equal(dialogs, 0);
  });

  test("j/k move through the queue, Enter opens the item and Esc goes back", async () => {
    await panel.locator("body").click({ position: { x: 5, y: 5 } });
    const rows = panel.getByTestId("queue-row");
    const ids = await rows.evaluateAll((all) => all.map((r) => r.dataset.changeId));
    assert.ok(ids.length >= 2);
    const current = () => panel.locator('[data-testid="queue-row"][aria-current="true"]').getAttribute("data-change-id");
    for (let i = 0; i < ids.length; i++) await panel.keyboard.press("k");
    assert.equal(await current(), ids[0]);
    await panel.keyboard.press("j");
    assert.equal(await current(), ids[1]);
    const title = await rows.nth(1).getByTestId("row-title").textContent();
    await panel.waitForFunction((id) => document.activeElement?.closest(`[data-change-id="${id}"]`), ids[1]);
    await panel.keyboard.press("Enter");
    await panel.getByTestId("item-title").getByText(title).waitFor();
    await panel.keyboard.press("Escape");
    await panel.locator(`[data-change-id="${ids[1]}"][aria-current="true"]`).waitFor();
  });

  test("Show on page outlines the item's elements on the demo stage", async () => {
    // A CSS path that names the heading without its test id.
    const titlePath = "section.orders > .section-head > h1";
    assert.equal(await stagePage.locator(titlePath).getAttribute("data-testid"), "orders.title");
    const change = await file("Toolbar is cramped", {
      capture: {
        stroke: [],
        elements: [
          { testId: "orders.export", tag: "button", text: "Export CSV" },
          { testId: "orders.removed-long-ago", tag: "button", text: "No such button" },
          { cssPath: titlePath, tag: "h1" },
        ],
      },
    });
    // The panel follows the stage's tab (and keeps following it while it is in front).
    await stagePage.bringToFront();
    await panel.getByTestId("scope-line").getByText("Stage main").waitFor();
    await panel.bringToFront();
    await waitingRow("Toolbar is cramped").locator(".row-main").click();
    await panel.getByRole("button", { name: "Show on page" }).click();
    const located = panel.getByTestId("located");
    await located.waitFor();
    assert.deepEqual(await located.locator("li").allInnerTexts(), [
      "orders.export: found by test id",
      "orders.removed-long-ago: not on this build",
      // Named as its chip names it (no test id, role, name or text here: its tag).
      "<h1>: found by CSS path",
    ]);
    const boxes = JSON.parse(await stagePage.locator("#redline-show-host").getAttribute("data-redline-boxes"));
    const expected = [await stagePage.getByTestId("orders.export").boundingBox(), await stagePage.getByTestId("orders.title").boundingBox()];
    assert.equal(boxes.length, 2);
    for (const [box, want] of boxes.map((b, i) => [b, expected[i]])) {
      for (const key of ["x", "y", "width", "height"]) {
        assert.ok(Math.abs(box[key] - want[key]) < 1, `${key}: ${box[key]} vs ${want[key]}`);
      }
    }
    assert.ok(change.changeId);
    assert.deepEqual(errors, []);

    await panel.keyboard.press("Escape");
    await assertAccessible(panel);
    for (const width of [320, 420]) await assertNoSidewaysScroll(width);
    await savePanelScreenshots(panel, "panel-queue");
  });

  test("the presence line and each claimed item say which agent is waiting, working or away", async () => {
    await panel.bringToFront();
    // An agent's wait names it on the event stream, as `redline wait --claimed-by agent-2` does.
    const waitStream = new AbortController();
    const stream = await fetch(`${server.url}/events/changes:${server.projectId}?claimedBy=agent-2`, {
      headers: { authorization: `Bearer ${server.token}`, accept: "text/event-stream" },
      signal: waitStream.signal,
    });
    assert.equal(stream.status, 200);
    const change = await file("Badge is the wrong blue");
    const presence = panel.getByTestId("presence-line");
    await presence.getByText("agent-2 waiting").waitFor({ timeout: 15_000 });
    await redline(["claim", "--change-ids", change.shortId, "--claimed-by", "agent-2"]);
    const claimed = panel.getByTestId("section-working").getByTestId("queue-row").filter({ hasText: "Badge is the wrong blue" });
    await claimed.getByText("claimed by agent-2, waiting").waitFor();
    await savePanelScreenshots(panel, "panel-presence");
    await assertAccessible(panel);

    // The wait ends: the agent is working (it wrote a moment ago), no longer waiting.
    waitStream.abort();
    await presence.getByText(/agent-2 working \(seen just now\)/).waitFor({ timeout: 15_000 });
    await claimed.getByText("claimed by agent-2, working").waitFor();
  });

  test("Dismiss and Reopen ask first; dismissed items show only when asked for", async () => {
    await panel.bringToFront();
    const change = await file("Not a real problem");
    await waitingRow("Not a real problem").locator(".row-main").click();
    await panel.getByRole("button", { name: "Dismiss" }).click();
    const confirm = panel.getByRole("alertdialog", { name: "Dismiss #" + change.shortId + "?" });
    await confirm.getByRole("button", { name: "Cancel" }).click();
    assert.equal((await server.rpc("getChange", { changeId: change.changeId })).change.status, "open");
    await panel.getByRole("button", { name: "Dismiss" }).click();
    await confirm.getByRole("button", { name: "Yes, dismiss" }).click();
    await panel.getByTestId("item-status").getByText("dismissed").waitFor();
    assert.equal((await server.rpc("getChange", { changeId: change.changeId })).change.status, "dismissed");
    await panel.keyboard.press("Escape");
    await row("Not a real problem").waitFor({ state: "detached" });
    await panel.getByLabel("Show dismissed").check();
    await panel.getByTestId("section-dismissed").getByText("Not a real problem").click();
    await panel.getByRole("button", { name: "Reopen" }).click();
    await panel.getByRole("alertdialog").getByRole("button", { name: "Yes, reopen" }).click();
    await panel.getByTestId("item-status").getByText("open").waitFor();
    await panel.keyboard.press("Escape");
    await waitingRow("Not a real problem").waitFor();
    await panel.getByLabel("Show dismissed").uncheck();
  });

  test("a long queue shows its first rows, and more as the person scrolls to its end", async () => {
    await panel.bringToFront();
    await panel.evaluate(() => window.scrollTo(0, 0));
    // The panel's reads of the items events named (`listChanges` with `changeIds`), once
    // answered, and a wait for the reads to have named each of some items.
    const named = [];
    let onNamed = () => {};
    const spy = (request) => {
      const { changeIds } = request.url().endsWith("/rpc/listChanges") ? JSON.parse(request.postData()).data : {};
      if (changeIds) {
        named.push(changeIds);
        onNamed();
      }
    };
    const namedAll = (ids) => new Promise((resolve) => {
      onNamed = () => {
        const read = new Set(named.flat());
        if (ids.every((id) => read.has(id))) resolve();
      };
      onNamed();
    });
    panel.on("requestfinished", spy);
    // More than a page (`pages::PAGE`, 50) of items in play, filed at once.
    const count = 60;
    const filed = [];
    for (let i = 1; i <= count; i++) {
      const { change } = await server.rpc("createChange", { stageId: server.stageId, title: `Paged item ${i}`, route: "/" });
      filed.push(change.changeId);
    }
    await namedAll(filed);
    named.length = 0;
    await server.rpc("releaseChanges", { stageId: server.stageId });
    // Each item was released by an event of its own. The panel reads the items the
    // events of a piece of the stream name in one call (`limit` ≤ 200), and those of the
    // pieces that come while it reads in the next: one call, or a few when the stream
    // arrives in pieces (the server flushes its events 16 at a time), never one an item.
    await namedAll(filed);
    panel.off("requestfinished", spy);
    const sizes = named.map((ids) => ids.length).join(", ");
    assert.ok(named.length <= Math.ceil(count / 16), `the release of ${count} items was read in ${named.length} listChanges calls (${sizes})`);
    assert.equal(named.flat().length, count, `each item is read once (${sizes})`);
    // None is held once the release has reached the panel.
    await panel.waitForFunction(() => ![...document.querySelectorAll('[data-testid="section-held"] [data-testid="queue-row"]')]
      .some((row) => /Paged item \d+/.test(row.textContent)));
    const paged = panel.getByTestId("queue-row").filter({ has: panel.getByTestId("row-title").getByText(/^Paged item \d+$/) });
    const pagedRow = (n) => panel.getByTestId("queue-row").filter({ has: panel.getByTestId("row-title").getByText(`Paged item ${n}`, { exact: true }) });
    // The newest first; the first page is shown, the rest is not (a server that pages has
    // not even sent them; one that does not has, and the panel shows a page at a time).
    await pagedRow(60).waitFor();
    await panel.getByTestId("queue-more").waitFor();
    const first = await paged.count();
    assert.ok(first < count, `the first page shows ${first} of ${count} items`);
    assert.equal(await pagedRow(1).count(), 0, "the oldest is not shown yet");
    await assertAccessible(panel, "the queue with more to show");
    // Scrolling to the end shows (or reads) more, until everything is there.
    for (let i = 0; i < 20 && (await pagedRow(1).count()) === 0; i++) {
      await panel.evaluate(() => window.scrollTo(0, document.scrollingElement.scrollHeight));
      await panel.waitForTimeout(200);
    }
    await pagedRow(1).waitFor();
    // All of them, once the rows read meanwhile are in (an assertion on a count taken
    // while the panel applies events would race with it).
    await panel.waitForFunction((count) => [...document.querySelectorAll('[data-testid="row-title"]')]
      .filter((title) => /^Paged item \d+$/.test(title.textContent)).length === count, count);
    assert.equal(await paged.count(), count);
    // The button does the same for the keyboard; at the end there is none.
    await panel.waitForFunction(() => document.querySelector('[data-testid="queue-more"]') === null || document.querySelector('[data-testid="queue-more"]').getAttribute("aria-busy") === "false");
    for (let i = 0; i < 50 && (await panel.getByTestId("queue-more").count()); i++) {
      await panel.getByTestId("queue-more").getByRole("button", { name: "Show more" }).click();
      await panel.waitForTimeout(100);
    }
    // Opening an item far down and going back returns to the same place in the list,
    // its rows as they were (kept, not built again), the item's row focused.
    await pagedRow(1).scrollIntoViewIfNeeded();
    const place = await panel.evaluate(() => window.scrollY);
    assert.ok(place > 0, "the oldest item is below the first screen");
    await pagedRow(1).evaluate((row) => (row.keptMark = true));
    await pagedRow(1).locator(".row-main").click();
    await panel.getByTestId("item-title").filter({ hasText: /Paged item 1$/ }).waitFor();
    assert.equal(await panel.evaluate(() => window.scrollY), 0, "the item is read from its top");
    await panel.keyboard.press("Escape");
    await panel.waitForFunction(() => document.activeElement?.closest('[data-testid="queue-row"]'));
    assert.equal(await panel.evaluate(() => window.scrollY), place);
    assert.equal(await pagedRow(1).evaluate((row) => row.keptMark === true && row.contains(document.activeElement)), true);
    await panel.evaluate(() => window.scrollTo(0, 0));
  });

  test("Settings signs in with a code approved on the server host", async () => {
    await panel.bringToFront();
    await panel.getByRole("button", { name: "Settings" }).click();
    await panel.getByRole("button", { name: "Get a sign-in code" }).click();
    const code = (await panel.getByTestId("sign-in-code").textContent()).trim();
    await server.admin("auth", "approve", code, "--project", "dev", "--scope", "changes:project:read,changes:project:file", "--name", "reviewer");
    await panel.getByTestId("connection-status").getByText("Connected as reviewer").waitFor();
    const settings = await storedSignIn(panel);
    assert.equal(settings.apiUrl, server.url);
    assert.notEqual(settings.token, server.token, "a token of its own");
  });
});

describe("the side panel while the server is away", () => {
  let server, browser, panel;
  const title = "Filed while the server is away";

  before(async () => {
    server = await prepareServer({ stageUrl: "http://127.0.0.1:9" });
    await server.start();
    browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
    panel = await openConnectedPanel(browser, server);
    await panel.getByTestId("queue-empty").waitFor();
  });

  after(async () => {
    await browser?.close();
    await server?.dispose();
  });

  const heldRow = () => panel.getByTestId("section-held").getByTestId("queue-row").filter({ hasText: title });

  test("an item still in the outbox shows as waiting to send, then as held once the server has it", async () => {
    await server.stop();
    // Sent exactly as the composer sends a draft.
    const draft = {
      changeId: randomUUID(),
      projectId: server.projectId,
      input: { stageId: server.stageId, title, route: "/orders" },
    };
    const reply = await panel.evaluate((draft) => chrome.runtime.sendMessage({ kind: "file", draft }), draft);
    assert.deepEqual(reply, { Ok: { changeId: draft.changeId } });
    const waiting = panel.getByTestId("outbox-row").filter({ hasText: title });
    await waiting.getByText("waiting to send").waitFor();
    await panel.getByTestId("section-held").getByText("waiting to send (1)").waitFor();

    await server.start();
    // Delivered on the outbox's next attempt (its backoff), then read by the panel.
    await heldRow().getByTestId("hold-status").getByText(/^held · goes to the agent in \d+\u00a0s$/).waitFor({ timeout: 60_000 });
    await waiting.waitFor({ state: "detached" });
    const { changes } = await server.rpc("listChanges", { projectId: server.projectId, includeDone: true, limit: 10 });
    assert.deepEqual(changes.map((change) => change.changeId), [draft.changeId]);
  });

  test("an edit or a withdraw that fails says so with a Retry, which does it", async () => {
    await heldRow().waitFor();
    const changeId = await heldRow().getAttribute("data-change-id");
    // Found by id: the edit changes its title.
    const row = panel.locator(`[data-testid="section-held"] [data-change-id="${changeId}"]`);
    const onServer = async () => (await server.rpc("getChange", { changeId })).change;

    await server.stop();
    await row.getByRole("button", { name: "Edit" }).click();
    await row.getByLabel("Title").fill("Edited while the server is away");
    await row.getByLabel("Title").press("Enter");
    const editFailure = row.getByRole("alert").filter({ hasText: "Could not edit: " });
    await editFailure.waitFor();
    await server.start();
    await editFailure.getByRole("button", { name: "Retry" }).click();
    await row.getByText("Edited while the server is away").waitFor();
    await editFailure.waitFor({ state: "detached" });
    assert.equal((await onServer()).title, "Edited while the server is away");

    await server.stop();
    await row.getByRole("button", { name: "Withdraw" }).click();
    const withdrawFailure = row.getByRole("alert").filter({ hasText: "Could not withdraw: " });
    await withdrawFailure.waitFor();
    await server.start();
    await withdrawFailure.getByRole("button", { name: "Retry" }).click();
    await row.waitFor({ state: "detached" });
    assert.equal((await onServer()).status, "dismissed", "withdrawn");
  });
});

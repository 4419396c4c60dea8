// The outbox: what the filer files is stored before any network call, delivered
// (uploadShot, then createChange) by the worker once the server is there — exactly once,
// also across a browser restart — and what the server refuses stays, with its message.
// Drafts are sent from the panel page exactly as the composer sends them; the outbox is
// read where the tray and the panel read it, as the worker publishes it.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { afterEach, describe, test } from "node:test";
import { launchBrowser, prepareServer, saveSignIn } from "./harness.mjs";

// A 1×1 PNG: uploadShot checks the bytes are the image type declared.
const PNG = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

// Chrome does not clamp an unpacked extension's alarms, so retries come after 2, 4, 8… s.
const DELIVERY_TIMEOUT_MS = 60_000;

describe("the outbox", () => {
  let server, browser;

  afterEach(async () => {
    await browser?.close();
    await server?.dispose();
    browser = server = undefined;
  });

  /** A server set up but not started, and a browser whose settings point at it. */
  async function setUp({ token } = {}) {
    server = await prepareServer({ stageUrl: "http://127.0.0.1:9" });
    browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
    const panel = await openPanel(browser);
    await saveSignIn(panel, { apiUrl: server.url, token: token ?? server.token });
    return panel;
  }

  const draft = (title, { screenshot } = {}) => ({
    changeId: randomUUID(),
    projectId: server.projectId,
    input: { stageId: server.stageId, title, route: "/orders" },
    ...(screenshot ? { screenshot: { contentType: "image/png", base64: PNG } } : {}),
  });

  const changesOnServer = async () =>
    (await server.rpc("listChanges", { projectId: server.projectId, includeDone: true, limit: 200 })).changes;

  test("filed with the server down, each item is delivered exactly once when it is back", async () => {
    const panel = await setUp();
    const drafts = [draft("Total is wrong", { screenshot: true }), draft("Button overlaps"), draft("Typo")];
    for (const d of drafts) {
      assert.deepEqual(await file(panel, d), { Ok: { changeId: d.changeId } });
    }
    // The composer may send a draft again if it missed the reply: it is queued once.
    assert.deepEqual(await file(panel, drafts[0]), { Ok: { changeId: drafts[0].changeId } });

    const waiting = await waitForOutbox(panel, (o) => o.items.length === 3 && o.items.every((item) => item.state === "retrying"));
    assert.equal(waiting.items.length, 3);
    assert.deepEqual(waiting.items.map((item) => item.changeId), drafts.map((d) => d.changeId));
    assert.match(waiting.items[0].message, /Cannot reach the server/);

    await server.start();
    await waitForOutbox(panel, (o) => o.items.length === 0, DELIVERY_TIMEOUT_MS);

    const changes = await changesOnServer();
    assert.equal(changes.length, 3);
    for (const d of drafts) {
      const filed = changes.filter((change) => change.changeId === d.changeId);
      assert.equal(filed.length, 1, `${d.input.title} filed once`);
      assert.equal(filed[0].title, d.input.title);
    }
    const withShot = changes.find((change) => change.changeId === drafts[0].changeId);
    assert.ok(withShot.screenshotKey, "the screenshot was uploaded and filed with the item");
    assert.deepEqual(
      [...changes].sort((a, b) => Number(a.shortId) - Number(b.shortId)).map((change) => change.changeId),
      drafts.map((d) => d.changeId),
      "filed in the order the filer filed them",
    );
  });

  test("a queued item survives a browser restart and is delivered after it", async () => {
    let panel = await setUp();
    const d = draft("Filed just before the restart", { screenshot: true });
    await file(panel, d);
    await waitForOutbox(panel, (o) => o.items[0]?.state === "retrying");

    browser = await browser.restart();
    panel = await openPanel(browser);
    // Published again by the restarted worker, from what IndexedDB kept.
    const after = await waitForOutbox(panel, (o) => o.items.length === 1);
    assert.equal(after.items[0].changeId, d.changeId);

    await server.start();
    await waitForOutbox(panel, (o) => o.items.length === 0, DELIVERY_TIMEOUT_MS);
    assert.deepEqual((await changesOnServer()).map((change) => change.changeId), [d.changeId]);
  });

  test("an item the server refuses stays in the outbox with the server's message", async () => {
    const panel = await setUp();
    await server.start();
    const refused = draft("   "); // the server: 400 "title: must not be empty"
    const fine = draft("Fine");
    await file(panel, refused);
    await file(panel, fine);

    const outbox = await waitForOutbox(panel, (o) => o.items.length === 1 && o.items[0].state === "attention");
    assert.equal(outbox.items[0].changeId, refused.changeId);
    assert.match(outbox.items[0].message, /title/);
    assert.equal(outbox.items[0].nextAttemptAt, null, "not retried on its own");
    assert.deepEqual((await changesOnServer()).map((change) => change.changeId), [fine.changeId]);
  });

  test("with a refused token the item waits for sign-in and goes once the settings are fixed", async () => {
    const panel = await setUp({ token: "rl_not_a_real_token" });
    await server.start();
    const d = draft("Filed while signed out");
    await file(panel, d);
    const outbox = await waitForOutbox(panel, (o) => o.items[0]?.state === "signIn");
    assert.match(outbox.items[0].message, /Sign in again/);

    await saveSignIn(panel, { apiUrl: server.url, token: server.token });
    await waitForOutbox(panel, (o) => o.items.length === 0, DELIVERY_TIMEOUT_MS);
    assert.deepEqual((await changesOnServer()).map((change) => change.changeId), [d.changeId]);
  });
});

async function openPanel(browser) {
  const panel = await browser.context.newPage();
  await panel.goto(browser.extensionUrl("panel.html"));
  return panel;
}

const send = (page, message) => page.evaluate((m) => chrome.runtime.sendMessage(m), message);

const file = (page, draft) => send(page, { kind: "file", draft });

/** Reads the outbox the worker publishes until `done(outbox)`; resolves with that outbox. */
async function waitForOutbox(page, done, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  let outbox;
  while (Date.now() < deadline) {
    outbox = (await page.evaluate(() => chrome.storage.session.get("outbox"))).outbox ?? { items: [] };
    if (done(outbox)) return outbox;
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
  assert.fail(`the outbox did not get there in ${timeoutMs} ms: ${JSON.stringify(outbox)}`);
}

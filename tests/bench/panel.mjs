// The side panel on a 10,000-item project, in Chromium, against a scripted API that
// pages like ours (`cursor`, `order`, `changeIds` → `nextCursor`, `total`), so the list
// and the events are under the bench's control; the panel code is what ships:
// - first paint: the answer to the first page of items in play leaves the server → its
//   rows in the DOM, laid out;
// - next page: "Show more" clicked (in the page, no read under way) → the next page read
//   and its rows laid out; against plain DOM code asking for the same page and rendering
//   its rows, the clock running from the ask;
// - back to 1,000 items: with 1,000 items read (20 pages), an item opened and Esc
//   pressed → every row read shown and laid out (the queue stays built, hidden, behind
//   the item);
// - one event: an SSE event leaves the server → the panel reads that one row
//   (`changeIds`) and shows the change; and the same on a server that ignores
//   `changeIds` and does not page (Fabric, ours before #25), where the panel re-reads the
//   lists whole on every event, as it did before paging.
// The anchor, measured in the same run and page: plain DOM code (createElement +
// textContent, no framework) that asks for the same first page from the same server and
// renders its rows, the clock running from the answer leaving, as for the panel; and the
// same code rendering as many rows as the panel holds from their JSON (parse included).
// Run with `cargo xtask bench panel`. Prints medians and 90th percentiles.
import { createServer } from "node:http";
import { launchBrowser } from "../e2e/harness.mjs";

const RUNS = Number(process.env.RUNS ?? 10);
const ITEMS = 10_000;
const LOADED = 1_000;
const stats = (xs) => {
  const sorted = [...xs].sort((a, b) => a - b);
  const at = (q) => sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];
  return { median: at(0.5), p90: at(0.9) };
};
const fmt = ({ median, p90 }) => `median ${median.toFixed(1)} ms, p90 ${p90.toFixed(1)} ms`;

// ---- the scripted API ----
const project = { projectId: "p1", name: "bench" };
const iso = (ms) => new Date(ms).toISOString();
const now = Date.now();
const inPlay = ["open", "open", "open", "claimed", "needs_answer", "in_progress"];
// 1,200 items in play, 200 dismissed, the rest done (a team's history), summaries as our
// server lists them.
const statusOf = (i) => (i % 25 < 3 ? inPlay[(Math.floor(i / 25) + i) % inPlay.length] : i % 50 === 7 ? "dismissed" : "done");
const changes = Array.from({ length: ITEMS }, (_, i) => {
  const status = statusOf(i);
  return {
    changeId: `00000000-0000-4000-8000-${String(i).padStart(12, "0")}`,
    shortId: String(i + 1),
    projectId: "p1",
    stageId: "s1",
    groupId: status === "claimed" || status === "in_progress" ? "g1" : null,
    title: `Item ${i + 1}: the export button overlaps the search box`,
    body: null,
    status,
    route: "/orders",
    gitSha: null,
    deploymentId: null,
    locale: null,
    viewport: null,
    capture: null,
    screenshotKey: null,
    consoleErrors: [],
    source: "extension",
    filedBy: "dev",
    branch: status === "done" ? "main" : null,
    headCommit: status === "done" ? "a91c4e2f00d" : null,
    resolvedAt: null,
    live: status === "done" ? i % 200 === 1 : null,
    createdAt: iso(now - (ITEMS - i) * 60_000),
    held: false,
    heldUntil: null,
    elementCount: 3,
    consoleErrorCount: 0,
    messageCount: 0,
  };
});
const groups = [{ groupId: "g1", projectId: "p1", title: "Changes on /orders", claimedBy: "claude", claimExpiresAt: iso(now + 3_600_000), createdAt: iso(now), fence: 1 }];
const closed = new Set(["done", "dismissed"]);

// `paged`: like our server; otherwise like one that ignores the new fields.
let paged = true;
const list = (input) => {
  const limit = Math.min(input.limit ?? 50, 200);
  let xs = changes.filter((c) => (input.status ? input.status.includes(c.status) : input.includeDone || !closed.has(c.status)));
  if (!paged) return { changes: xs.slice(0, limit), groups };
  if (input.changeIds) xs = xs.filter((c) => input.changeIds.includes(c.changeId));
  const newest = input.order === "newest";
  if (newest) xs.reverse();
  const total = xs.length;
  if (input.cursor) xs = xs.filter((c) => (newest ? Number(c.shortId) < Number(input.cursor) : Number(c.shortId) > Number(input.cursor)));
  const page = xs.slice(0, limit);
  return { changes: page, groups, total, ...(xs.length > limit ? { nextCursor: page.at(-1).shortId } : {}) };
};
const isFirstPage = (input) => !input.includeDone && !input.cursor && !input.changeIds;

let asked = null;
let lastPaged = null; // the last page the panel read after a cursor (the next-page anchor asks it again)
let holdFirst = null; // a promise the first page's answer waits for (the first-paint bench starts it)
let seq = 0;
const streams = new Set();

const server = createServer(async (request, response) => {
  const cors = { "Access-Control-Allow-Origin": "*", "Access-Control-Allow-Headers": "*", "Access-Control-Allow-Methods": "GET, POST" };
  if (request.method === "OPTIONS") return response.writeHead(204, cors).end();
  if (request.url.startsWith("/events/")) {
    response.writeHead(200, { ...cors, "Content-Type": "text/event-stream", "Cache-Control": "no-store" });
    response.write(": connected\n\n");
    streams.add(response);
    request.on("close", () => streams.delete(response));
    return;
  }
  let body = "";
  for await (const chunk of request) body += chunk;
  const name = request.url.replace("/rpc/", "");
  const input = body ? JSON.parse(body).data ?? {} : {};
  if (name === "listChanges" && input.cursor) lastPaged = input;
  const json = (value, status = 200) => response.writeHead(status, { ...cors, "Content-Type": "application/json" }).end(typeof value === "string" ? value : JSON.stringify(value));
  switch (name) {
    case "getSession":
      return json({ userId: "u1", name: "dev", projects: [project], scopes: ["changes:project:read", "changes:project:file"] });
    case "resolveStage":
      return json({ message: "no stage", code: "not_found" }, 404);
    case "countChanges":
      return json({ byStatus: { open: 0, claimed: 0, needs_answer: 0, in_progress: 0, done: 0, dismissed: 0 }, held: 0, waiting: [], waitingTotal: 0 });
    case "getChange":
      return json({ change: changes.find((c) => c.changeId === input.changeId), thread: [], stageUrl: null });
    case "listChanges": {
      const answer = JSON.stringify(list(input));
      if (isFirstPage(input)) {
        if (holdFirst) {
          asked?.();
          await holdFirst;
        }
      }
      return json(answer);
    }
    default:
      return json({ message: `not scripted: ${name}`, code: "not_found" }, 404);
  }
});
await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
const apiUrl = `http://127.0.0.1:${server.address().port}`;

const browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
const panel = await browser.context.newPage();
await panel.setViewportSize({ width: 420, height: 900 });
await panel.goto(browser.extensionUrl("panel.html"));
await panel.evaluate((apiUrl) => chrome.storage.local.set({ settings: { apiUrl, token: "bench" } }), apiUrl);

/**
 * Starts the clock and watches the page until `selector` matches `count` elements (at
 * least), or its first match has the text `text`; the time is taken after layout.
 * `key`, if given, is pressed in the page once the clock runs; `click`, a selector, is
 * clicked.
 */
const watch = (condition) =>
  panel.evaluate(({ selector, count, text, key, click }) => {
    // Rows kept hidden behind an open item are in the document but not shown: only
    // shown ones count.
    const done = () =>
      count !== undefined
        ? document.querySelectorAll(selector).length >= count && document.querySelector(selector).checkVisibility()
        : document.querySelector(selector)?.textContent === text;
    window.benchDone = new Promise((resolve) => {
      const observer = new MutationObserver(() => {
        if (done()) {
          document.body.offsetHeight; // layout included
          observer.disconnect();
          resolve(performance.now());
        }
      });
      observer.observe(document.body, { subtree: true, childList: true, characterData: true, attributes: true });
    });
    window.benchStart = performance.now();
    if (key) window.dispatchEvent(new KeyboardEvent("keydown", { key }));
    if (click) document.querySelector(click).click();
  }, condition);
const elapsed = () => panel.evaluate(async () => (await window.benchDone) - window.benchStart);
const rowCount = () => panel.evaluate(() => document.querySelectorAll('[data-testid="queue-row"]').length);
const ROW = '[data-testid="queue-row"]';

/** Plain DOM code: the rows of a `listChanges` answer's JSON, then layout. */
const plainRows = () => {
  window.renderRows = (host, text) => {
    const { changes } = JSON.parse(text);
    const list = document.createElement("ul");
    list.setAttribute("role", "list");
    for (const c of changes) {
      const li = document.createElement("li");
      li.className = c.status === "done" ? "row done" : "row";
      const button = document.createElement("button");
      const number = document.createElement("span");
      number.className = "number";
      number.textContent = `#${c.shortId}`;
      const title = document.createElement("span");
      title.className = "title";
      title.textContent = c.title;
      button.append(number, title);
      const line = document.createElement("span");
      line.className = "hint row-line";
      line.textContent = c.branch ? `${c.branch} @ ${c.headCommit.slice(0, 7)}` : c.createdAt;
      li.append(button, line);
      list.append(li);
    }
    host.replaceChildren(list);
    document.body.offsetHeight;
  };
};
const reloadPanel = async () => {
  await panel.reload();
  await panel.getByTestId("connection-status").getByText("Connected as").waitFor();
  await panel.evaluate(plainRows);
};
let requested = null; // resolves when the held first page is asked for
const waitForRequest = () => requested;

// ---- first paint of the 10,000-item project ----
const firstPaint = [];
const firstPaintAnchor = [];
const pageRows = 50; // the panel's page (`pages::PAGE`)
for (let i = 0; i < RUNS; i++) {
  let release;
  const ask = () => (requested = new Promise((resolve) => (asked = resolve)));
  ask();
  holdFirst = new Promise((resolve) => (release = resolve));
  await reloadPanel();
  await waitForRequest();
  await watch({ selector: ROW, count: pageRows });
  release();
  firstPaint.push(await elapsed());
  // The anchor in the same conditions: plain code asks for the same page, and the clock
  // runs from the answer leaving to its rows laid out.
  ask();
  holdFirst = new Promise((resolve) => (release = resolve));
  await panel.evaluate((apiUrl) => {
    const host = document.createElement("section");
    host.className = "queue-section bench-anchor";
    document.querySelector("main").prepend(host);
    const input = { projectId: "p1", includeDone: false, limit: 50, order: "newest" };
    window.benchAnchor = fetch(`${apiUrl}/rpc/listChanges`, {
      method: "POST",
      headers: { Authorization: "Bearer bench", "Content-Type": "application/json" },
      body: JSON.stringify({ data: input }),
    })
      .then((response) => response.text())
      .then((text) => window.renderRows(host, text));
  }, apiUrl);
  await waitForRequest();
  await watch({ selector: ".bench-anchor li", count: pageRows });
  release();
  firstPaintAnchor.push(await elapsed());
  await panel.evaluate(() => window.benchAnchor.then(() => document.querySelector(".bench-anchor").remove()));
}
holdFirst = null;
await panel.getByTestId("link-state").getByText("live").waitFor();

// ---- the next pages, to 1,000 items: "Show more" → 50 more rows laid out ----
// Scrolling the end into view reads a page by itself (not timed): the bench waits for
// it, which leaves the end well below the view, and then clicks "Show more" in the page
// as the clock starts, so no read is under way and no scroll starts one. After each, the
// anchor: plain DOM code asks for the same page (the panel's last `listChanges` with a
// cursor) and renders it, the clock running from the ask.
const nextPage = [];
const nextPageAnchor = [];
const more = panel.getByTestId("queue-more").getByRole("button");
await panel.waitForFunction((n) => document.querySelectorAll('[data-testid="queue-more"]').length && document.querySelectorAll('[data-testid="queue-row"]').length >= n, pageRows);
const settledAt = (n) =>
  panel.waitForFunction(
    (n) => document.querySelectorAll('[data-testid="queue-row"]').length >= n && document.querySelector('[data-testid="queue-more"]')?.getAttribute("aria-busy") !== "true",
    n,
  );
while ((await rowCount()) < LOADED) {
  await more.scrollIntoViewIfNeeded();
  await settledAt((await rowCount()) + 50);
  const at = await rowCount();
  if (at >= LOADED) break;
  await watch({ selector: ROW, count: at + 50, click: '[data-testid="queue-more"] button' });
  nextPage.push(await elapsed());
  await settledAt(at + 50);
  const input = lastPaged;
  nextPageAnchor.push(
    await panel.evaluate(async ({ apiUrl, input }) => {
      const host = document.createElement("section");
      host.className = "queue-section bench-anchor";
      document.querySelector("main").prepend(host);
      const started = performance.now();
      const response = await fetch(`${apiUrl}/rpc/listChanges`, {
        method: "POST",
        headers: { Authorization: "Bearer bench", "Content-Type": "application/json" },
        body: JSON.stringify({ data: input }),
      });
      window.renderRows(host, await response.text());
      const took = performance.now() - started;
      host.remove();
      return took;
    }, { apiUrl, input }),
  );
}
const loaded = await rowCount();

// ---- back to the queue from an item, with 1,000 items read ----
const remount = [];
for (let i = 0; i < RUNS; i++) {
  await panel.locator(ROW).first().locator(".row-main").click();
  await panel.getByRole("article", { name: "Item" }).waitFor();
  await watch({ selector: ROW, count: loaded, key: "Escape" });
  remount.push(await elapsed());
}

// ---- one event: an item's status and title change ----
const openItems = changes.filter((c, i) => statusOf(i) === "open").reverse(); // newest first, as read
const eventOn = async (item) => {
  const title = `Retitled ${seq + 1}`;
  await watch({ selector: `[data-change-id="${item.changeId}"] [data-testid="row-title"]`, text: title });
  item.title = title;
  item.status = "needs_answer";
  seq += 1;
  for (const stream of streams) stream.write(`id: ${seq}\ndata: ${JSON.stringify({ type: "asked", changeId: item.changeId, shortId: item.shortId, seq })}\n\n`);
  return elapsed();
};
const event = [];
for (let i = 0; i < RUNS; i++) event.push(await eventOn(openItems[i]));

// ---- the same on a server that ignores the new fields: lists read whole, re-read per event ----
paged = false;
await reloadPanel();
await panel.getByTestId("link-state").getByText("live").waitFor();
const oldest = changes.filter((c) => c.status === "open"); // oldest first, as such a server lists
// The oldest items come first in "Needs your answer" (questions are answered in order),
// so each row the events below move there is shown.
await panel.waitForFunction(() => document.querySelectorAll('[data-testid="queue-row"]').length >= 50);
await panel.waitForTimeout(500);
// The first events find out that `changeIds` is ignored (the oldest item is the one such
// a server answers first, so the first asks for it by chance).
await eventOn(oldest[0]);
await eventOn(oldest[1]);
const relist = [];
for (let i = 2; i < RUNS + 2; i++) relist.push(await eventOn(oldest[i]));

// ---- the anchor: plain DOM code rendering as many rows from the same JSON ----
const thousand = JSON.stringify({ changes: changes.filter((c) => !closed.has(c.status)).reverse().slice(0, loaded), groups });
await panel.evaluate(plainRows);
const anchorThousand = stats(
  await panel.evaluate(async ({ text, runs }) => {
    // Inside a section like the panel's, so the rows get the same styles (off-screen rows
    // skip layout in both).
    const host = document.createElement("section");
    host.className = "queue-section";
    document.querySelector("main").prepend(host);
    const times = [];
    for (let i = 0; i < runs; i++) {
      host.replaceChildren();
      document.body.offsetHeight;
      const t = performance.now();
      window.renderRows(host, text);
      times.push(performance.now() - t);
    }
    host.remove();
    return times;
  }, { text: thousand, runs: RUNS }),
);
const anchorPage = stats(firstPaintAnchor);

const rows = [
  [`panel: first paint, ${pageRows} of ${ITEMS.toLocaleString("en")} items`, stats(firstPaint), anchorPage],
  ["anchor: plain DOM, the same page asked and rendered", anchorPage, anchorPage],
  [`panel: next page (+50 rows, ${nextPage.length} clicks)`, stats(nextPage), stats(nextPageAnchor)],
  ["anchor: plain DOM, the same next page asked and rendered", stats(nextPageAnchor), stats(nextPageAnchor)],
  [`panel: ${loaded.toLocaleString("en")} items read, back from an item`, stats(remount), anchorThousand],
  [`anchor: plain DOM, ${loaded.toLocaleString("en")} rows`, anchorThousand, anchorThousand],
  ["panel: one event, the row read (changeIds)", stats(event), stats(relist)],
  ["panel: one event, lists re-read (no changeIds)", stats(relist), stats(relist)],
];
for (const [label, s, vs] of rows) {
  console.log(`${label.padEnd(52)} ${fmt(s)}  (${(s.median / vs.median).toFixed(2)}× its anchor)`);
}

await browser.close();
server.closeAllConnections();
server.close();

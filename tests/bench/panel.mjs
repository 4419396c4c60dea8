// The side panel on a 1,000-item queue, in Chromium, against a scripted API (so the
// list and the events are under the bench's control; the panel code is what ships):
// - render: the list's answer leaves the server → 1,000 rows in the DOM, laid out;
// - one event: an SSE event leaves the server → the panel re-reads the list and the
//   changed row shows the change (re-read, diff, re-render), on the same 1,000 items.
// The anchor, measured in the same run and page: plain DOM code rendering the same rows
// from the same JSON (createElement + textContent, no framework), all of them for the
// render and all of them again for the event (what a re-render without keys costs).
// Run with `cargo xtask bench`. Prints medians and 90th percentiles.
import { createServer } from "node:http";
import { launchBrowser } from "../e2e/harness.mjs";

const RUNS = Number(process.env.RUNS ?? 10);
const ITEMS = 1000;
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
const statuses = ["open", "open", "open", "open", "claimed", "claimed", "needs_answer", "in_progress", "done", "done"];
const changes = Array.from({ length: ITEMS }, (_, i) => {
  const status = statuses[i % statuses.length];
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
    live: status === "done" ? i % 20 === 0 : null,
    createdAt: iso(now - (ITEMS - i) * 60_000),
    held: false,
    heldUntil: null,
  };
});
const groups = [{ groupId: "g1", projectId: "p1", title: "Changes on /orders", claimedBy: "claude", claimExpiresAt: iso(now + 3_600_000), createdAt: iso(now), fence: 1 }];

let holdList = null; // a promise the list answer waits for (the render bench starts it)
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
  const json = (value, status = 200) => response.writeHead(status, { ...cors, "Content-Type": "application/json" }).end(JSON.stringify(value));
  switch (name) {
    case "getSession":
      return json({ userId: "u1", name: "dev", projects: [project], scopes: ["changes:project:read", "changes:project:file"] });
    case "resolveStage":
      return json({ message: "no stage", code: "not_found" }, 404);
    case "listChanges": {
      if (input.status) return json({ changes: changes.filter((c) => input.status.includes(c.status)), groups });
      if (holdList) await holdList;
      return json({ changes, groups });
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
 * Starts the clock and watches the page until `selector` matches `count` elements, or
 * its first match has the text `text`; the time is taken after layout.
 */
const watch = (condition) =>
  panel.evaluate(({ selector, count, text }) => {
    const done = () =>
      count !== undefined
        ? document.querySelectorAll(selector).length === count
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
  }, condition);
const elapsed = () => panel.evaluate(async () => (await window.benchDone) - window.benchStart);

// ---- render 1,000 rows ----
const render = [];
for (let i = 0; i < RUNS; i++) {
  let release;
  holdList = new Promise((resolve) => (release = resolve));
  await panel.reload();
  await panel.getByTestId("connection-status").getByText("Connected as").waitFor();
  await panel.getByText("Reading the queue").waitFor();
  await watch({ selector: '[data-testid="queue-row"]', count: ITEMS });
  release();
  render.push(await elapsed());
}
holdList = null;
await panel.getByTestId("link-state").getByText("live").waitFor();

// ---- one event on 1,000 rows: an item's status and title change ----
const event = [];
for (let i = 0; i < RUNS; i++) {
  const item = changes[i * 10]; // an `open` item, in "Waiting"
  const title = `Retitled ${i}`;
  await watch({ selector: `[data-change-id="${item.changeId}"] [data-testid="row-title"]`, text: title });
  item.title = title;
  item.status = "needs_answer";
  seq += 1;
  for (const stream of streams) stream.write(`id: ${seq}\ndata: ${JSON.stringify({ type: "asked", changeId: item.changeId, shortId: item.shortId, seq })}\n\n`);
  event.push(await elapsed());
}

// ---- the anchor: plain DOM code on the same JSON ----
const anchor = await panel.evaluate(async ({ changes, groups, runs }) => {
  const text = JSON.stringify({ changes, groups });
  const renderAll = (host) => {
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
  // Inside a section like the panel's, so the rows get the same styles (off-screen rows
  // skip layout in both).
  const host = document.createElement("section");
  host.className = "queue-section";
  document.querySelector("main").append(host);
  const render = [];
  const rerender = [];
  for (let i = 0; i < runs; i++) {
    host.replaceChildren();
    document.body.offsetHeight;
    let t = performance.now();
    renderAll(host);
    render.push(performance.now() - t);
    t = performance.now();
    renderAll(host);
    rerender.push(performance.now() - t);
  }
  host.remove();
  return { render, rerender };
}, { changes, groups, runs: RUNS });

const rows = [
  ["panel: render 1,000 items", stats(render), stats(anchor.render)],
  ["anchor: plain DOM, 1,000 rows", stats(anchor.render), stats(anchor.render)],
  ["panel: one event on 1,000 items", stats(event), stats(anchor.rerender)],
  ["anchor: plain DOM re-render of 1,000", stats(anchor.rerender), stats(anchor.rerender)],
];
for (const [label, s, vs] of rows) {
  console.log(`${label.padEnd(38)} ${fmt(s)}  (${(s.median / vs.median).toFixed(2)}× its anchor)`);
}

await browser.close();
server.closeAllConnections();
server.close();

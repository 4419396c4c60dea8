// Circle → item, on a 10,000-element page, in Chromium with the built extension and a
// real server. Run with `cargo xtask bench` (or `cargo xtask bench capture`). Reports
// medians and 90th percentiles of:
// - release → elements captured (the content script's own User Timing measure), against
//   the anchor "naive scan": a getBoundingClientRect of every element, in the same page.
//   The content script reads the page while the lasso is drawn, so this is measured for
//   a lasso drawn at a hand's pace (48 moves, one after the other, at least 12.5 ms
//   apart) and for a quick flick (48 moves sent 5 ms apart, about 0.25 s, whatever the
//   browser's lag: little time to read ahead); and the reading done during the stroke is
//   reported too: its longest slice, its total, and the longest frame in the page and in
//   the overlay while the lasso is drawn;
// - release → composer open (capture, screenshot, annotation);
// - Enter → item stored on the server (outbox, upload, createChange): until the server
//   answers the worker's `createChange`, which it does once the item is committed (the
//   bench then checks that `listChanges` finds it, untimed); and where that time went:
//   the composer until it hands the item to the worker, the worker until its first call
//   leaves, and each call to the server (`uploadShot`, `createChange`), timed by
//   wrapping `sendMessage` in the overlay and `fetch` in the worker; against the anchor
//   "the worker's calls sent from the bench": the same `uploadShot` and `createChange`
//   sent again from here back to back.
import { drawLasso, launchBrowser, openConnectedPanel, openOverlay, prepareServer, startStage } from "../e2e/harness.mjs";

const RUNS = Number(process.env.RUNS ?? 10);
const quantile = (xs, q) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor(q * xs.length))];
const row = (label, xs, anchor) => {
  const ratio = anchor ? `  ${(quantile(xs, 0.5) / quantile(anchor, 0.5)).toFixed(2)}× the anchor` : "";
  return `${label.padEnd(52)} median ${quantile(xs, 0.5).toFixed(1)} ms, p90 ${quantile(xs, 0.9).toFixed(1)} ms${ratio}`;
};

/** Grows the page to 10,000 elements: a grid of 1,110 cards of 10 elements each. */
async function growPage(page) {
  return page.evaluate(() => {
    const grid = document.createElement("section");
    grid.style.cssText = "display:flex;flex-wrap:wrap;gap:4px;padding:8px";
    for (let i = 0; i < 1110; i++) {
      const card = document.createElement("article");
      card.dataset.testid = `card-${i}`;
      card.style.cssText = "width:108px;height:64px;border:1px solid #ccc;font-size:9px;overflow:hidden";
      card.innerHTML = `<h3 data-testid="cards.title">Card ${i}</h3><p>Line <b>bold</b> <i>it</i></p>` +
        `<span>a</span><span>b</span><button data-testid="cards.open">Open</button><a href="#${i}">link</a>`;
      grid.append(card);
    }
    document.body.prepend(grid);
    return document.querySelectorAll("*").length;
  });
}

const stage = await startStage();
const server = await prepareServer({ stageUrl: stage.url });
await server.start();
const browser = await launchBrowser({ grantOrigins: ["http://127.0.0.1/*"] });
try {
  // The harness routes every request through this process to refuse the internet; that
  // costs each of the worker's calls a round trip over the DevTools protocol (45 ms on a
  // screenshot's upload), which no filer waits for. Everything here is on this machine.
  await browser.context.unrouteAll();
  await openConnectedPanel(browser, server);
  const { page, overlay } = await openOverlay(browser, `${stage.url}/`);
  // Grown after the overlay is up, so the overlay host stays outside the grid.
  const elements = await growPage(page);
  const kinds = () => ({ paced: [], quick: [] });
  const capture = kinds(), drawn = kinds(), slices = { longest: kinds(), total: kinds(), count: kinds() };
  const frames = { page: kinds(), overlay: kinds() };
  // The longest gap between animation frames while the lasso is drawn, in the page (where
  // the reading ahead runs) and in the overlay (where the lasso is drawn).
  const watchFrames = () => {
    globalThis.redlineBenchFrames = { times: [], on: true };
    const tick = (t) => {
      redlineBenchFrames.times.push(t);
      if (redlineBenchFrames.on) requestAnimationFrame(tick);
    };
    requestAnimationFrame(tick);
  };
  const longestFrame = () => {
    redlineBenchFrames.on = false;
    const t = redlineBenchFrames.times;
    return Math.max(0, ...t.slice(1).map((x, i) => x - t[i]));
  };
  // When the overlay hands a call to the worker, and when each of the worker's calls to
  // the server leaves and is answered (`Date.now()`, comparable with the bench's).
  const watchSends = () => {
    globalThis.redlineBenchSends = [];
    if (globalThis.redlineBenchSendsWrapped) return;
    globalThis.redlineBenchSendsWrapped = true;
    const send = chrome.runtime.sendMessage.bind(chrome.runtime);
    chrome.runtime.sendMessage = (message, ...rest) => {
      redlineBenchSends.push({ kind: message?.kind, at: Date.now() });
      return send(message, ...rest);
    };
  };
  // `redlineBenchFiled` resolves with the first `createChange` the worker has had answered.
  const watchFetches = () => {
    globalThis.redlineBenchFetches = [];
    globalThis.redlineBenchFiled = new Promise((resolve) => (globalThis.redlineBenchOnFiled = resolve));
    if (globalThis.redlineBenchFetchWrapped) return;
    globalThis.redlineBenchFetchWrapped = true;
    const fetch = globalThis.fetch.bind(globalThis);
    globalThis.fetch = async (input, ...rest) => {
      const url = typeof input === "string" ? input : input.url;
      const call = { name: url.split("/").at(-1), started: Date.now() };
      if (call.name === "uploadShot" || call.name === "createChange") call.body = await input.clone().text();
      const response = await fetch(input, ...rest);
      call.ended = Date.now();
      call.status = response.status;
      redlineBenchFetches.push(call);
      if (call.name === "createChange") redlineBenchOnFiled(call);
      return response;
    };
  };
  const naive = [], composer = [], stored = [], phases = {}, storedPhases = {}, storedAnchor = [];
  for (let run = 0; run < 2 * RUNS; run++) {
    // Alternating, so both kinds see the same machine.
    const kind = run % 2 === 0 ? "paced" : "quick";
    await page.evaluate(() => performance.clearMeasures());
    const stroke = kind === "paced" ? { pace: 12.5 } : { pace: 5, queue: true };
    await page.evaluate(watchFrames);
    await overlay.evaluate(watchFrames);
    const drawing = Date.now();
    await drawLasso(page, { x: 300, y: 150, width: 420, height: 280 }, { release: false, ...stroke });
    drawn[kind].push(Date.now() - drawing);
    frames.page[kind].push(await page.evaluate(longestFrame));
    frames.overlay[kind].push(await overlay.evaluate(longestFrame));
    const released = Date.now();
    await page.mouse.up();
    const box = overlay.getByRole("dialog", { name: "Say what is wrong" });
    await box.waitFor();
    composer.push(Date.now() - released);
    capture[kind].push(await page.evaluate(() => performance.getEntriesByName("redline:capture").at(-1).duration));
    // What the content script read while the lasso was drawn: one measure per stroke.
    const spent = await page.evaluate(() => performance.getEntriesByName("redline:stroke").at(-1).detail);
    slices.longest[kind].push(spent.longest);
    slices.total[kind].push(spent.total);
    slices.count[kind].push(spent.slices);
    // Where the release's time went: the content script's measures of its phases.
    const releasePhases = await page.evaluate(() =>
      performance.getEntriesByType("measure").filter((e) => e.name.startsWith("redline:capture:"))
        .map((e) => [e.name.slice("redline:capture:".length), e.duration]));
    for (const [name, duration] of releasePhases) (phases[`${kind} stroke, release: ${name}`] ??= []).push(duration);
    naive.push(await page.evaluate(() => {
      const started = performance.now();
      let area = 0;
      for (const element of document.querySelectorAll("*")) {
        const r = element.getBoundingClientRect();
        area += r.width * r.height;
      }
      return area >= 0 ? performance.now() - started : 0;
    }));
    const title = `Bench item ${run}`;
    await box.getByRole("textbox").fill(title);
    await overlay.evaluate(watchSends);
    const worker = browser.context.serviceWorkers()[0];
    await worker.evaluate(watchFetches);
    const entered = Date.now();
    await box.getByRole("textbox").press("Enter");
    const filed = await worker.evaluate(() => redlineBenchFiled);
    if (filed.status !== 200) throw new Error(`createChange answered ${filed.status}`);
    stored.push(filed.ended - entered);
    const { changes } = await server.rpc("listChanges", { projectId: server.projectId });
    if (!changes.some((c) => c.title === title)) throw new Error("the filed item was not listed");
    const sent = await overlay.evaluate(() => redlineBenchSends.find((s) => s.kind === "file")?.at);
    const calls = await worker.evaluate(() => redlineBenchFetches);
    const marks = [["composer: Enter → item handed to the worker", sent]];
    for (const call of calls.filter((c) => c.name === "uploadShot" || c.name === "createChange")) {
      marks.push([`worker: → ${call.name} asked`, call.started], [`server: ${call.name}`, call.ended]);
    }
    // The anchor: the same two calls the worker made, sent again from here back to back.
    const upload = calls.find((c) => c.name === "uploadShot");
    const replayed = JSON.parse(filed.body);
    replayed.data.title = `${title} (anchor)`;
    replayed.data.changeId = crypto.randomUUID();
    const started = Date.now();
    if (upload) replayed.data.screenshotKey = (await server.rpc("uploadShot", JSON.parse(upload.body).data)).screenshotKey;
    await server.rpc("createChange", replayed.data);
    storedAnchor.push(Date.now() - started);
    const listed = await server.rpc("listChanges", { projectId: server.projectId });
    if (!listed.changes.some((c) => c.title === replayed.data.title)) throw new Error("the anchor's item was not listed");
    let previous = entered;
    for (const [name, at] of marks) {
      if (at === undefined) continue;
      (storedPhases[`Enter → stored: ${name}`] ??= []).push(at - previous);
      previous = at;
    }
  }
  console.log(`page: ${elements} elements; lasso over a 420×280 px region; ${RUNS} runs of each stroke`);
  console.log(row("naive scan (anchor)", naive));
  for (const kind of ["paced", "quick"]) {
    console.log(row(`${kind} stroke: drawing it`, drawn[kind]));
    console.log(row(`${kind} stroke: release → elements captured`, capture[kind], naive));
    console.log(row(`${kind} stroke: longest slice while drawing`, slices.longest[kind]));
    console.log(row(`${kind} stroke: all slices while drawing`, slices.total[kind]));
    console.log(`${kind} stroke: slices while drawing: median ${quantile(slices.count[kind], 0.5)}`);
    console.log(row(`${kind} stroke: longest frame in the page`, frames.page[kind]));
    console.log(row(`${kind} stroke: longest frame in the overlay`, frames.overlay[kind]));
  }
  console.log(row("release → composer open (with screenshot)", composer));
  console.log(row("anchor: the worker's calls sent from the bench", storedAnchor));
  console.log(row("Enter → item stored on the server", stored, storedAnchor));
  for (const [name, durations] of Object.entries(phases)) console.log(row(name, durations));
  for (const [name, durations] of Object.entries(storedPhases)) console.log(row(name, durations));
} finally {
  await browser.close();
  await server.dispose();
  await stage.stop();
}

// Chromium driven over its DevTools pipe by this file alone, so that nothing holds a new
// frame before it runs: Playwright, once connected, auto-attaches to every new target
// with `waitForDebuggerOnStart` and lets each run only after it has set up its own
// session there (a dozen commands), which a person's browser never does; the overlay's
// frame is one such target. Here DevTools is attached to the browser and to the clicked
// page only, never auto-attached, and the overlay's frame is read after it is up.
// `hold: true` adds the hold alone (auto-attach with `waitForDebuggerOnStart`, each new
// target let go as soon as it is announced), to show what the hold itself costs.
// `enableStage: PATTERN` enables the stage of those pages first, as the overlay's "Keep
// Redline ready on this stage" does (a build without it is measured as it is), and each
// click waits until the overlay put in the page ahead is up, as a person would have read
// the page meanwhile.
import { once } from "node:events";
import { chromiumArgs, prepareBrowserFiles, removeTemporary, startProcess } from "../e2e/harness.mjs";

/** One DevTools connection over Chromium's pipe (fd 3 in, fd 4 out, JSON ended by NUL). */
function pipeConnection(input, output) {
  let nextId = 1;
  const pending = new Map();
  const listeners = new Set();
  let buffered = "";
  output.on("data", (chunk) => {
    const parts = (buffered + chunk.toString("utf8")).split("\0");
    buffered = parts.pop();
    for (const text of parts) {
      const message = JSON.parse(text);
      const waiting = pending.get(message.id);
      if (waiting) {
        pending.delete(message.id);
        if (message.error) waiting.reject(new Error(`${waiting.method}: ${message.error.message}`));
        else waiting.resolve(message.result);
      } else if (message.method) {
        for (const listener of listeners) listener(message);
      }
    }
  });
  return {
    send(method, params = {}, sessionId) {
      const id = nextId++;
      input.write(`${JSON.stringify({ id, method, params, ...(sessionId ? { sessionId } : {}) })}\0`);
      return new Promise((resolve, reject) => pending.set(id, { method, resolve, reject }));
    },
    /** Resolves with the first event for which `test(event)` holds. */
    next(test) {
      return new Promise((resolve) => {
        const listener = (event) => {
          if (!test(event)) return;
          listeners.delete(listener);
          resolve(event);
        };
        listeners.add(listener);
      });
    },
    on(listener) {
      listeners.add(listener);
    },
  };
}

/** Runs `expression` in `sessionId`'s page and resolves with its (awaited) value. */
async function evaluate(cdp, sessionId, expression) {
  const { result, exceptionDetails } = await cdp.send(
    "Runtime.evaluate", { expression, awaitPromise: true, returnByValue: true }, sessionId);
  if (exceptionDetails) throw new Error(`${expression}: ${exceptionDetails.exception?.description ?? exceptionDetails.text}`);
  return result.value;
}

/** Chromium with the built extension (as `launchBrowser`), its requests off this machine unresolved. */
export async function launchUnheld({ grantOrigins, hold = false, enableStage }) {
  const { extension, profile } = prepareBrowserFiles({ grantOrigins });
  const chromiumProcess = startProcess(
    process.env.CHROMIUM, chromiumArgs(extension, profile, "unresolved", "--remote-debugging-pipe"),
    { stdio: ["ignore", "ignore", "ignore", "pipe", "pipe"], detached: true });
  const exited = once(chromiumProcess, "exit");
  const cdp = pipeConnection(chromiumProcess.stdio[3], chromiumProcess.stdio[4]);
  if (hold) {
    cdp.on((event) => {
      if (event.method === "Target.attachedToTarget" && event.params.waitingForDebugger) {
        cdp.send("Runtime.runIfWaitingForDebugger", {}, event.params.sessionId).catch(() => {});
      }
    });
  }
  const extensionUrl = async () => {
    const { targetInfos } = await cdp.send("Target.getTargets");
    return targetInfos.find((t) => t.type === "service_worker" && t.url.startsWith("chrome-extension://"))?.url;
  };
  let workerUrl;
  // Up to 30 s, as `launchBrowser` waits.
  for (let i = 0; i < 600 && !workerUrl; i++) {
    workerUrl = await extensionUrl();
    if (!workerUrl) await new Promise((resolve) => setTimeout(resolve, 50));
  }
  if (!workerUrl) throw new Error("the extension's worker did not start");
  const extensionId = new URL(workerUrl).host;
  const enabled = enableStage !== undefined && await enable(cdp, extensionId, enableStage);
  return {
    enabled,
    /**
     * A fresh tab on `url`, clicked once settled: gesture → the pen and → the overlay app
     * up (the page notes both), then where the wait went, read from the overlay's frame.
     */
    async measure(url) {
      const { targetId } = await cdp.send("Target.createTarget", { url: "about:blank" });
      const { sessionId } = await cdp.send("Target.attachToTarget", { targetId, flatten: true });
      try {
        if (hold) {
          await cdp.send("Target.setAutoAttach", { autoAttach: true, waitForDebuggerOnStart: true, flatten: true }, sessionId);
        }
        await cdp.send("Page.enable", {}, sessionId);
        await cdp.send("Page.setLifecycleEventsEnabled", { enabled: true }, sessionId);
        await cdp.send("Emulation.setDeviceMetricsOverride", { width: 1200, height: 700, deviceScaleFactor: 1, mobile: false }, sessionId);
        // As the Playwright run: clicked once the page has settled (no request for 500 ms).
        const { loaderId } = await cdp.send("Page.navigate", { url }, sessionId);
        await cdp.next((e) => e.sessionId === sessionId && e.method === "Page.lifecycleEvent"
          && e.params.name === "networkIdle" && e.params.loaderId === loaderId);
        await cdp.send("Page.bringToFront", {}, sessionId);
        if (enabled) {
          if (!(await evaluate(cdp, sessionId, markWithin("redline:overlay-up-asleep", 10_000)))) {
            throw new Error("no overlay put in the page ahead");
          }
        }
        await evaluate(cdp, sessionId, `void (window.benchReady = new Promise((resolve) => {
          new MutationObserver(() => {
            if (document.querySelector('#redline-overlay-host[data-redline-state="ready"]')) resolve(window.benchReadyAt ??= Date.now());
          }).observe(document.documentElement, { subtree: true, childList: true, attributes: true });
        }))`);
        const { targetInfos } = await cdp.send("Target.getTargets", { filter: [{ type: "tab" }] });
        const tab = targetInfos.find((t) => t.url === url);
        if (!tab) throw new Error(`no tab shows ${url}`);
        const clickedAt = Date.now();
        await cdp.send("Extensions.triggerAction", { id: extensionId, targetId: tab.targetId });
        const { readyAt, penAt, contentAt } = await evaluate(cdp, sessionId, `window.benchReady.then((readyAt) => {
          const at = (name) => {
            const mark = performance.getEntriesByName(name)[0];
            return mark && performance.timeOrigin + mark.startTime;
          };
          return { readyAt, penAt: at("redline:pen-ready"), contentAt: at("redline:content-module") };
        })`);
        // The overlay is hidden while the screenshot ahead is taken, just after it is up.
        const shownAt = await evaluate(cdp, sessionId, markWithin("redline:shot-ahead-posted", 3000));
        const steps = await overlaySteps(cdp, `chrome-extension://${extensionId}/overlay.html`);
        const since = (t) => (t === undefined || t === null ? undefined : t - clickedAt);
        return {
          drawable: (penAt ?? readyAt) - clickedAt,
          ready: readyAt - clickedAt,
          frame: since(steps?.frame),
          glue: since(steps?.glue),
          module: since(steps?.module),
          posted: since(steps?.posted),
          content: since(contentAt),
          shown: since(shownAt),
        };
      } finally {
        await cdp.send("Target.closeTarget", { targetId });
      }
    },
    async close() {
      await cdp.send("Browser.close").catch(() => {});
      await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 5_000))]);
      try {
        // Chromium's helper processes share its process group: end them all.
        process.kill(-chromiumProcess.pid, "SIGTERM");
      } catch {
        // already gone
      }
      removeTemporary(profile);
      removeTemporary(extension);
    },
  };
}

/** An expression for the time (epoch ms) of the page's User Timing mark `name`, once made, or null after `ms`. */
function markWithin(name, ms) {
  return `new Promise((resolve) => {
    const at = () => {
      const mark = performance.getEntriesByName(${JSON.stringify(name)})[0];
      return mark && performance.timeOrigin + mark.startTime;
    };
    if (at()) return resolve(at());
    new PerformanceObserver(() => at() && resolve(at())).observe({ entryTypes: ["mark"] });
    setTimeout(() => resolve(null), ${ms});
  })`;
}

/** Enables the stage of `pattern` from an extension page; false when the build cannot. */
async function enable(cdp, extensionId, pattern) {
  const { targetId } = await cdp.send("Target.createTarget", { url: `chrome-extension://${extensionId}/panel.html` });
  const { sessionId } = await cdp.send("Target.attachToTarget", { targetId, flatten: true });
  try {
    // Attached before the page's own document replaces the first, blank one.
    for (let i = 0; i < 200; i++) {
      if (await evaluate(cdp, sessionId, `location.protocol === "chrome-extension:" && document.readyState === "complete"`)) break;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const reply = await evaluate(cdp, sessionId, `chrome.runtime.sendMessage({ kind: "enableStage", pattern: ${JSON.stringify(pattern)} })`);
    return reply?.Ok !== undefined;
  } finally {
    await cdp.send("Target.closeTarget", { targetId });
  }
}

/** The overlay frame's start and its own marks (`static/overlay.js`), attached to once it is up. */
async function overlaySteps(cdp, overlayUrl) {
  const { targetInfos } = await cdp.send("Target.getTargets");
  const frame = targetInfos.find((t) => t.type === "iframe" && t.url.startsWith(overlayUrl));
  if (!frame) return undefined;
  const { sessionId } = await cdp.send("Target.attachToTarget", { targetId: frame.targetId, flatten: true });
  try {
    return await evaluate(cdp, sessionId, `(() => {
      const at = (name) => {
        const mark = performance.getEntriesByName(name)[0];
        return mark && performance.timeOrigin + mark.startTime;
      };
      return { frame: performance.timeOrigin, glue: at("redline:overlay-glue"), module: at("redline:overlay-module"), posted: at("redline:overlay-ready") };
    })()`);
  } finally {
    await cdp.send("Target.detachFromTarget", { sessionId });
  }
}

// Injected into the active tab on a user gesture (chrome.scripting.executeScript): mounts
// the overlay at once and imports the content module behind it, so that the overlay's
// frame loads while the module does (the module is most of what a page loads of ours).
// Content scripts are classic scripts and obey the page's CSP, which may forbid wasm, so
// the Rust content module is shipped as JavaScript (wasm2js), one ES module listed in
// web_accessible_resources with `use_dynamic_url`; a dynamic import of it works under
// `script-src 'self'`. This runs in Redline's isolated world: the page sees none of its
// variables, and the overlay's frame sits in a closed shadow root.
(() => {
  // Run for an enabled stage's page load (`ahead.js`) rather than for a gesture: the
  // overlay goes in hidden ("asleep"), and the gesture's run of this script wakes it.
  const ahead = globalThis.redlineMountAhead === true;
  delete globalThis.redlineMountAhead;
  const mounted = globalThis.redlineOverlay;
  if (mounted?.host.isConnected) {
    if (!ahead) mounted.wake();
    return;
  }
  // A secret between this script and the overlay: the frame's address sits in a closed
  // shadow root and the page cannot read a frame of the extension's origin, so only the
  // overlay learns it, and it takes the capture's channel only with it.
  const channel = crypto.randomUUID();
  const host = document.createElement("div");
  host.id = "redline-overlay-host";
  host.setAttribute("data-redline-state", ahead ? "asleep" : "loading");
  // `all: initial` shields the host from the page's CSS; the shadow root keeps the page's
  // selectors and scripts away from the frame element.
  host.setAttribute("style", "all: initial; position: fixed; inset: 0; z-index: 2147483647; display: block;");
  const frame = document.createElement("iframe");
  frame.title = "Redline: circle what is wrong";
  // A transparent frame needs the same (normal) color scheme as its content, or Chrome
  // paints an opaque backdrop behind it.
  frame.setAttribute("style", "position: fixed; inset: 0; width: 100vw; height: 100vh; border: 0; background: transparent; color-scheme: normal;");
  // Asleep, nothing of ours is seen, reached by the keyboard or hit by the pointer
  // (the CSSOM, not the style attribute: see the pen's).
  if (ahead) {
    host.style.setProperty("visibility", "hidden");
    host.style.setProperty("pointer-events", "none");
  }
  let pen = ahead ? null : takeStrokeAtOnce();
  const shadow = host.attachShadow({ mode: "closed" });
  if (pen) shadow.append(pen.layer);
  let module = null;
  // The gesture: shows the overlay asleep in the page (put in ahead, or closed since and
  // put back to sleep by the module), its pen over it until the module says the overlay
  // is up (at once, if it already is).
  const wake = () => {
    if (host.getAttribute("data-redline-state") !== "asleep") {
      frame.focus();
      return;
    }
    pen = takeStrokeAtOnce();
    shadow.append(pen.layer);
    host.style.removeProperty("visibility");
    host.style.removeProperty("pointer-events");
    host.setAttribute("data-redline-state", "loading");
    requestAnimationFrame(() => performance.mark("redline:pen-ready"));
    module?.wake(pen);
  };
  globalThis.redlineOverlay = { host, frame, wake };
  // What the frame posts before the module is there, the module reads when it is.
  const early = [];
  const keep = (event) => {
    if (event.source === frame.contentWindow) early.push(event);
  };
  addEventListener("message", keep);
  const start = (loaded) => {
    // When the content module is there to take the overlay's `ready` (the instant bench).
    performance.mark("redline:content-module");
    removeEventListener("message", keep);
    module = loaded;
    // Put in ahead with no pen: still asleep (the module then waits for `wake`).
    module.attach(host, frame, channel, early, pen, ahead);
  };
  const fail = (error) => {
    removeEventListener("message", keep);
    host.remove();
    console.error("Redline could not start on this page:", error);
  };
  // The worker keeps the secret for this tab before the overlay exists: the overlay runs
  // only once the worker confirms that this tab's content script mounted it with it.
  document.documentElement.append(host);
  // The pen is painted first: putting a frame in the page (which makes the frame's
  // initial document at once) and starting the module's import each cost the page's main
  // thread tens of milliseconds, so they wait for the task after the pen's first frame.
  const penPainted = ahead ? Promise.resolve() : new Promise((resolve) => {
    requestAnimationFrame(() => {
      performance.mark("redline:pen-ready");
      setTimeout(resolve);
    });
  });
  Promise.all([chrome.runtime.sendMessage({ kind: "overlayMounting", channel }), penPainted]).then(() => {
    // What is kept of a page's address: no query string or fragment (`without_query`).
    const page = location.href.split(/[?#]/)[0];
    frame.src = `${chrome.runtime.getURL("overlay.html")}?page=${encodeURIComponent(page)}&channel=${channel}`;
    // The frame first: the overlay app is most of the click's wait, and its navigation
    // starts here; the module's import would hold it back by its own synchronous cost.
    shadow.prepend(frame);
    return import(chrome.runtime.getURL("content/content.js")).then(start);
  }).catch(fail);

  // The pen: a layer over the frame that takes the stroke from the gesture on, while the
  // overlay app loads behind it (a frame and its wasm take a few hundred ms; a person
  // starts drawing sooner). It only records where the pointer went and draws that line:
  // what the stroke circles is decided in Rust. Once the overlay is up, the content
  // module calls `handOver`, and the stroke, at once or when it is released, goes to the
  // overlay as if drawn there; the layer then leaves, and the overlay takes the pointer.
  function takeStrokeAtOnce() {
    const layer = document.createElement("div");
    // Looks as the overlay's lasso does (`.lasso.active` and `.stroke path` in
    // overlay.css, which cannot reach this shadow root), so the hand-over is not seen.
    // The CSSOM, not a style attribute: a page's CSP may forbid inline styles.
    layer.style.cssText = "position: fixed; inset: 0; cursor: crosshair; touch-action: none; background: rgb(220 38 38 / 0.04); outline: 2px solid rgb(220 38 38 / 0.6); outline-offset: -2px;";
    const svgNs = "http://www.w3.org/2000/svg";
    const svg = document.createElementNS(svgNs, "svg");
    svg.setAttribute("aria-hidden", "true");
    svg.style.cssText = "position: fixed; inset: 0; width: 100%; height: 100%; pointer-events: none;";
    const line = document.createElementNS(svgNs, "path");
    for (const [name, value] of [["fill", "rgb(220 38 38 / 0.08)"], ["stroke", "#dc2626"], ["stroke-width", "3"], ["stroke-linejoin", "round"], ["stroke-linecap", "round"]]) {
      line.setAttribute(name, value);
    }
    svg.append(line);
    layer.append(svg);
    let points = [];
    let pressed = false;
    let released = false;
    let taker = null;
    const draw = () => line.setAttribute("d", points.map((p, i) => `${i ? "L" : "M"}${p.x} ${p.y}`).join(""));
    const give = () => {
      layer.remove();
      if (released) taker(points);
    };
    // Only the person's own input: a page script can dispatch events here too.
    layer.addEventListener("pointerdown", (event) => {
      if (!event.isTrusted || event.button !== 0 || pressed || released) return;
      layer.setPointerCapture(event.pointerId);
      pressed = true;
      points = [{ x: event.clientX, y: event.clientY }];
      draw();
    });
    layer.addEventListener("pointermove", (event) => {
      if (!event.isTrusted || !pressed) return;
      points.push({ x: event.clientX, y: event.clientY });
      draw();
    });
    layer.addEventListener("pointerup", (event) => {
      if (!event.isTrusted || !pressed) return;
      pressed = false;
      released = true;
      if (taker) give();
    });
    layer.addEventListener("pointercancel", () => {
      if (!pressed) return;
      pressed = false;
      points = [];
      draw();
      if (taker) give();
    });
    return {
      layer,
      handOver(take) {
        taker = take;
        if (!pressed) give();
      },
    };
  }
})();

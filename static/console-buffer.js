// Runs in the page's own world from document_start, only on stages the person enabled
// (registered with chrome.scripting.registerContentScripts, world MAIN): it keeps the
// page's console errors, uncaught errors and failed requests so a filed item can carry
// them. Plain JavaScript because it must run synchronously before the page's own
// scripts, which a module (wasm or not) cannot. The content script asks for the buffer
// with a DOM event.
(() => {
  const MAX_ERRORS = 50;
  const MAX_CHARS = 500;
  const errors = [];
  const failedRequests = [];
  const keep = (list, entry) => {
    list.push(entry);
    if (list.length > MAX_ERRORS) list.shift();
  };
  const remember = (text) => keep(errors, String(text).slice(0, MAX_CHARS));
  // Failed requests, as the page made them (the content script strips query strings):
  // fetch and XMLHttpRequest are watched for their method and for failures without a
  // response (status 0); everything else (images, scripts, style sheets, beacons) comes
  // from Resource Timing, which gives no method (they are GETs, beacons POSTs) and shows
  // a failure only as an HTTP status: its 0 is also any cross-origin success.
  const failed = (method, url, status) => {
    try {
      keep(failedRequests, { method: String(method).toUpperCase(), url: new URL(url, document.baseURI).href, status });
    } catch {}
  };
  const describe = (value) => {
    if (value instanceof Error) return `${value.name}: ${value.message}`;
    if (typeof value === "string") return value;
    try {
      return JSON.stringify(value);
    } catch {
      return String(value);
    }
  };
  const consoleError = console.error;
  console.error = function (...args) {
    remember(args.map(describe).join(" "));
    return consoleError.apply(this, args);
  };
  addEventListener("error", (event) => {
    if (event instanceof ErrorEvent) {
      remember(event.error ? describe(event.error) : `${event.message} (${event.filename}:${event.lineno})`);
    }
  });
  addEventListener("unhandledrejection", (event) => remember(`Unhandled rejection: ${describe(event.reason)}`));

  const pageFetch = fetch;
  window.fetch = function (input, init) {
    const request = input instanceof Request ? input : null;
    const method = init?.method ?? request?.method ?? "GET";
    const url = request ? request.url : String(input);
    return pageFetch.apply(this, arguments).then(
      (response) => {
        if (response.status >= 400) failed(method, url, response.status);
        return response;
      },
      (error) => {
        if (error?.name !== "AbortError") failed(method, url, 0);
        throw error;
      },
    );
  };
  const requests = new WeakMap();
  const open = XMLHttpRequest.prototype.open;
  XMLHttpRequest.prototype.open = function (method, url) {
    if (!requests.has(this)) {
      this.addEventListener("abort", () => (requests.get(this).aborted = true));
      this.addEventListener("loadend", () => {
        const { method, url, aborted } = requests.get(this);
        if (this.status >= 400 || (this.status === 0 && !aborted)) failed(method, url, this.status);
      });
    }
    requests.set(this, { method, url: String(url), aborted: false });
    return open.apply(this, arguments);
  };
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      if (entry.initiatorType === "fetch" || entry.initiatorType === "xmlhttprequest") continue;
      if (entry.responseStatus >= 400) failed(entry.initiatorType === "beacon" ? "POST" : "GET", entry.name, entry.responseStatus);
    }
  }).observe({ type: "resource", buffered: true });

  document.addEventListener("redline:console-request", () => {
    document.dispatchEvent(new CustomEvent("redline:console-errors", { detail: JSON.stringify({ errors, failedRequests }) }));
  });
})();

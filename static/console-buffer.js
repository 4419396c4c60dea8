// Runs in the page's own world from document_start, only on stages the person enabled
// (registered with chrome.scripting.registerContentScripts, world MAIN): it keeps the
// page's console errors and uncaught errors so a filed item can carry them. Plain
// JavaScript because it must run synchronously before the page's own scripts, which a
// module (wasm or not) cannot. The content script asks for the buffer with a DOM event.
(() => {
  const MAX_ERRORS = 50;
  const MAX_CHARS = 500;
  const errors = [];
  const remember = (text) => {
    errors.push(String(text).slice(0, MAX_CHARS));
    if (errors.length > MAX_ERRORS) errors.shift();
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
  document.addEventListener("redline:console-request", () => {
    document.dispatchEvent(new CustomEvent("redline:console-errors", { detail: JSON.stringify(errors) }));
  });
})();

// Injected into the active tab on a user gesture (chrome.scripting.executeScript).
// Content scripts are classic scripts and obey the page's CSP, which may forbid wasm, so
// the Rust content module is shipped as JavaScript (wasm2js) in ES modules listed in
// web_accessible_resources; a dynamic import of them works under `script-src 'self'`.
// A module is evaluated once per page, so each injection calls `mount` explicitly.
import(chrome.runtime.getURL("content/content.js"))
  .then((content) => content.mount())
  .catch((error) => console.error("Redline could not start on this page:", error));

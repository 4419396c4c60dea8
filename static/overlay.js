import init, { start_overlay } from "./pkg/overlay.js";

// Marks where a gesture's wait for the overlay goes (`tests/bench/instant.mjs`): the glue
// imported, then the module compiled and instantiated.
performance.mark("redline:overlay-glue");
init({ module_or_path: new URL("./pkg/overlay_bg.wasm", import.meta.url) }).then(() => {
  performance.mark("redline:overlay-module");
  start_overlay();
});

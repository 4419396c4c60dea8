import init, { start_overlay } from "./pkg/ui.js";

init({ module_or_path: new URL("./pkg/ui_bg.wasm", import.meta.url) }).then(start_overlay);

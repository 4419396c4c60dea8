import init, { start_panel } from "./pkg/panel.js";

init({ module_or_path: new URL("./pkg/panel_bg.wasm", import.meta.url) }).then(start_panel);

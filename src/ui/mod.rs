//! The extension's pages with a UI, in Leptos: the side panel and the overlay iframe
//! that the content script mounts over the page. One wasm module serves both.

mod held;
mod overlay;
mod panel;
mod shot;

use wasm_bindgen::prelude::*;

/// Mounts the side panel app (`static/panel.js` calls this once the module is ready).
#[wasm_bindgen]
pub fn start_panel() {
    console_error_panic_hook_lite();
    leptos::mount::mount_to_body(panel::Panel);
}

/// Mounts the overlay app inside the iframe over the page (`static/overlay.js`).
#[wasm_bindgen]
pub fn start_overlay() {
    console_error_panic_hook_lite();
    leptos::mount::mount_to_body(overlay::Overlay);
}

/// Sends panics to the console with their message, so a failure is never silent.
fn console_error_panic_hook_lite() {
    std::panic::set_hook(Box::new(|info| web_sys::console::error_1(&info.to_string().into())));
}

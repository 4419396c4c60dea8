//! The extension's pages with a UI, in Leptos: the side panel and the overlay iframe
//! that the content script mounts over the page. Each is a wasm module of its own
//! (features `panel` and `overlay`), so a gesture waits for the overlay's alone.

// First, so that every module after it sees `ui_view!`.
#[macro_use]
mod ui_view;

mod held;
mod outbox;
#[cfg(feature = "overlay")]
mod overlay;
#[cfg(feature = "panel")]
mod panel;
// The overlay annotates and redacts the filed screenshot, the panel crops its
// after-shots: each module uses its own part.
#[cfg_attr(
    not(all(feature = "overlay", feature = "panel")),
    expect(dead_code, reason = "each page module uses only its part")
)]
mod shot;

use leptos::prelude::*;
use wasm_bindgen::prelude::*;

use crate::worker_call::{Envelope, WorkerCall, WorkerError};

/// Mounts the side panel app (`static/panel.js` calls this once the module is ready).
#[cfg(feature = "panel")]
#[wasm_bindgen]
pub fn start_panel() {
    console_error_panic_hook_lite();
    leptos::mount::mount_to_body(panel::Panel);
}

/// Mounts the overlay app inside the iframe over the page (`static/overlay.js`).
#[cfg(feature = "overlay")]
#[wasm_bindgen]
pub fn start_overlay() {
    console_error_panic_hook_lite();
    leptos::mount::mount_to_body(overlay::Overlay);
}

/// Makes call `C` to the worker ([`crate::worker_call`]) and reads its answer: the
/// reply, or why there is none.
pub async fn call<C>(request: &C) -> Result<C::Reply, WorkerError>
where
    C: WorkerCall + serde::Serialize,
    C::Reply: serde::de::DeserializeOwned,
{
    use serde::Serialize;
    let message = Envelope::new(request)
        .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
        .map_err(|e| WorkerError::NotACall { message: e.to_string() })?;
    let reply = crate::browser::chrome::send_js_message(&message)
        .await
        .map_err(|e| WorkerError::NoAnswer { message: e.0 })?;
    if reply.is_undefined() {
        return Err(WorkerError::NoAnswer { message: "an empty answer".into() });
    }
    serde_wasm_bindgen::from_value(reply)
        .map_err(|e| WorkerError::NoAnswer { message: format!("an answer it could not read: {e}") })?
}

/// Sends panics to the console with their message, so a failure is never silent.
fn console_error_panic_hook_lite() {
    std::panic::set_hook(Box::new(|info| web_sys::console::error_1(&info.to_string().into())));
}

/// The one way the panel and the overlay say something failed: the message (text, never
/// HTML) and, when the failed thing can be tried again, a Retry button.
#[component]
pub fn ErrorLine(
    #[prop(into)] message: String,
    #[prop(optional)] retry: Option<Callback<()>>,
    #[prop(optional, into)] pending: Signal<bool>,
    /// A `data-testid` for the line, where tests tell one failure from another.
    #[prop(optional)]
    testid: Option<&'static str>,
) -> impl IntoView {
    ui_view! {
        <p class="error" role="alert" data-testid=testid>
            {message}
            {retry.map(|retry| ui_view! {
                " "<button type="button" disabled=move || pending.get() on:click=move |_| retry.run(())>"Retry"</button>
            })}
        </p>
    }
}

//! The overlay over the page: for now a hint and `Esc` to leave. It lives in an
//! extension-page iframe, so it runs wasm even on pages whose CSP forbids it.

use leptos::ev;
use leptos::prelude::*;
use serde::Serialize;

use crate::messages::OverlayEvent;

/// Tells the content script in the embedding page what happened. The message carries
/// no data worth hiding, so any parent origin may read it; the content script checks
/// that it came from this frame and the extension's origin.
fn tell_page(event: &OverlayEvent) {
    let Some(parent) = window().parent().ok().flatten() else { return };
    if let Ok(message) = event.serialize(&serde_wasm_bindgen::Serializer::json_compatible()) {
        let _ = parent.post_message(&message, "*");
    }
}

#[component]
pub fn Overlay() -> impl IntoView {
    let on_key = window_event_listener(ev::keydown, |event| {
        if event.key() == "Escape" {
            event.prevent_default();
            tell_page(&OverlayEvent::Close);
        }
    });
    on_cleanup(move || on_key.remove());
    // Announced on the next frame, once the view below is in the DOM.
    request_animation_frame(|| tell_page(&OverlayEvent::Ready));

    view! {
        <div class="overlay" role="application" aria-label="Redline overlay">
            <p class="overlay-hint">"Circle what is wrong · " <kbd>"Esc"</kbd> " to cancel"</p>
        </div>
    }
}

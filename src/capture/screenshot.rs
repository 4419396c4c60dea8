//! The page side of the screenshot: get our overlay and the page's secrets out of the
//! picture, let the page paint, and ask the worker (which holds the permission) for it.

use js_sys::Promise;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Document, Element, HtmlElement, Window};

use crate::chrome;
use crate::page_js;

/// Fields whose contents must never reach a screenshot.
pub const SENSITIVE_FIELDS: &str = "input[type=password], [autocomplete^=\"cc-\"], [data-private]";

/// Paints the element and everything in it black: text, values and images alike.
const MASK: &str = "brightness(0)";

/// A PNG `data:` URL of the visible tab without the overlay and with sensitive fields
/// masked; the page is restored whatever happens.
pub async fn visible_tab(
    window: &Window,
    document: &Document,
    overlay_host: &Element,
) -> Result<String, String> {
    // Transparent rather than removed, so that the overlay keeps its focus, what the
    // filer is typing and its animation frames while the tab is captured.
    let hidden = Restyle::apply(overlay_host, "opacity", "0");
    let masks: Vec<Restyle> = document
        .query_selector_all(SENSITIVE_FIELDS)
        .map(|list| {
            (0..list.length())
                .filter_map(|i| list.item(i)?.dyn_into::<Element>().ok())
                .filter_map(|e| Restyle::apply(&e, "filter", MASK))
                .collect()
        })
        .unwrap_or_default();
    next_paint(window).await;
    let reply = chrome::send_js_message(&page_js::capture_visible_tab_request()).await;
    masks.into_iter().for_each(Restyle::undo);
    hidden.into_iter().for_each(Restyle::undo);
    reply.map_err(|error| error.0).and_then(|reply| page_js::screenshot_reply(&reply))
}

/// One inline style property set for the screenshot, and what it was before.
struct Restyle {
    element: HtmlElement,
    property: &'static str,
    before: (String, String),
}

impl Restyle {
    fn apply(element: &Element, property: &'static str, value: &str) -> Option<Restyle> {
        let element = element.dyn_ref::<HtmlElement>()?.clone();
        let style = element.style();
        let before =
            (style.get_property_value(property).unwrap_or_default(), style.get_property_priority(property));
        style.set_property_with_priority(property, value, "important").ok()?;
        Some(Restyle { element, property, before })
    }

    fn undo(self) {
        let style = self.element.style();
        let _ = if self.before.0.is_empty() {
            style.remove_property(self.property).map(drop)
        } else {
            style.set_property_with_priority(self.property, &self.before.0, &self.before.1)
        };
    }
}

/// Resolves after the page has painted what was just changed (two animation frames:
/// the first runs before the paint, the second after it).
async fn next_paint(window: &Window) {
    for _ in 0..2 {
        let frame = Promise::new(&mut |resolve, _| {
            let _ = window.request_animation_frame(&resolve);
        });
        let _: Result<JsValue, JsValue> = JsFuture::from(frame).await;
    }
}

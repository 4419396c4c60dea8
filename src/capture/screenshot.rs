//! The page side of the screenshot: get our overlay and the page's secrets out of the
//! picture, let the page paint, and ask the worker (which holds the permission) for it.

use js_sys::Promise;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Document, Element, HtmlElement, Window};

use super::frame_dom;
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
    let mut fields = Vec::new();
    sensitive_fields(document, &mut fields);
    let masks: Vec<Restyle> = fields.iter().filter_map(|e| Restyle::apply(e, "filter", MASK)).collect();
    next_paint(window).await;
    let reply = chrome::send_js_message(&page_js::capture_visible_tab_request()).await;
    masks.into_iter().for_each(Restyle::undo);
    hidden.into_iter().for_each(Restyle::undo);
    reply.map_err(|error| error.0).and_then(|reply| page_js::screenshot_reply(&reply))
}

/// The sensitive fields of `document` and of the frames in it that this page may read
/// (their pixels are in the tab's screenshot too).
fn sensitive_fields(document: &Document, into: &mut Vec<Element>) {
    let all = |selector: &str| {
        let list = document.query_selector_all(selector).ok();
        let length = list.as_ref().map_or(0, |l| l.length());
        (0..length).filter_map(move |i| list.as_ref()?.item(i)).map(JsCast::unchecked_into::<Element>)
    };
    into.extend(all(SENSITIVE_FIELDS));
    for frame in all("iframe, frame") {
        if let Some(inside) = frame_dom::frame_document(&frame) {
            sensitive_fields(&inside, into);
        }
    }
}

/// One inline style property set for the screenshot, and what it was before.
struct Restyle {
    element: HtmlElement,
    property: &'static str,
    before: (String, String),
}

impl Restyle {
    fn apply(element: &Element, property: &'static str, value: &str) -> Option<Restyle> {
        // Any element with an inline style (HTML or SVG, of this window or a frame's).
        let element = element.unchecked_ref::<HtmlElement>().clone();
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

//! The page side of the screenshot: get our overlay and the page's secrets out of the
//! picture, let the page paint, and ask the worker (which holds the permission) for it.

use std::cell::RefCell;

use js_sys::Promise;
use wasm_bindgen::{JsCast, JsValue};
use wasm_bindgen_futures::JsFuture;
use web_sys::{Document, Element, HtmlElement, NodeList, ShadowRoot, Window};

use super::frame_dom;
use crate::browser::chrome;
use crate::content::page_js;
use crate::worker_call::CaptureVisibleTab;

/// Fields whose contents must never reach a screenshot, nor their text a capture:
/// password fields, also once a "show password" button made one a text field (told by
/// what it asks the browser to fill or by its name; see also [`is_masked`]), card
/// fields and whatever the page marks private.
pub const SENSITIVE_FIELDS: &str = "input[type=password], input[autocomplete~=current-password i], \
    input[autocomplete~=new-password i], input[name*=password i], input[id*=password i], \
    [autocomplete^=\"cc-\"], [data-private]";

thread_local! {
    /// The password fields seen in this page so far, kept while they are in it: one a
    /// "show password" button has made `type=text` since stays masked, whatever it is
    /// named.
    static PASSWORDS: RefCell<Vec<Element>> = const { RefCell::new(Vec::new()) };
}

/// Whether Redline masks `element` in screenshots: it is a [`SENSITIVE_FIELDS`] field or
/// was a password field when a screenshot was last taken.
pub fn is_masked(element: &Element) -> bool {
    element.matches(SENSITIVE_FIELDS).unwrap_or(false)
        || PASSWORDS.with_borrow(|seen| seen.iter().any(|e| e == element))
}

/// Paints the element and everything in it black: text, values and images alike; with
/// [`MASK_BACKGROUND`], also where it is transparent, so that no black text shows on the
/// page's background behind it.
const MASK: &str = "brightness(0)";
const MASK_BACKGROUND: &str = "black";

/// A PNG `data:` URL of the visible tab without the overlay and with what Redline masks
/// painted black (see [`masked_elements`]); the page is restored whatever happens.
pub async fn visible_tab(
    window: &Window,
    document: &Document,
    overlay_host: &Element,
) -> Result<String, String> {
    // Transparent rather than removed, so that the overlay keeps its focus, what the
    // filer is typing and its animation frames while the tab is captured.
    let hidden = Restyle::apply(overlay_host, "opacity", "0");
    let masks: Vec<Restyle> = masked_elements(document, overlay_host)
        .iter()
        .flat_map(|e| {
            [Restyle::apply(e, "filter", MASK), Restyle::apply(e, "background-color", MASK_BACKGROUND)]
        })
        .flatten()
        .collect();
    next_paint(window).await;
    let reply = page_js::call(&CaptureVisibleTab {}).await;
    masks.into_iter().for_each(Restyle::undo);
    hidden.into_iter().for_each(Restyle::undo);
    reply.map_err(|error| error.to_string())
}

/// What the screenshot masks: the sensitive fields of `document`, of the shadow roots
/// in it (closed ones too, where the browser lets Redline open them) and of the frames in
/// it that this page may read (their pixels are in the tab's screenshot too), and the
/// password fields seen before that are still in the page; and whole, what Redline cannot
/// look inside ([`is_masked_whole`]). The overlay (`overlay_host`) is left alone.
pub fn masked_elements(document: &Document, overlay_host: &Element) -> Vec<Element> {
    let mut masked = Vec::new();
    scan(&|selector| document.query_selector_all(selector).ok(), overlay_host, &mut masked);
    PASSWORDS.with_borrow_mut(|seen| {
        seen.retain(|e| e.is_connected());
        for password in seen.iter() {
            if !masked.contains(password) {
                masked.push(password.clone());
            }
        }
    });
    masked
}

/// Whether Redline paints `element` black whole, as it cannot see what it shows: a frame
/// of another origin (a payment form's card fields, say), or an element that may hold a
/// closed shadow root where the browser gives no way to open one.
pub fn is_masked_whole(element: &Element) -> bool {
    frame_dom::is_closed_frame(element) || matches!(shadow_of(element), Shadow::Unreadable)
}

/// The sensitive fields of one tree (a document or a shadow root, whose
/// `querySelectorAll` is `query`), and of the trees inside it, into `into`, with what is
/// masked whole; password fields are remembered as seen.
fn scan(query: &dyn Fn(&str) -> Option<NodeList>, overlay_host: &Element, into: &mut Vec<Element>) {
    into.extend(elements(query(SENSITIVE_FIELDS)));
    PASSWORDS.with_borrow_mut(|seen| {
        for password in elements(query("input[type=password]")) {
            if !seen.contains(&password) {
                seen.push(password);
            }
        }
    });
    // A selector does not reach into shadow roots: each one is scanned as a tree of its own.
    for host in elements(query(MAY_HOST_SHADOW_ROOTS)).filter(|host| host != overlay_host) {
        match shadow_of(&host) {
            Shadow::Readable(root) => {
                scan(&|selector| root.query_selector_all(selector).ok(), overlay_host, into)
            }
            Shadow::Unreadable => into.push(host),
            Shadow::None => {}
        }
    }
    for frame in elements(query("iframe, frame")) {
        match frame_dom::frame_document(&frame) {
            Some(inside) => scan(&|selector| inside.query_selector_all(selector).ok(), overlay_host, into),
            None => into.push(frame),
        }
    }
}

/// The elements that may host a shadow root: HTML ones only. (Asking `chrome.dom` about
/// an SVG element throws, and costs about 20 µs each time.)
const MAY_HOST_SHADOW_ROOTS: &str = ":not(svg, svg *, math, math *)";

/// The shadow root an element hosts, as far as Redline can read it.
enum Shadow {
    None,
    Readable(ShadowRoot),
    /// It may hold a closed root this browser does not open (Firefox has no
    /// `chrome.dom`): a custom element without an open one. (Of the built-in elements
    /// that may hold one, `div` and the like, a closed root is not told apart there.)
    Unreadable,
}

fn shadow_of(host: &Element) -> Shadow {
    match chrome::open_or_closed_shadow_root(host) {
        Ok(Some(root)) => Shadow::Readable(root),
        Ok(None) => Shadow::None,
        Err(_) => match host.shadow_root() {
            Some(root) => Shadow::Readable(root),
            None if host.local_name().contains('-') => Shadow::Unreadable,
            None => Shadow::None,
        },
    }
}

fn elements(list: Option<NodeList>) -> impl Iterator<Item = Element> {
    let length = list.as_ref().map_or(0, NodeList::length);
    (0..length).filter_map(move |i| list.as_ref()?.item(i)).map(JsCast::unchecked_into::<Element>)
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

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;
    use web_sys::{ShadowRootInit, ShadowRootMode};

    wasm_bindgen_test_configure!(run_in_browser);

    fn ids(fields: &[Element]) -> Vec<String> {
        let mut ids: Vec<String> = fields.iter().map(Element::id).filter(|id| !id.is_empty()).collect();
        ids.sort();
        ids
    }

    #[wasm_bindgen_test]
    fn fields_in_open_shadow_roots_and_shown_passwords_are_masked() {
        let document = web_sys::window().unwrap().document().unwrap();
        let page = document.create_element("div").unwrap();
        page.set_inner_html(
            r#"<input id="plain" value="hello">
               <input id="current" type="text" autocomplete="username current-password">
               <input id="named" type="text" name="user_Password">
               <input id="toggled" type="password" name="secret">
               <div id="host"></div>"#,
        );
        document.body().unwrap().append_child(&page).unwrap();
        let shadow = page
            .query_selector("#host")
            .unwrap()
            .unwrap()
            .attach_shadow(&ShadowRootInit::new(ShadowRootMode::Open))
            .unwrap();
        shadow.set_inner_html(r#"<input id="inner-password" type="password"><p id="inner-private" data-private>x</p><span id="inner-plain">y</span><div id="nested"></div>"#);
        let nested = shadow
            .get_element_by_id("nested")
            .unwrap()
            .attach_shadow(&ShadowRootInit::new(ShadowRootMode::Open))
            .unwrap();
        nested.set_inner_html(r#"<input id="deep-card" autocomplete="cc-number">"#);

        let expected = ["current", "deep-card", "inner-password", "inner-private", "named", "toggled"];
        let overlay_host = document.create_element("div").unwrap();
        let sensitive_fields = |document: &Document| masked_elements(document, &overlay_host);
        assert_eq!(ids(&sensitive_fields(&document)), expected);

        // A "show password" button makes the field a text field: still masked, as it was
        // a password field when first seen, and its restyles are Redline's own.
        let toggled = document.get_element_by_id("toggled").unwrap();
        toggled.set_attribute("type", "text").unwrap();
        assert_eq!(ids(&sensitive_fields(&document)), expected);
        assert!(is_masked(&toggled));
        assert!(!is_masked(&document.get_element_by_id("plain").unwrap()));

        page.remove();
        assert!(sensitive_fields(&document).iter().all(|e| e.id() != "toggled"), "gone with the page");
    }

    /// Here, as in Firefox, there is no `chrome.dom` to open a closed root with.
    #[wasm_bindgen_test]
    fn frames_of_other_origins_and_closed_roots_not_opened_are_masked_whole() {
        let document = web_sys::window().unwrap().document().unwrap();
        let page = document.create_element("div").unwrap();
        page.set_inner_html(
            r#"<iframe id="same" srcdoc="<input id=in-frame type=password>"></iframe>
               <iframe id="other" sandbox srcdoc="<p>another origin</p>"></iframe>
               <closed-card id="card"></closed-card>
               <div id="plain-host"></div>
               <div id="overlay"></div>"#,
        );
        document.body().unwrap().append_child(&page).unwrap();
        let by_id = |id: &str| document.get_element_by_id(id).unwrap();
        by_id("card").attach_shadow(&ShadowRootInit::new(ShadowRootMode::Closed)).unwrap();
        by_id("plain-host").attach_shadow(&ShadowRootInit::new(ShadowRootMode::Closed)).unwrap();
        let overlay = by_id("overlay");
        overlay
            .attach_shadow(&ShadowRootInit::new(ShadowRootMode::Open))
            .unwrap()
            .set_inner_html(r#"<iframe id="overlay-frame" sandbox></iframe>"#);

        let masked = ids(&masked_elements(&document, &overlay));
        assert!(!masked.contains(&"overlay-frame".to_owned()), "the overlay is left alone: {masked:?}");
        for id in ["other", "card"] {
            assert!(masked.contains(&id.to_owned()), "{id} in {masked:?}");
            assert!(is_masked_whole(&by_id(id)), "{id}");
        }
        for id in ["same", "plain-host", "overlay"] {
            assert!(!masked.contains(&id.to_owned()) && !is_masked_whole(&by_id(id)), "{id} in {masked:?}");
        }
        page.remove();
    }
}

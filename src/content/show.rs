//! "Show on page", the page side: finds an item's elements again (test id, then source
//! anchor, then CSS path, then text; see `crate::rules::locate`) and outlines them above the
//! page for a while; and finds them without outlining for the panel's re-find on a new
//! build (`crate::rules::refind`). Compiled into the content module (JavaScript), which the
//! worker loads into the tab with `chrome.scripting` when the person asks.

use std::cell::RefCell;

use redline_protocol::{Element as Captured, Point};
use wasm_bindgen::prelude::*;
use web_sys::{Document, Element, ShadowRootInit, ShadowRootMode};

use crate::content::capture::selector_dom::{PathStop, css_path, path_document, resolve_css_path};
use crate::content::capture::{dom, frame_dom};
use crate::content::page_js::{self, ToJs};
use crate::rules::chip::ChipName;
use crate::rules::locate::{self, Attempt, InFrame, Located};
use crate::rules::refind::{PageFinding, PageRefind};

/// The id of the element that holds the outlines.
pub const HOST_ID: &str = "redline-show-host";
/// How long the outlines stay.
const SHOW_MS: i32 = 12_000;
/// At most this many page elements are outlined for one captured element.
const MAX_MATCHES: usize = 20;

/// The pending removal: the timer's id and its callback, kept alive until then.
type Removal = (i32, Closure<dyn FnMut()>);

thread_local! {
    static TIMER: RefCell<Option<Removal>> = const { RefCell::new(None) };
}

/// For "Show on page" in frames of other origins, which this page may not read: the
/// elements (as given to [`show_elements`]) whose path enters such a frame, as a JSON
/// array of [`InFrame`], for the worker to look for them there.
#[wasm_bindgen]
pub fn elements_in_closed_frames(elements: JsValue) -> Result<JsValue, JsValue> {
    let elements = page_js::elements(&elements).ok_or("the elements are not a list")?;
    let document = web_sys::window().and_then(|w| w.document()).ok_or("no document")?;
    let handed_on = js_sys::Array::new();
    for (index, element) in elements.iter().enumerate() {
        let Some(path) = element.css_path.as_deref() else { continue };
        if let Err(PathStop::ClosedFrame { frame, rest }) = path_document(&document, path)
            && let Some(frame_path) = frame_dom::frame_path(&frame)
        {
            handed_on.push(&InFrame { index, frame_path, css_path: rest }.to_js());
        }
    }
    Ok(handed_on.into())
}

/// Outlines the captured `elements` (a JSON array of the protocol's Element) and answers
/// what was found for each, as a JSON array of [`Located`].
#[wasm_bindgen]
pub fn show_elements(elements: JsValue) -> Result<JsValue, JsValue> {
    let elements = page_js::elements(&elements).ok_or("the elements are not a list")?;
    let window = web_sys::window().ok_or("no window")?;
    let document = window.document().ok_or("no document")?;
    clear(&document);
    let mut located = Vec::new();
    let mut found = Vec::new();
    for element in &elements {
        let (matched_by, matches) = find(&document, element);
        // Called as the composer's chips and the item view call it.
        let label = ChipName::of(element).label;
        located.push(Located {
            label: label.clone(),
            matched_by: matched_by.filter(|_| !matches.is_empty()),
            count: matches.len() as u32,
        });
        found.extend(matches.into_iter().map(|m| (label.clone(), m)));
    }
    if let Some((_, first)) = found.first() {
        first.scroll_into_view_with_bool(false);
    }
    if !found.is_empty() {
        draw(&window, &document, &found)?;
    }
    Ok(located.to_js())
}

/// Items re-found on a new build: finds the captured `elements` (a JSON array of the
/// protocol's Element) as "Show on page" does, without outlining them, and answers a
/// [`PageRefind`]: per element, what found it, whether its captured CSS path still leads
/// to it, its path and box now (`null` for one inside a frame this page may not read);
/// and the build the page states.
#[wasm_bindgen]
pub fn refind_elements(elements: JsValue) -> Result<JsValue, JsValue> {
    let elements = page_js::elements(&elements).ok_or("the elements are not a list")?;
    let window = web_sys::window().ok_or("no window")?;
    let document = window.document().ok_or("no document")?;
    let findings = elements.iter().map(|element| {
        if let Some(path) = element.css_path.as_deref()
            && let Err(PathStop::ClosedFrame { .. }) = path_document(&document, path)
        {
            return None;
        }
        let (matched_by, matches) = find(&document, element);
        let Some(first) = matches.first().filter(|_| matched_by.is_some()) else {
            return Some(PageFinding {
                matched_by: None,
                path_leads_to_it: false,
                css_path: None,
                rect: None,
            });
        };
        let at_path = element.css_path.as_deref().and_then(|path| resolve_css_path(&document, path));
        Some(PageFinding {
            matched_by,
            path_leads_to_it: at_path.is_some_and(|e| matches.contains(&e)),
            css_path: css_path(first),
            rect: Some(frame_dom::rect_in_top(first, &document)),
        })
    });
    let answer = PageRefind {
        git_sha: dom::git_sha(&document),
        scroll: Point { x: window.scroll_x()?, y: window.scroll_y()? },
        viewport: dom::viewport(&window),
        elements: findings.collect(),
    };
    Ok(answer.to_js())
}

fn find(top: &Document, element: &Captured) -> (Option<locate::MatchedBy>, Vec<Element>) {
    // An element captured inside a frame is looked for in that frame's document.
    let document = match element.css_path.as_deref().map(|path| path_document(top, path)) {
        Some(Ok((document, _))) => document,
        Some(Err(_)) => return (None, Vec::new()),
        None => top.clone(),
    };
    for attempt in locate::attempts(element) {
        let matches = match &attempt {
            Attempt::Selector(_, selector) => all(&document, selector),
            Attempt::CssPath(path) => resolve_css_path(top, path).into_iter().collect(),
            Attempt::Text { tag, text } => by_text(&document, tag, text),
        };
        if !matches.is_empty() {
            return (Some(attempt.matched_by()), matches);
        }
    }
    (None, Vec::new())
}

fn all(document: &Document, selector: &str) -> Vec<Element> {
    let Ok(list) = document.query_selector_all(selector) else { return Vec::new() };
    (0..list.length().min(MAX_MATCHES as u32))
        .filter_map(|i| list.item(i).and_then(|n| n.dyn_into::<Element>().ok()))
        .filter(|e| e.id() != HOST_ID)
        .collect()
}

/// Elements with the tag whose own trimmed text is exactly `text`, innermost only.
fn by_text(document: &Document, tag: &str, text: &str) -> Vec<Element> {
    let selector = if tag.is_empty() { "body *" } else { tag };
    let mut found: Vec<Element> = Vec::new();
    for candidate in all_unbounded(document, selector) {
        if candidate.text_content().is_some_and(|t| t.trim() == text) {
            // Keep the innermost: drop an ancestor already found.
            found.retain(|f| !f.contains(Some(&candidate)));
            found.push(candidate);
            if found.len() >= MAX_MATCHES {
                break;
            }
        }
    }
    found
}

fn all_unbounded(document: &Document, selector: &str) -> Vec<Element> {
    let Ok(list) = document.query_selector_all(selector) else { return Vec::new() };
    (0..list.length()).filter_map(|i| list.item(i).and_then(|n| n.dyn_into::<Element>().ok())).collect()
}

/// Draws a red outline over each element, in document coordinates so they scroll with
/// the page. The host's `data-redline-boxes` lists the outlined rectangles (viewport
/// coordinates at drawing time) for tests and tools; the drawing itself sits in a closed
/// shadow root.
fn draw(window: &web_sys::Window, document: &Document, found: &[(String, Element)]) -> Result<(), JsValue> {
    let scroll_x = window.scroll_x()?;
    let scroll_y = window.scroll_y()?;
    let host = document.create_element("div")?;
    host.set_id(HOST_ID);
    host.set_attribute(
        "style",
        "all: initial; position: absolute; left: 0; top: 0; width: 0; height: 0; z-index: 2147483646; pointer-events: none;",
    )?;
    let shadow = host.attach_shadow(&ShadowRootInit::new(ShadowRootMode::Closed))?;
    let mut boxes = Vec::new();
    for (label, element) in found {
        let rect = frame_dom::rect_in_top(element, document);
        let outline = document.create_element("div")?;
        outline.set_attribute(
            "style",
            &[
                "position: absolute; left: ",
                &px(rect.x + scroll_x),
                "; top: ",
                &px(rect.y + scroll_y),
                "; width: ",
                &px(rect.width),
                "; height: ",
                &px(rect.height),
                "; outline: 3px solid #dc2626; outline-offset: 2px; border-radius: 3px; \
                 box-shadow: 0 0 0 9999px rgba(220, 38, 38, 0.04);",
            ]
            .concat(),
        )?;
        let tag = document.create_element("span")?;
        tag.set_text_content(Some(label));
        tag.set_attribute(
            "style",
            "position: absolute; top: -24px; left: -3px; background: #dc2626; color: #fff; \
             font: 600 11px/1.6 system-ui, sans-serif; padding: 0 6px; border-radius: 3px; white-space: nowrap;",
        )?;
        outline.append_child(&tag)?;
        shadow.append_child(&outline)?;
        boxes.push(page_js::object(&[
            ("label", label.to_js()),
            ("x", rect.x.to_js()),
            ("y", rect.y.to_js()),
            ("width", rect.width.to_js()),
            ("height", rect.height.to_js()),
        ]));
    }
    let boxes = js_sys::JSON::stringify(&boxes.into_iter().collect::<js_sys::Array>())?;
    host.set_attribute("data-redline-boxes", &String::from(boxes))?;
    document.document_element().ok_or("no document element")?.append_child(&host)?;

    // Removes only the drawing: the closure itself is dropped by the next `clear`.
    let remove = Closure::<dyn FnMut()>::new(|| {
        if let Some(host) =
            web_sys::window().and_then(|w| w.document()).and_then(|d| d.get_element_by_id(HOST_ID))
        {
            host.remove();
        }
    });
    let id = window
        .set_timeout_with_callback_and_timeout_and_arguments_0(remove.as_ref().unchecked_ref(), SHOW_MS)?;
    TIMER.set(Some((id, remove)));
    Ok(())
}

/// `12.5px`: the number written by JavaScript, which saves the page Rust's float
/// formatting (see `page_js`).
fn px(value: f64) -> String {
    String::from(js_sys::Number::from(value).to_string_with_radix(10).unwrap_or_else(|_| "0".into())) + "px"
}

/// Removes the outlines (and a pending removal).
fn clear(document: &Document) {
    if let Some(host) = document.get_element_by_id(HOST_ID) {
        host.remove();
    }
    if let Some((id, _closure)) = TIMER.take()
        && let Some(window) = web_sys::window()
    {
        window.clear_timeout_with_handle(id);
    }
}

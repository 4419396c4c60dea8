//! Watching the page for anything that may change what it shows or where: both the
//! reading done during the stroke (`stroke_dom.rs`) and the screenshot taken ahead
//! (`shot_ahead.rs`) start over after such a change, but not after one of our own.

use wasm_bindgen::{JsCast, JsValue};
use web_sys::{
    AddEventListenerOptions, Document, Element, EventTarget, MutationObserver, MutationObserverInit,
    MutationRecord,
};

use super::screenshot::{is_masked, is_masked_whole};

/// Has `observer` hear of every change to `document`: nodes, attributes and text.
pub fn observe_all(observer: &MutationObserver, document: &Document) -> Result<(), JsValue> {
    let options = MutationObserverInit::new();
    options.set_subtree(true);
    options.set_child_list(true);
    options.set_attributes(true);
    options.set_character_data(true);
    observer.observe_with_options(document, &options)
}

/// Whether any of the DOM changes `records` is not one Redline itself makes: the
/// overlay's host restyled (hidden for a screenshot, made transparent to hit testing
/// while a capture samples the page) and sensitive fields, frames of other origins and
/// closed shadow roots' hosts masked and unmasked for a screenshot. None of those moves or changes what the page shows.
pub fn any_not_ours(records: &js_sys::Array, overlay_host: &Element) -> bool {
    records.iter().any(|record| !is_ours(&record.unchecked_into(), overlay_host))
}

fn is_ours(record: &MutationRecord, overlay_host: &Element) -> bool {
    let Some(target) = record.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return false };
    &target == overlay_host
        || (record.attribute_name().as_deref() == Some("style")
            && (is_masked(&target) || is_masked_whole(&target)))
}

/// Calls `listener` on each of `events` anywhere in the page: capturing, so that the
/// events of any element count (a scroll of any scrollable element, not just the page's),
/// and passive, so the page never waits for it.
pub fn listen(target: &EventTarget, events: &[&str], listener: &js_sys::Function) {
    let options = AddEventListenerOptions::new();
    options.set_capture(true);
    options.set_passive(true);
    for event in events {
        let _ =
            target.add_event_listener_with_callback_and_add_event_listener_options(event, listener, &options);
    }
}

/// Undoes [`listen`].
pub fn stop_listening(target: &EventTarget, events: &[&str], listener: &js_sys::Function) {
    for event in events {
        let _ = target.remove_event_listener_with_callback_and_bool(event, listener, true);
    }
}

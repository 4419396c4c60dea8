//! The page's console errors, from the buffer `static/console-buffer.js` keeps in the
//! page's own world on stages the person enabled. Events are dispatched synchronously
//! across worlds, so one request is answered before `dispatchEvent` returns.

use std::cell::RefCell;
use std::rc::Rc;

use wasm_bindgen::prelude::*;
use web_sys::{CustomEvent, Document, Event};

const REQUEST: &str = "redline:console-request";
const ANSWER: &str = "redline:console-errors";

/// The buffered errors, oldest first; empty where no buffer runs.
pub fn errors(document: &Document) -> Vec<String> {
    let answer = Rc::new(RefCell::new(None::<String>));
    let listener = Closure::<dyn FnMut(CustomEvent)>::new({
        let answer = answer.clone();
        move |event: CustomEvent| *answer.borrow_mut() = event.detail().as_string()
    });
    if document.add_event_listener_with_callback(ANSWER, listener.as_ref().unchecked_ref()).is_err() {
        return Vec::new();
    }
    if let Ok(request) = Event::new(REQUEST) {
        let _ = document.dispatch_event(&request);
    }
    let _ = document.remove_event_listener_with_callback(ANSWER, listener.as_ref().unchecked_ref());
    let json = answer.borrow_mut().take();
    // JSON.parse rather than serde_json: what a page loads stays small (see `page_js`).
    let parsed = json.and_then(|json| js_sys::JSON::parse(&json).ok()).filter(js_sys::Array::is_array);
    parsed
        .map(|list| js_sys::Array::from(&list).iter().filter_map(|e| e.as_string()).collect())
        .unwrap_or_default()
}

//! The page's console errors and failed requests, from the buffer
//! `static/console-buffer.js` keeps in the page's own world on stages the person enabled.
//! Events are dispatched synchronously across worlds, so one request is answered before
//! `dispatchEvent` returns.

use std::cell::RefCell;
use std::rc::Rc;

use redline_protocol::FailedRequest;
use wasm_bindgen::prelude::*;
use web_sys::{CustomEvent, Document, Event};

use super::secrets::scrub_secrets;
use crate::content::page_js::field;

const REQUEST: &str = "redline:console-request";
const ANSWER: &str = "redline:console-errors";

/// What the buffer kept since the page loaded, oldest first; empty where no buffer runs.
#[derive(Debug, Default, PartialEq)]
pub struct PageLog {
    pub errors: Vec<String>,
    /// Without query strings, fragments or credentials (see [`FailedRequest::new`] and
    /// [`scrub_secrets`]).
    pub failed_requests: Vec<FailedRequest>,
}

impl PageLog {
    pub fn read(document: &Document) -> PageLog {
        let answer = Rc::new(RefCell::new(None::<String>));
        let listener = Closure::<dyn FnMut(CustomEvent)>::new({
            let answer = answer.clone();
            move |event: CustomEvent| *answer.borrow_mut() = event.detail().as_string()
        });
        if document.add_event_listener_with_callback(ANSWER, listener.as_ref().unchecked_ref()).is_err() {
            return PageLog::default();
        }
        if let Ok(request) = Event::new(REQUEST) {
            let _ = document.dispatch_event(&request);
        }
        let _ = document.remove_event_listener_with_callback(ANSWER, listener.as_ref().unchecked_ref());
        let json = answer.borrow_mut().take();
        // JSON.parse rather than serde_json: what a page loads stays small (see `page_js`).
        json.and_then(|json| js_sys::JSON::parse(&json).ok())
            .map(|log| PageLog::from_js(&log))
            .unwrap_or_default()
    }

    /// The buffer's answer, `{errors: [text], failedRequests: [{method, url, status}]}`;
    /// entries of another shape are left out.
    fn from_js(log: &JsValue) -> PageLog {
        let list = |key: &str| {
            let list = field(log, key);
            let items = if js_sys::Array::is_array(&list) {
                js_sys::Array::from(&list)
            } else {
                js_sys::Array::new()
            };
            items.into_iter()
        };
        let request = |r: JsValue| {
            let status = field(&r, "status").as_f64().filter(|s| (0.0..=f64::from(u16::MAX)).contains(s))?;
            Some(FailedRequest::new(
                &field(&r, "method").as_string()?,
                &scrub_secrets(&field(&r, "url").as_string()?),
                status as u16,
            ))
        };
        PageLog {
            // Without credentials (a logged request's `Authorization`, a JWT), and the URLs
            // in an error's text as a page's address is kept (`kept_url`).
            errors: list("errors")
                .filter_map(|e| {
                    Some(redline_protocol::with_kept_urls(&scrub_secrets(&e.as_string()?)).into_owned())
                })
                .collect(),
            failed_requests: list("failedRequests").filter_map(request).collect(),
        }
    }
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    #[wasm_bindgen_test]
    fn the_buffers_answer_is_read_without_query_strings() {
        let document = web_sys::window().unwrap().document().unwrap();
        assert_eq!(PageLog::read(&document), PageLog::default(), "no buffer runs");
        let buffer = Closure::<dyn FnMut()>::new({
            let document = document.clone();
            move || {
                let answer = r#"{"errors": ["boom", 3, "GET https://u:pw@a.example/i.png?token=1 404", "{\"Authorization\":\"Bearer abc123\"}"], "failedRequests": [
                    {"method": "GET", "url": "https://u:pw@a.example/x?token=1", "status": 404},
                    {"method": "GET", "url": "https://a.example/no-status"},
                    {"method": "POST", "url": "https://a.example/z#me", "status": 0},
                    {"method": "GET", "url": "https://a.example/verify/eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln", "status": 401}]}"#;
                let init = web_sys::CustomEventInit::new();
                init.set_detail(&JsValue::from_str(answer));
                let event = CustomEvent::new_with_event_init_dict(ANSWER, &init).unwrap();
                document.dispatch_event(&event).unwrap();
            }
        });
        document.add_event_listener_with_callback(REQUEST, buffer.as_ref().unchecked_ref()).unwrap();
        let log = PageLog::read(&document);
        document.remove_event_listener_with_callback(REQUEST, buffer.as_ref().unchecked_ref()).unwrap();
        assert_eq!(
            log,
            PageLog {
                errors: vec![
                    "boom".into(),
                    "GET https://a.example/i.png 404".into(),
                    r#"{"Authorization":"Bearer [redacted]"}"#.into(),
                ],
                failed_requests: vec![
                    FailedRequest::new("GET", "https://a.example/x", 404),
                    FailedRequest::new("POST", "https://a.example/z", 0),
                    FailedRequest::new("GET", "https://a.example/verify/[redacted]", 401),
                ],
            }
        );
    }
}

//! The screenshot taken ahead of the stroke, so that releasing the lasso does not wait
//! for one: taken once the overlay is ready, and used for every circle released while the
//! page has not changed since. A change (the DOM, a scroll, a resize, a resource loaded,
//! typing, a transition or animation ending) makes the next release take a new one, which
//! is then kept for the circles after it. What no event reports (a running animation, a
//! video) shows as it was when the shot was taken.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Document, Element, MutationObserver, MutationRecord, Window};

use super::page_watch;
use super::screenshot::{self, SENSITIVE_FIELDS};

/// The window events after which the page may look different without a DOM change.
const CHANGING_EVENTS: [&str; 6] = ["scroll", "resize", "load", "input", "transitionend", "animationend"];

/// The User Timing mark of a release that had to take the screenshot again.
const RETAKEN_MARK: &str = "redline:screenshot-retaken";

/// A screenshot under way or taken, and whether the page changed since it was begun.
struct ShotAhead {
    /// Resolves with the PNG's `data:` URL, or with an `Error` saying why there is none
    /// (never rejects: nobody may be waiting for it).
    shot: Promise,
    changed: Rc<Cell<bool>>,
    observer: MutationObserver,
    _on_mutations: Closure<dyn FnMut(Array)>,
    on_event: Closure<dyn FnMut()>,
}

thread_local! {
    static AHEAD: RefCell<Option<ShotAhead>> = const { RefCell::new(None) };
}

impl ShotAhead {
    fn take(window: &Window, document: &Document, overlay_host: &Element) -> Option<ShotAhead> {
        let changed = Rc::new(Cell::new(false));
        let on_mutations = Closure::<dyn FnMut(Array)>::new({
            let changed = changed.clone();
            let host = overlay_host.clone();
            move |records: Array| {
                if records.iter().any(|r| !is_ours(&r.unchecked_into(), &host)) {
                    changed.set(true);
                }
            }
        });
        let observer = MutationObserver::new(on_mutations.as_ref().unchecked_ref()).ok()?;
        page_watch::observe_all(&observer, document).ok()?;
        let on_event = Closure::<dyn FnMut()>::new({
            let changed = changed.clone();
            move || changed.set(true)
        });
        page_watch::listen(window, &CHANGING_EVENTS, on_event.as_ref().unchecked_ref());
        let (window, document, host) = (window.clone(), document.clone(), overlay_host.clone());
        let shot = wasm_bindgen_futures::future_to_promise(async move {
            Ok(match screenshot::visible_tab(&window, &document, &host).await {
                Ok(url) => JsValue::from(url),
                Err(why) => js_sys::Error::new(&why).into(),
            })
        });
        Some(ShotAhead { shot, changed, observer, _on_mutations: on_mutations, on_event })
    }
}

impl Drop for ShotAhead {
    fn drop(&mut self) {
        self.observer.disconnect();
        if let Some(window) = web_sys::window() {
            page_watch::stop_listening(&window, &CHANGING_EVENTS, self.on_event.as_ref().unchecked_ref());
        }
    }
}

/// Whether a DOM change is one the screenshot itself makes: the overlay hidden and shown
/// again, sensitive fields masked and unmasked.
fn is_ours(record: &MutationRecord, overlay_host: &Element) -> bool {
    let Some(target) = record.target().and_then(|t| t.dyn_into::<Element>().ok()) else { return false };
    &target == overlay_host
        || (record.attribute_name().as_deref() == Some("style")
            && target.matches(SENSITIVE_FIELDS).unwrap_or(false))
}

/// Begins the screenshot ahead of the stroke (the overlay is hidden while it is taken).
pub fn take(window: &Window, document: &Document, overlay_host: &Element) {
    AHEAD.set(ShotAhead::take(window, document, overlay_host));
}

/// The screenshot for a circle released now: the one taken ahead if it was taken and the
/// page has not changed since it was begun, else a new one, kept for the circles after
/// this.
pub async fn for_release(
    window: &Window,
    document: &Document,
    overlay_host: &Element,
) -> Result<String, String> {
    let ahead = AHEAD.with_borrow(|a| a.as_ref().map(|a| (a.shot.clone(), a.changed.clone())));
    if let Some((shot, changed)) = ahead {
        let taken = as_result(JsFuture::from(shot).await);
        if taken.is_ok() && !changed.get() {
            return taken;
        }
    }
    // Seen by `tests/bench/instant.mjs`, which counts how often a release waits for one.
    if let Some(performance) = window.performance() {
        let _ = performance.mark(RETAKEN_MARK);
    }
    take(window, document, overlay_host);
    let Some(shot) = AHEAD.with_borrow(|a| a.as_ref().map(|a| a.shot.clone())) else {
        return screenshot::visible_tab(window, document, overlay_host).await;
    };
    as_result(JsFuture::from(shot).await)
}

/// Stops watching the page (the overlay was removed).
pub fn stop() {
    AHEAD.set(None);
}

fn as_result(taken: Result<JsValue, JsValue>) -> Result<String, String> {
    let taken = taken.unwrap_or_else(|error| error);
    match taken.dyn_ref::<js_sys::Error>() {
        Some(error) => Err(error.message().into()),
        None => taken.as_string().ok_or_else(|| "a screenshot without its image".to_owned()),
    }
}

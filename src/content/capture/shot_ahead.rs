//! The screenshot taken ahead of the stroke, so that releasing the lasso does not wait
//! for one: taken once the overlay is ready, posted to the overlay as soon as it is taken
//! (a capture then names it by its id instead of carrying it), and used for every circle
//! released while the page has not changed since. A change (the DOM, a scroll, a
//! resize, a resource loaded, typing, a transition or animation ending) makes the next
//! release take a new one, which is then kept for the circles after it. What no event
//! reports (a running animation, a video) shows as it was when the shot was taken.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::{Array, Promise};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Document, Element, MessagePort, MutationObserver, Window};

use super::page_watch;
use super::screenshot;
use crate::content::page_js;

/// The window events after which the page may look different without a DOM change.
const CHANGING_EVENTS: [&str; 6] = ["scroll", "resize", "load", "input", "transitionend", "animationend"];

/// The User Timing mark of the screenshot taken ahead posted, the overlay shown again.
const SHOWN_AGAIN_MARK: &str = "redline:shot-ahead-posted";

/// The User Timing mark of a release that had to take the screenshot again.
const RETAKEN_MARK: &str = "redline:screenshot-retaken";

/// A screenshot under way or taken, and whether the page changed since it was begun.
struct ShotAhead {
    /// Resolves with the shot's id once it has been posted to the overlay, or with an
    /// `Error` saying why there is none (never rejects: nobody may be waiting for it).
    shot: Promise,
    /// The shot's id once it has been posted.
    posted: Rc<Cell<Option<u32>>>,
    changed: Rc<Cell<bool>>,
    observer: MutationObserver,
    _on_mutations: Closure<dyn FnMut(Array)>,
    on_event: Closure<dyn FnMut()>,
}

thread_local! {
    static AHEAD: RefCell<Option<ShotAhead>> = const { RefCell::new(None) };
    /// The id the next screenshot is posted with.
    static NEXT_ID: Cell<u32> = const { Cell::new(1) };
}

impl ShotAhead {
    fn take(
        window: &Window,
        document: &Document,
        overlay_host: &Element,
        overlay: &MessagePort,
    ) -> Option<ShotAhead> {
        let changed = Rc::new(Cell::new(false));
        let on_mutations = Closure::<dyn FnMut(Array)>::new({
            let changed = changed.clone();
            let host = overlay_host.clone();
            move |records: Array| {
                if page_watch::any_not_ours(&records, &host) {
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
        let (window, document, host, overlay) =
            (window.clone(), document.clone(), overlay_host.clone(), overlay.clone());
        let posted = Rc::new(Cell::new(None));
        let shot = wasm_bindgen_futures::future_to_promise({
            let posted = posted.clone();
            async move {
                Ok(match shoot_and_post(&window, &document, &host, &overlay).await {
                    Ok(id) => {
                        // The overlay, hidden while the tab was captured, shows again:
                        // where a gesture's wait ends for the eye (`tests/bench/unheld.mjs`).
                        if let Some(performance) = window.performance() {
                            let _ = performance.mark(SHOWN_AGAIN_MARK);
                        }
                        posted.set(Some(id));
                        JsValue::from(id)
                    }
                    Err(why) => js_sys::Error::new(&why).into(),
                })
            }
        });
        Some(ShotAhead { shot, posted, changed, observer, _on_mutations: on_mutations, on_event })
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

/// Begins the screenshot ahead of the stroke (the overlay is hidden while it is taken),
/// to be posted to the `overlay` end of the capture's channel.
pub fn take(window: &Window, document: &Document, overlay_host: &Element, overlay: &MessagePort) {
    AHEAD.set(ShotAhead::take(window, document, overlay_host, overlay));
}

/// The id of the screenshot taken ahead, if it has been posted and the page has not
/// changed since it was begun: what [`for_release`] would answer, without waiting.
pub fn current() -> Option<u32> {
    AHEAD.with_borrow(|a| a.as_ref().filter(|a| !a.changed.get()).and_then(|a| a.posted.get()))
}

/// The screenshot taken ahead, which resolves (and never rejects) once it was posted or
/// could not be.
pub fn settled() -> Option<Promise> {
    AHEAD.with_borrow(|a| a.as_ref().map(|a| a.shot.clone()))
}

/// The id of the screenshot for a circle released now, posted to `overlay` by the time
/// this answers: the one taken ahead if it was taken and the page has not changed since
/// it was begun, else a new one, kept for the circles after this.
pub async fn for_release(
    window: &Window,
    document: &Document,
    overlay_host: &Element,
    overlay: &MessagePort,
) -> Result<u32, String> {
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
    take(window, document, overlay_host, overlay);
    let Some(shot) = AHEAD.with_borrow(|a| a.as_ref().map(|a| a.shot.clone())) else {
        return shoot_and_post(window, document, overlay_host, overlay).await;
    };
    as_result(JsFuture::from(shot).await)
}

/// Screenshots the tab and posts the image to `overlay`: its id.
async fn shoot_and_post(
    window: &Window,
    document: &Document,
    overlay_host: &Element,
    overlay: &MessagePort,
) -> Result<u32, String> {
    let image = screenshot::visible_tab(window, document, overlay_host).await?;
    let id = NEXT_ID.replace(NEXT_ID.get().wrapping_add(1));
    overlay
        .post_message(&page_js::screenshot_event(id, &JsValue::from(image)))
        .map_err(|_| "the screenshot could not be sent to the overlay".to_owned())?;
    Ok(id)
}

/// Stops watching the page (the overlay was removed).
pub fn stop() {
    AHEAD.set(None);
}

fn as_result(taken: Result<JsValue, JsValue>) -> Result<u32, String> {
    let taken = taken.unwrap_or_else(|error| error);
    match taken.dyn_ref::<js_sys::Error>() {
        Some(error) => Err(error.message().into()),
        None => taken.as_f64().map(|id| id as u32).ok_or_else(|| "a screenshot without its id".to_owned()),
    }
}

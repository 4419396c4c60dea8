//! The channel to the page: which page this overlay covers, what it tells the content
//! script there, and the capture's port the content script hands over.

use leptos::ev;
use leptos::prelude::*;
use redline_protocol::{ElementStyles, Point};
use serde::Serialize;
use wasm_bindgen::prelude::{Closure, JsCast, JsValue};
use web_sys::{MessageEvent, MessagePort};

use super::lasso::release;
use super::{Composition, Step};
use crate::messages::{Captured, OverlayEvent, PageEvent};
use crate::page_event_js::read_page_event;
use crate::ui::shot::{PageShot, PageShots};

/// The page this overlay covers, as the content script named it (`?page=`).
#[derive(Debug, Clone)]
pub(super) struct Page {
    /// Without query string, fragment or user name and password
    /// (`redline_protocol::kept_url`).
    pub(super) url: String,
    pub(super) origin: String,
    /// The match pattern for the page's host (every port), e.g. `https://shop.example/*`.
    pub(super) host_pattern: String,
    /// The secret the content script handed the capture's channel over with (`?channel=`).
    pub(super) channel: String,
}

impl Page {
    pub(super) fn from_location() -> Option<Page> {
        let search = window().location().search().ok()?;
        let params = web_sys::UrlSearchParams::new_with_str(&search).ok()?;
        let url = redline_protocol::kept_url(&params.get("page")?).into_owned();
        let channel = params.get("channel").filter(|c| !c.is_empty())?;
        let parsed = web_sys::Url::new(&url).ok()?;
        let host_pattern = format!("{}//{}/*", parsed.protocol(), parsed.hostname());
        Some(Page { url, origin: parsed.origin(), host_pattern, channel })
    }
}

/// Tells the content script in the embedding page what happened. The page can read
/// these messages too, so they carry nothing it does not already know.
pub(super) fn tell_page(event: &OverlayEvent, page: &Page) {
    let Some(parent) = window().parent().ok().flatten() else { return };
    if let Ok(message) = event.serialize(&serde_wasm_bindgen::Serializer::json_compatible()) {
        let _ = parent.post_message(&message, &page.origin);
    }
}

/// Hands the composer, open since the release, the capture and the screenshot it names
/// from those posted ahead of it; the screenshot is annotated in the composer. A capture
/// that comes after the filer went back to drawing is dropped.
fn show_capture(
    captured: Captured,
    shots: StoredValue<PageShots, LocalStorage>,
    step: RwSignal<Step, LocalStorage>,
) {
    let Step::Capturing { outline } = step.get_untracked() else { return };
    let page_shot = shots.with_value(|shots| shots.named(&captured.screenshot));
    step.set(Step::Composing(Box::new(Composition { outline, captured, page_shot })));
}

/// Takes the capture's channel the content script hands over (a `PageEvent::Port`
/// carrying the secret from our address) and, on it, the screenshots, the capture, its
/// computed styles and the strokes drawn with the mount script's pen; closes the
/// channel on cleanup.
pub(super) fn listen(
    page: &Page,
    step: RwSignal<Step, LocalStorage>,
    set_styles: WriteSignal<Option<Vec<Option<ElementStyles>>>, LocalStorage>,
    on_circled: impl Fn(Vec<Point>) + Clone + 'static,
    on_abandoned: impl Fn() + Clone + 'static,
) {
    // The capture's channel from the content script, and its listener kept alive with it.
    let channel = StoredValue::new_local(None::<(MessagePort, Closure<dyn FnMut(MessageEvent)>)>);
    let shots = StoredValue::new_local(PageShots::default());
    let on_message = window_event_listener(ev::message, {
        let page = page.clone();
        move |event| {
            let from_parent = window().parent().ok().flatten().is_some_and(|parent| {
                event.source().is_some_and(|source| JsValue::from(source) == JsValue::from(parent))
            });
            if event.origin() != page.origin || !from_parent {
                return;
            }
            // Any script of the page can post this window messages too: only the channel
            // handed over with the secret from our address carries the capture.
            let Some(PageEvent::Port { token }) = read_page_event(&event.data()) else { return };
            let Some(port) =
                event.ports().get(0).dyn_into::<MessagePort>().ok().filter(|_| token == page.channel)
            else {
                return;
            };
            let (on_circled, on_abandoned) = (on_circled.clone(), on_abandoned.clone());
            let on_captured = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
                if let Some(shot) = PageShot::posted(&event.data()) {
                    shots.update_value(|shots| shots.keep(shot));
                    return;
                }
                match read_page_event(&event.data()) {
                    Some(PageEvent::Captured(captured)) => {
                        set_styles.set(None);
                        show_capture(*captured, shots, step);
                    }
                    Some(PageEvent::Styles { elements }) => set_styles.set(Some(elements)),
                    Some(PageEvent::Drawn { stroke }) if matches!(step.get_untracked(), Step::Drawing) => {
                        release(&stroke, &on_circled, &on_abandoned);
                    }
                    _ => {}
                }
            });
            port.set_onmessage(Some(on_captured.as_ref().unchecked_ref()));
            if let Some(Some((old, _))) = channel.try_update_value(|c| c.replace((port, on_captured))) {
                old.close();
            }
        }
    });
    on_cleanup(move || {
        on_message.remove();
        if let Some(Some((port, _))) = channel.try_update_value(Option::take) {
            port.close();
        }
    });
}

//! The stroke-time side of a capture in the page: while the person draws, the overlay
//! sends the stroke so far and the content script reads the page for it in slices
//! paced by [`Pacer`] (see `stroke.rs`), so that release has little left to do. A scroll,
//! a resize, a resource loading (an image or a font can move what follows it) or any
//! change to the page's DOM but our own (`page_watch::any_not_ours`) starts the reading
//! over.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use js_sys::Array;
use redline_protocol::Point;
use wasm_bindgen::prelude::*;
use web_sys::{Document, Element, MutationObserver, Window};

use super::dom::{self, Capture};
use super::page_watch;
use super::stroke::Pacer;

/// A released stroke's reading is one User Timing measure of this name, from the press
/// to the release, with the slices' count, longest and total in its `detail`: the cost
/// of reading during the stroke can be seen (tests/bench/capture.mjs reports it) while
/// the page's timeline gets one entry per stroke, not one per slice.
pub const STROKE_MEASURE: &str = "redline:stroke";

/// What makes the page move under a capture: listened to on the window, capturing, so
/// that scrolling any element and any resource's load count.
const MOVING_EVENTS: [&str; 3] = ["scroll", "resize", "load"];

/// One stroke in progress.
struct Drawing {
    document: Document,
    ignore: Element,
    /// The stroke so far.
    points: Vec<Point>,
    capture: Option<Capture>,
    pacer: Pacer,
    /// Set by the observers when the page moved or changed under the capture.
    moved: Rc<Cell<bool>>,
    observer: MutationObserver,
    _on_mutation: Closure<dyn FnMut(Array)>,
    on_moved: Closure<dyn FnMut()>,
    /// Whether a slice is waiting on a timer.
    scheduled: bool,
    /// When the stroke began (`performance.now()`).
    started: f64,
}

thread_local! {
    static DRAWING: RefCell<Option<Drawing>> = const { RefCell::new(None) };
}

impl Drawing {
    fn start(document: Document, ignore: Element) -> Option<Drawing> {
        let window = web_sys::window()?;
        let moved = Rc::new(Cell::new(false));
        let on_mutation = Closure::<dyn FnMut(Array)>::new({
            let moved = moved.clone();
            let ours = ignore.clone();
            move |records: Array| {
                if page_watch::any_not_ours(&records, &ours) {
                    moved.set(true);
                }
            }
        });
        let observer = MutationObserver::new(on_mutation.as_ref().unchecked_ref()).ok()?;
        page_watch::observe_all(&observer, &document).ok()?;
        let on_moved = Closure::<dyn FnMut()>::new({
            let moved = moved.clone();
            move || moved.set(true)
        });
        page_watch::listen(&window, &MOVING_EVENTS, on_moved.as_ref().unchecked_ref());
        let capture = Capture::new(&document, Some(&ignore));
        Some(Drawing {
            document,
            ignore,
            points: Vec::new(),
            capture,
            pacer: Pacer::default(),
            moved,
            observer,
            _on_mutation: on_mutation,
            on_moved,
            scheduled: false,
            started: window.performance().map_or(0.0, |p| p.now()),
        })
    }

    /// Whether the page moved or changed since the last look (records not yet handed to
    /// the observer's callback included).
    fn moved(&self) -> bool {
        let changed = page_watch::any_not_ours(&self.observer.take_records(), &self.ignore);
        self.moved.replace(false) || changed
    }

    /// The capture, started over (for the stroke so far, without what is being added) if
    /// the page moved or changed.
    fn capture(&mut self) -> Option<&mut Capture> {
        if self.moved() {
            self.capture = Capture::new(&self.document, Some(&self.ignore));
            if let Some(capture) = &mut self.capture {
                capture.extend(&self.points);
            }
        }
        self.capture.as_mut()
    }
}

impl Drop for Drawing {
    fn drop(&mut self) {
        self.observer.disconnect();
        if let Some(window) = web_sys::window() {
            page_watch::stop_listening(&window, &MOVING_EVENTS, self.on_moved.as_ref().unchecked_ref());
        }
    }
}

/// The stroke so far; one no longer than the last begins a new stroke (a press sends a
/// stroke of one point). Reads a slice of the page for it now if this frame has room,
/// else soon.
pub fn drawing(stroke: &[Point], document: &Document, overlay: &Element) {
    DRAWING.with_borrow_mut(|drawing| {
        if drawing.as_ref().is_none_or(|d| stroke.len() <= d.points.len()) {
            // The old stroke's observers go with it (Drop) before the new one's start.
            *drawing = None;
            *drawing = Drawing::start(document.clone(), overlay.clone());
        }
        if let Some(drawing) = drawing {
            let added = &stroke[drawing.points.len()..];
            if let Some(capture) = drawing.capture() {
                capture.extend(added);
            }
            drawing.points.extend_from_slice(added);
        }
    });
    slice();
}

/// What the stroke has read, for the release; `None` if the page moved or changed.
pub fn take() -> Option<Capture> {
    let mut drawing = DRAWING.take()?;
    if let Some(performance) = web_sys::window().and_then(|w: Window| w.performance()) {
        let spent = drawing.pacer.spent_in_all();
        let detail =
            [("slices", f64::from(spent.slices)), ("longest", spent.longest), ("total", spent.total)];
        dom::measure(&performance, STROKE_MEASURE, drawing.started, performance.now(), &detail);
    }
    let moved = drawing.moved();
    drawing.capture.take().filter(|_| !moved)
}

/// Ends the stroke without a release (abandoned, or the overlay went away): its
/// observers go with it.
pub fn cancel() {
    DRAWING.take();
}

/// Reads as much as this frame's share allows, and asks for another slice if work is left.
fn slice() {
    let Some(performance) = web_sys::window().and_then(|w: Window| w.performance()) else { return };
    let wait = DRAWING.with_borrow_mut(|drawing| {
        let drawing = drawing.as_mut()?;
        if drawing.scheduled {
            return None;
        }
        let started = performance.now();
        let allowance = drawing.pacer.allowance(started);
        if allowance > 0.0 {
            let more =
                drawing.capture().is_some_and(|c| c.work_until(|| performance.now(), started + allowance));
            drawing.pacer.spent(performance.now() - started);
            if !more {
                return None;
            }
        }
        drawing.scheduled = true;
        Some(drawing.pacer.wait(performance.now()))
    });
    if let Some(wait) = wait {
        wasm_bindgen_futures::spawn_local(async move {
            crate::browser::timer::sleep(wait).await;
            DRAWING.with_borrow_mut(|drawing| {
                if let Some(drawing) = drawing {
                    drawing.scheduled = false;
                }
            });
            slice();
        });
    }
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    fn start(document: &Document, overlay: &Element) {
        let stroke = [Point { x: 10.0, y: 10.0 }, Point { x: 200.0, y: 10.0 }, Point { x: 200.0, y: 200.0 }];
        drawing(&stroke[..1], document, overlay);
        drawing(&stroke, document, overlay);
    }

    #[wasm_bindgen_test]
    fn what_the_stroke_read_is_kept_only_while_the_page_stays_as_it_was() {
        let document = web_sys::window().unwrap().document().unwrap();
        let overlay = document.create_element("div").unwrap();
        start(&document, &overlay);
        assert!(take().is_some(), "nothing changed");
        assert!(take().is_none(), "taken once");

        start(&document, &overlay);
        let added = document.create_element("p").unwrap();
        document.body().unwrap().append_child(&added).unwrap();
        assert!(take().is_none(), "the DOM changed after the stroke read it");
        added.remove();

        start(&document, &overlay);
        cancel();
        assert!(take().is_none(), "cancelled");
    }

    #[wasm_bindgen_test]
    fn our_own_overlay_restyled_during_the_stroke_keeps_what_it_read() {
        let document = web_sys::window().unwrap().document().unwrap();
        let overlay = document.create_element("div").unwrap();
        let page_element = document.create_element("p").unwrap();
        let body = document.body().unwrap();
        body.append_child(&overlay).unwrap();
        body.append_child(&page_element).unwrap();
        let restyle = |element: &Element| {
            let style = element.unchecked_ref::<web_sys::HtmlElement>().style();
            style.set_property("pointer-events", "none").unwrap();
            style.remove_property("pointer-events").unwrap();
        };

        start(&document, &overlay);
        restyle(&overlay);
        assert!(take().is_some(), "a capture sampling the page or a screenshot restyles the overlay");

        start(&document, &overlay);
        restyle(&page_element);
        assert!(take().is_none(), "a page element restyled");
        overlay.remove();
        page_element.remove();
    }
}

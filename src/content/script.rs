//! The page side: imported into the active tab on a gesture by `static/content.js`,
//! which mounts the overlay first and then hands it to [`attach`].
//! This module is compiled to JavaScript (wasm2js) because a page's CSP may forbid wasm
//! in content scripts; everything with a UI runs in the overlay iframe, an extension
//! page, which the page can neither read nor style.

use std::cell::RefCell;

use js_sys::{Array, Function};
use wasm_bindgen::prelude::*;
use web_sys::{
    Element, HtmlElement, HtmlIFrameElement, KeyboardEvent, MessageChannel, MessageEvent, MessagePort, Window,
};

use redline_protocol::{Capture, Element as Circled, Point};

use crate::browser::chrome;
use crate::content::capture::console::PageLog;
use crate::content::capture::dom::{self, Circle, PageContext};
use crate::content::capture::frame_dom;
use crate::content::capture::geometry::Polygon;
use crate::content::capture::shot_ahead;
use crate::content::capture::stroke_dom;
use crate::content::capture::styles_dom::StyleReader;
use crate::content::page_js;
use crate::messages::{Captured, OverlayEvent};
use crate::worker_call::{CaptureInFrame, FrameCaptured};

/// The host's `data-redline-state` reads `loading` (set by the mount script), then
/// `ready` once the overlay app is up.
pub const STATE_ATTRIBUTE: &str = "data-redline-state";

#[wasm_bindgen]
extern "C" {
    /// The mount script's pen (`static/content.js`): the layer that takes the stroke
    /// from the gesture on, until the overlay is up.
    pub type Pen;

    /// Calls `take` with the stroke drawn on the pen (a list of `{x, y}`) once it is
    /// released, at once if it already is, and never if none was begun; the pen leaves
    /// the page now or at that release.
    #[wasm_bindgen(method, js_name = handOver)]
    fn hand_over(this: &Pen, take: &JsValue);
}

/// The page listeners of a mounted overlay, kept so unmounting removes exactly them.
struct Mounted {
    host: Element,
    frame: HtmlIFrameElement,
    /// Until the overlay is up: the pen taking the stroke meanwhile.
    pen: Option<Pen>,
    /// Put in the page ahead of a gesture (an enabled stage's page load) and not woken
    /// yet: hidden, so it takes no key, focus or screenshot.
    asleep: bool,
    /// Put in the page ahead of a gesture: closing it puts it back to sleep.
    ahead: bool,
    /// Our end of the channel the capture goes through, once the overlay has its end:
    /// from when the overlay said it is up.
    port: Option<MessagePort>,
    /// Whether the capture is still to be rehearsed (see [`rehearse_capture_when_idle`]):
    /// until it was, or a circle was released.
    rehearsal_due: bool,
    on_key: Closure<dyn FnMut(KeyboardEvent)>,
    on_message: Closure<dyn FnMut(MessageEvent)>,
}

thread_local! {
    static MOUNTED: RefCell<Option<Mounted>> = const { RefCell::new(None) };
}

/// Takes over the overlay that the mount script (`static/content.js`) put in the page
/// before this module had loaded: listens to its frame, hands it the capture's channel
/// with the secret `channel` once it is ready, and then takes the screenshot ahead of the
/// stroke. `early` holds what the frame posted before this module was there; `pen` is
/// the layer over the frame that takes a stroke until then. `ahead`: the overlay was put
/// in an enabled stage's page ahead of a gesture, and with no `pen` it has not been woken
/// yet (see [`wake`]).
#[wasm_bindgen]
pub fn attach(
    host: Element,
    frame: HtmlIFrameElement,
    channel: String,
    early: Array,
    pen: Option<Pen>,
    ahead: bool,
) -> Result<(), JsValue> {
    attach_overlay(host, frame, pen, ahead, &chrome::extension_origin(), &channel)?;
    let listener = MOUNTED.with_borrow(|m| m.as_ref().map(|m| m.on_message.as_ref().clone()));
    if let Some(listener) = listener.and_then(|l| l.dyn_into::<Function>().ok()) {
        for event in early {
            listener.call1(&JsValue::NULL, &event)?;
        }
    }
    Ok(())
}

/// Listens to the overlay in `frame` (inside `host`), trusting messages only from
/// `overlay_origin`. Separate from [`attach`] so tests can attach without `chrome.*`.
pub fn attach_overlay(
    host: Element,
    frame: HtmlIFrameElement,
    pen: Option<Pen>,
    ahead: bool,
    overlay_origin: &str,
    channel: &str,
) -> Result<(), JsValue> {
    let window = web_sys::window().ok_or("no window")?;
    if MOUNTED.with_borrow(Option::is_some) {
        unmount()?;
    }

    let on_key = Closure::<dyn FnMut(KeyboardEvent)>::new(|event: KeyboardEvent| {
        // Asleep, the overlay is not there for the person, nor is their `Esc` ours.
        let awake = MOUNTED.with_borrow(|m| m.as_ref().is_some_and(|m| !m.asleep));
        if awake && event.key() == "Escape" {
            event.stop_propagation();
            event.prevent_default();
            close();
        }
    });
    window.add_event_listener_with_callback_and_bool("keydown", on_key.as_ref().unchecked_ref(), true)?;

    let trusted_origin = overlay_origin.to_owned();
    let channel = channel.to_owned();
    let frame_for_messages = frame.clone();
    let host_for_messages = host.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        // Trusted: a page's script can take our frame's window from any message it
        // sent (`event.source`) and dispatch a `MessageEvent` of its own naming it and
        // the extension's origin; only one the browser delivered is trusted.
        let from_our_frame = event.is_trusted()
            && event.origin() == trusted_origin
            && frame_for_messages
                .content_window()
                .is_some_and(|w| event.source().is_some_and(|s| JsValue::from(w) == JsValue::from(s)));
        if !from_our_frame {
            return;
        }
        match page_js::overlay_event(&event.data()) {
            Some(OverlayEvent::Ready) => overlay_ready(&channel, &trusted_origin),
            Some(OverlayEvent::Close) => close(),
            Some(OverlayEvent::Drawing { stroke }) => {
                if let Some(document) = web_sys::window().and_then(|w| w.document()) {
                    stroke_dom::drawing(&stroke, &document, &host_for_messages);
                }
            }
            Some(OverlayEvent::StrokeAbandoned) => stroke_dom::cancel(),
            Some(OverlayEvent::Circled { stroke }) => {
                capture_and_reply(stroke);
            }
            None => {}
        }
    });
    window.add_event_listener_with_callback("message", on_message.as_ref().unchecked_ref())?;

    MOUNTED.set(Some(Mounted {
        host,
        frame,
        asleep: ahead && pen.is_none(),
        ahead,
        pen,
        port: None,
        rehearsal_due: true,
        on_key,
        on_message,
    }));
    Ok(())
}

/// Esc or the overlay's Close: an overlay put in the page ahead of a gesture (on an
/// enabled stage) goes back to sleep, ready for the next one; any other leaves the page.
fn close() {
    let Some((host, pen)) = MOUNTED.with_borrow_mut(|m| {
        let m = m.as_mut().filter(|m| m.ahead)?;
        m.asleep = true;
        Some((m.host.clone(), m.pen.take()))
    }) else {
        let _ = unmount();
        return;
    };
    stroke_dom::cancel();
    shot_ahead::stop();
    // The pen leaves (now, or at the release of a stroke it no longer hands on).
    if let Some(pen) = pen {
        pen.hand_over(&Closure::once_into_js(|_: JsValue| {}));
    }
    // As the mount script hides it: unseen, out of the keyboard's and the pointer's way.
    let style = host.unchecked_ref::<HtmlElement>().style();
    let _ = style.set_property("visibility", "hidden");
    let _ = style.set_property("pointer-events", "none");
    let _ = host.set_attribute(STATE_ATTRIBUTE, "asleep");
}

/// Removes the overlay and its listeners; nothing of ours is left in the page.
pub fn unmount() -> Result<(), JsValue> {
    stroke_dom::cancel();
    shot_ahead::stop();
    let Some(mounted) = MOUNTED.take() else { return Ok(()) };
    let window: Window = web_sys::window().ok_or("no window")?;
    window.remove_event_listener_with_callback_and_bool(
        "keydown",
        mounted.on_key.as_ref().unchecked_ref(),
        true,
    )?;
    window.remove_event_listener_with_callback("message", mounted.on_message.as_ref().unchecked_ref())?;
    if let Some(port) = mounted.port {
        port.close();
    }
    mounted.host.remove();
    Ok(())
}

const CAPTURE_MARK: &str = "redline:capture-start";
const CAPTURE_MEASURE: &str = "redline:capture";

/// Reads what the outline circles and hands it to the overlay through the channel only
/// it holds the other end of, with the id of the screenshot posted there ahead of it:
/// the page can neither read the capture nor send one the overlay would take. All in
/// the task of the release's message unless frames of other origins must be entered or
/// the screenshot taken again (a future spawned there began 4–14 ms later on the demo
/// stage).
fn capture_and_reply(stroke: Vec<Point>) {
    let Some((host, frame, Some(port))) = MOUNTED.with_borrow_mut(|m| {
        // Asleep, the overlay is hidden: a circle drawn on it (a page may unhide the host)
        // is no person's request, and takes no screenshot.
        let m = m.as_mut().filter(|m| !m.asleep)?;
        m.rehearsal_due = false;
        Some((m.host.clone(), m.frame.clone(), m.port.clone()))
    }) else {
        return;
    };
    let Some(window) = web_sys::window() else { return };
    let Some(document) = window.document() else { return };
    let polygon = Polygon::new(stroke);
    // User Timing entries, so the time from release to elements captured can be
    // measured on any page (see tests/bench/capture.mjs).
    let performance = window.performance();
    if let Some(p) = &performance {
        let _ = p.mark(CAPTURE_MARK);
    }
    let circle = dom::circled_elements(&document, &polygon, Some(&host), stroke_dom::take());
    if let Some(p) = &performance {
        let _ = p.measure_with_start_mark(CAPTURE_MEASURE, CAPTURE_MARK);
    }
    let page = Page { window, document, host, frame };
    match shot_ahead::current() {
        // The usual case, all in this task: nothing to wait for.
        Some(id) if circle.closed_frames.is_empty() => {
            post_capture(&page, &port, &polygon, with_frames_entered(circle, Vec::new()), Ok(id));
        }
        _ => wasm_bindgen_futures::spawn_local(async move {
            let filed = enter_closed_frames(circle, &polygon).await;
            let screenshot = shot_ahead::for_release(&page.window, &page.document, &page.host, &port).await;
            post_capture(&page, &port, &polygon, filed, screenshot);
        }),
    }
}

/// The page a capture is read from, and our overlay in it.
struct Page {
    window: Window,
    document: web_sys::Document,
    host: Element,
    frame: HtmlIFrameElement,
}

/// Posts the capture with the page's context and the id of its `screenshot`, then its
/// styles.
fn post_capture(
    page: &Page,
    port: &MessagePort,
    polygon: &Polygon,
    filed: Filed,
    screenshot: Result<u32, String>,
) {
    let (captured, styled) = captured(page, polygon, filed, screenshot);
    let _ = port.post_message(&page_js::captured_event(&captured));
    post_styles(page, port, &styled);
}

/// What the overlay is sent of a circle: the capture with the page's context and the id
/// of its `screenshot`; and the elements whose styles follow it.
fn captured(
    page: &Page,
    polygon: &Polygon,
    filed: Filed,
    screenshot: Result<u32, String>,
) -> (Captured, Vec<Option<Element>>) {
    let Filed { elements, unreadable_frames, styled } = filed;
    let context = PageContext::read(&page.window, &page.document);
    let log = PageLog::read(&page.document);
    let captured = Captured {
        capture: Capture {
            bounds: polygon.bounds(),
            stroke: polygon.points().to_vec(),
            elements,
            device_pixel_ratio: Some(context.device_pixel_ratio),
            scroll: Some(context.scroll),
            failed_requests: log.failed_requests,
        },
        route: context.route,
        locale: context.locale,
        viewport: context.viewport,
        git_sha: context.git_sha,
        console_errors: log.errors,
        screenshot,
        unreadable_frames,
    };
    (captured, styled)
}

/// Runs a release's capture once, on a few pixels in the middle of the viewport, when
/// the page is next idle after the screenshot taken ahead, and throws it away, unless a
/// circle was released before. The first release in a page took 13–27 ms to capture on
/// the demo stage, the second and third in the same tab 2–11 (the `redline:capture`
/// measure; docs/benchmarks-history.md, "Instant"): the browser compiles this module's code as it
/// is first called, and the release is where most of it is. The rehearsal posts nothing.
fn rehearse_capture_when_idle(after: Option<js_sys::Promise>) {
    wasm_bindgen_futures::spawn_local(async move {
        if let Some(shot) = after {
            let _ = wasm_bindgen_futures::JsFuture::from(shot).await;
        }
        if let Some(window) = web_sys::window() {
            let rehearse = Closure::once_into_js(rehearse_capture);
            let _ = window.request_idle_callback(rehearse.unchecked_ref());
        }
    });
}

fn rehearse_capture() {
    let Some((host, frame)) = MOUNTED.with_borrow_mut(|m| {
        let m = m.as_mut().filter(|m| m.rehearsal_due)?;
        m.rehearsal_due = false;
        Some((m.host.clone(), m.frame.clone()))
    }) else {
        return;
    };
    let Some(window) = web_sys::window() else { return };
    let Some(document) = window.document() else { return };
    let viewport = dom::viewport(&window);
    let middle = Point { x: viewport.width / 2.0, y: viewport.height / 2.0 };
    let polygon = Polygon::new(
        [(-4.0, -4.0), (4.0, -4.0), (4.0, 4.0), (-4.0, 4.0)]
            .map(|(dx, dy)| Point { x: middle.x + dx, y: middle.y + dy })
            .to_vec(),
    );
    let circle = dom::circled_elements(&document, &polygon, Some(&host), None);
    let page = Page { window, document, host, frame };
    let (captured, _) = captured(&page, &polygon, with_frames_entered(circle, Vec::new()), Ok(0));
    page_js::captured_event(&captured);
}

/// Reads the computed styles of the elements just handed over (`styled[i]` is filed
/// element `i`, where it is one whose styles are read) and sends them after the capture:
/// a page's computed styles take milliseconds to read, which the composer need not wait
/// for.
fn post_styles(page: &Page, port: &MessagePort, styled: &[Option<Element>]) {
    // The default elements styles are compared with go into our frame's shadow root.
    let reader =
        page.frame.parent_node().and_then(|root| StyleReader::new(&page.window, &page.document, &root));
    let elements = reader.map(|reader| reader.read(styled)).unwrap_or_default();
    let _ = port.post_message(&page_js::styles_event(&elements));
}

/// The circled frames of other origins, captured inside through the worker, which can
/// enter a frame only where the person granted its origin: their elements replace the
/// frame element, with boxes in this viewport and paths through the frame. A frame it
/// cannot enter (or where nothing inside was circled) stays as itself; the origins of
/// those it could not enter are returned.
async fn enter_closed_frames(circle: Circle, polygon: &Polygon) -> Filed {
    let mut replies = Vec::with_capacity(circle.closed_frames.len());
    for closed in &circle.closed_frames {
        let request = frame_dom::frame_path(&closed.frame).map(|path| {
            let mut stroke = Vec::with_capacity(polygon.points().len());
            for point in polygon.points() {
                stroke.push(closed.view.into_frame(*point));
            }
            CaptureInFrame { frame_path: path, stroke }
        });
        // A frame the worker could not enter is filed as itself, its origin named.
        replies.push(match request {
            Some(request) => page_js::call(&request).await.ok(),
            None => None,
        });
    }
    with_frames_entered(circle, replies)
}

/// What a circle files once its closed frames were entered.
struct Filed {
    elements: Vec<Circled>,
    /// The origins of the circled frames that could not be entered.
    unreadable_frames: Vec<String>,
    /// `styled[i]` is the page's element filed as `elements[i]`, where its styles are read.
    styled: Vec<Option<Element>>,
}

impl Filed {
    fn push(&mut self, element: Circled, styled: Option<Element>) {
        self.elements.push(element);
        self.styled.push(styled);
    }
}

/// The circle with each closed frame replaced by what the worker's `reply` for it says
/// was circled inside, and the origins of the frames it could not enter. (Plain loops:
/// iterator adapters cost the page more code, see `page_js`.)
fn with_frames_entered(circle: Circle, mut replies: Vec<Option<FrameCaptured>>) -> Filed {
    let Circle { elements, closed_frames, styled } = circle;
    let mut filed = Filed {
        elements: Vec::with_capacity(elements.len()),
        unreadable_frames: Vec::new(),
        styled: Vec::with_capacity(elements.len()),
    };
    let mut next = 0;
    for (index, element) in elements.into_iter().enumerate() {
        let itself = styled.get(index).cloned();
        let Some(closed) = closed_frames.get(next).filter(|c| c.index == index) else {
            filed.push(element, itself);
            continue;
        };
        let reply = replies.get_mut(next).and_then(Option::take);
        next += 1;
        let Some(FrameCaptured { elements: inside, unreadable_frames: deeper }) = reply else {
            filed.unreadable_frames.push(origin_of(&closed.frame));
            filed.push(element, itself);
            continue;
        };
        filed.unreadable_frames.extend(deeper);
        if inside.is_empty() {
            filed.push(element, itself);
            continue;
        }
        for inner in inside {
            let css_path = match (&element.css_path, &inner.css_path) {
                (Some(frame), Some(path)) => Some(redline_protocol::element_path::in_frame(frame, path)),
                _ => None,
            };
            // A frame's own capture carries no styles (see `capture_frame`).
            filed.push(
                Circled { rect: inner.rect.map(|rect| closed.view.to_top(rect)), css_path, ..inner },
                None,
            );
        }
    }
    filed
}

/// The origin a frame element shows, as the composer names it.
fn origin_of(frame: &Element) -> String {
    let src = frame.unchecked_ref::<HtmlIFrameElement>().src();
    web_sys::Url::new(&src).map_or(src, |url| url.origin())
}

/// The worker runs this in a frame of another origin (one the person granted) when the
/// top page's outline circles that frame: what the outline, in this frame's viewport,
/// circles here, as a `worker_call::FrameCaptured`. Frames of other origins
/// inside this one are filed as their frame element (one frame of another origin is
/// entered per circle), their origins listed.
#[wasm_bindgen]
pub fn capture_frame(stroke: JsValue) -> Result<JsValue, JsValue> {
    let stroke = page_js::stroke(&stroke).ok_or("the outline is not a list of points")?;
    let document = web_sys::window().and_then(|w| w.document()).ok_or("no document")?;
    // No styles: their default elements would have to be made in this page, which has
    // no element of ours to hold them unseen.
    let circle = dom::circled_elements(&document, &Polygon::new(stroke), None, None);
    let unreadable: Vec<String> =
        circle.closed_frames.iter().map(|closed| origin_of(&closed.frame)).collect();
    Ok(page_js::frame_captured(&circle.elements, &unreadable))
}

/// The User Timing mark of the overlay put in the page ahead of a gesture being up.
const ASLEEP_UP_MARK: &str = "redline:overlay-up-asleep";

/// The overlay is up: hand it its end of a new channel for the capture (posted to the
/// extension's origin only, with the secret it was loaded with), and, unless it is
/// asleep, show it as up ([`show_up`]).
fn overlay_ready(channel: &str, overlay_origin: &str) {
    let awake = MOUNTED.with_borrow_mut(|m| {
        let Some(m) = m.as_mut() else { return false };
        if let (Ok(pair), Some(target)) = (MessageChannel::new(), m.frame.content_window()) {
            let transfer = js_sys::Array::of1(&pair.port2());
            let sent =
                target.post_message_with_transfer(&page_js::port_event(channel), overlay_origin, &transfer);
            if sent.is_ok()
                && let Some(old) = m.port.replace(pair.port1())
            {
                old.close();
            }
        }
        !m.asleep
    });
    if awake {
        show_up();
    } else if let Some(performance) = web_sys::window().and_then(|w| w.performance()) {
        // The overlay put in the page ahead is up, unseen (`tests/bench/unheld.mjs`).
        let _ = performance.mark(ASLEEP_UP_MARK);
    }
}

/// A gesture on a page where the overlay was put asleep: `pen` (the mount script's, just
/// shown) takes the stroke until the overlay is up, which it may already be.
#[wasm_bindgen]
pub fn wake(pen: Pen) {
    let up = MOUNTED.with_borrow_mut(|m| {
        let Some(m) = m.as_mut() else { return false };
        m.asleep = false;
        m.pen = Some(pen);
        m.port.is_some()
    });
    if up {
        show_up();
    }
}

/// The overlay is up and awake: say so on the host, focus it, have the pen hand it the
/// stroke drawn meanwhile, and take the screenshot ahead of the stroke: only now, so that
/// capturing the tab does not compete with the overlay's loading for the machine.
fn show_up() {
    let Some((host, pen, port)) = MOUNTED.with_borrow_mut(|m| {
        let m = m.as_mut()?;
        let _ = m.host.set_attribute(STATE_ATTRIBUTE, "ready");
        // Keyboard focus moves into the frame so `Esc` reaches the overlay.
        let _ = m.frame.focus();
        Some((m.host.clone(), m.pen.take(), m.port.clone()))
    }) else {
        return;
    };
    // Outside the borrow above: the pen may hand its stroke over at once.
    if let Some(pen) = pen {
        pen.hand_over(&Closure::once_into_js(|stroke: JsValue| {
            if let Some(port) = MOUNTED.with_borrow(|m| m.as_ref().and_then(|m| m.port.clone())) {
                let _ = port.post_message(&page_js::drawn_event(stroke));
            }
        }));
    }
    if let Some(window) = web_sys::window()
        && let Some(document) = window.document()
        && let Some(port) = port
    {
        shot_ahead::take(&window, &document, &host, &port);
        rehearse_capture_when_idle(shot_ahead::settled());
    }
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;
    use web_sys::{KeyboardEventInit, MessageEventInit, ShadowRootInit, ShadowRootMode};

    wasm_bindgen_test_configure!(run_in_browser);

    const ORIGIN: &str = "chrome-extension://abcdefghijklmnop";
    const HOST_ID: &str = "redline-overlay-host";

    /// Puts a host and its frame in the page as the mount script does, and attaches,
    /// trusting messages from `origin`.
    fn attach_test_overlay(origin: &str) {
        let document = web_sys::window().unwrap().document().unwrap();
        let host = document.create_element("div").unwrap();
        host.set_id(HOST_ID);
        let shadow = host.attach_shadow(&ShadowRootInit::new(ShadowRootMode::Closed)).unwrap();
        let frame: HtmlIFrameElement = document.create_element("iframe").unwrap().dyn_into().unwrap();
        frame.set_src("about:blank");
        shadow.append_child(&frame).unwrap();
        document.document_element().unwrap().append_child(&host).unwrap();
        attach_overlay(host, frame, None, false, origin, "secret").unwrap();
    }

    /// Whether an overlay is mounted in this page.
    fn is_mounted() -> bool {
        MOUNTED.with_borrow(|m| m.as_ref().is_some_and(|m| m.host.is_connected()))
    }

    fn hosts() -> u32 {
        let document = web_sys::window().unwrap().document().unwrap();
        document.query_selector_all(&format!("#{HOST_ID}")).unwrap().length()
    }

    fn press(key: &str) {
        let init = KeyboardEventInit::new();
        init.set_key(key);
        init.set_bubbles(true);
        let event = KeyboardEvent::new_with_keyboard_event_init_dict("keydown", &init).unwrap();
        web_sys::window().unwrap().dispatch_event(&event).unwrap();
    }

    /// Posts `close` to the page as if `source` (a window, or nothing) sent it from `origin`.
    fn post_close(origin: &str, source: Option<&Window>) {
        let init = MessageEventInit::new();
        init.set_origin(origin);
        init.set_source_opt_window(source);
        init.set_data(&serde_wasm_bindgen::to_value(&OverlayEvent::Close).unwrap());
        let event = MessageEvent::new_with_event_init_dict("message", &init).unwrap();
        web_sys::window().unwrap().dispatch_event(&event).unwrap();
    }

    #[wasm_bindgen_test]
    fn attaching_again_leaves_one_overlay_and_esc_removes_it() {
        attach_test_overlay(ORIGIN);
        attach_test_overlay(ORIGIN);
        assert_eq!(hosts(), 1, "the earlier overlay and its listeners are gone");
        assert!(is_mounted());
        press("a");
        assert!(is_mounted(), "other keys leave the overlay alone");
        press("Escape");
        assert!(!is_mounted());
        assert_eq!(hosts(), 0);
    }

    /// Has our frame itself post `close` to the page, as the overlay does: a message the
    /// browser delivers, from the frame's window at the frame's origin (this test page's
    /// own, as the frame is `about:blank`).
    fn frame_posts_close() {
        let frame =
            MOUNTED.with_borrow(|m| m.as_ref().unwrap().frame.content_window()).expect("the frame's window");
        let in_frame: Function =
            js_sys::Reflect::get(&frame, &"Function".into()).unwrap().dyn_into().unwrap();
        let post = js_sys::Reflect::construct(
            &in_frame,
            &Array::of1(&"parent.postMessage({ type: 'redline:close' }, '*')".into()),
        )
        .unwrap();
        post.unchecked_into::<Function>().call0(&JsValue::NULL).unwrap();
    }

    #[wasm_bindgen_test]
    async fn a_close_message_from_anyone_but_our_frame_is_ignored() {
        let page = web_sys::window().unwrap();
        let origin = page.location().origin().unwrap();
        attach_test_overlay(&origin);
        let ours =
            MOUNTED.with_borrow(|m| m.as_ref().unwrap().frame.content_window()).expect("the frame's window");
        post_close("https://stage.example", None);
        post_close(&origin, None); // right origin, but not sent by our frame
        post_close(&origin, Some(&page)); // right origin, sent by the page itself
        post_close("https://stage.example", Some(&ours)); // our frame, but not its origin
        // Right origin and our frame's window, but made by a script, not delivered.
        post_close(&origin, Some(&ours));
        assert!(is_mounted());
        // The same message posted by our frame closes the overlay: without it this test
        // would pass with no listener at all.
        frame_posts_close();
        for _ in 0..100 {
            if !is_mounted() {
                break;
            }
            crate::browser::timer::sleep(10.0).await;
        }
        assert!(!is_mounted(), "our frame's close is obeyed");
        assert_eq!(hosts(), 0);
    }
}

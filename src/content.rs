//! The page side: mounted into the active tab by `static/content.js` on a gesture.
//! This module is compiled to JavaScript (wasm2js) because a page's CSP may forbid wasm
//! in content scripts; everything with a UI runs in the overlay iframe, an extension
//! page, which the page can neither read nor style.

use std::cell::RefCell;

use wasm_bindgen::prelude::*;
use web_sys::{
    Document, Element, HtmlIFrameElement, KeyboardEvent, MessageChannel, MessageEvent, MessagePort,
    ShadowRootInit, ShadowRootMode, Window,
};

use redline_protocol::{Capture, Point};

use crate::capture::console::PageLog;
use crate::capture::dom::{self, PageContext};
use crate::capture::geometry::Polygon;
use crate::capture::screenshot;
use crate::capture::stroke_dom;
use crate::capture::styles_dom::StyleReader;
use crate::chrome;
use crate::messages::{Captured, OverlayEvent};
use crate::page_js;

/// The id of the element that hosts the overlay in the page.
pub const HOST_ID: &str = "redline-overlay-host";
/// The host's `data-redline-state` reads `loading`, then `ready` once the overlay app is up.
pub const STATE_ATTRIBUTE: &str = "data-redline-state";

/// The page listeners of a mounted overlay, kept so unmounting removes exactly them.
struct Mounted {
    host: Element,
    frame: HtmlIFrameElement,
    /// Our end of the channel the capture goes through, once the overlay has its end.
    port: Option<MessagePort>,
    on_key: Closure<dyn FnMut(KeyboardEvent)>,
    on_message: Closure<dyn FnMut(MessageEvent)>,
}

thread_local! {
    static MOUNTED: RefCell<Option<Mounted>> = const { RefCell::new(None) };
}

/// Mounts the overlay over the viewport, or focuses it when it is already there.
#[wasm_bindgen]
pub async fn mount() -> Result<(), JsValue> {
    let window = web_sys::window().ok_or("no window")?;
    let href = window.location().href()?;
    // A secret between this script and the overlay: the frame's address sits in a closed
    // shadow root and the page cannot read a frame of the extension's origin, so only
    // the overlay learns it, and it takes the capture's channel only with it.
    let channel = window.crypto()?.random_uuid();
    // The worker keeps it for this tab before the overlay exists: the overlay runs only
    // once the worker confirms our content script mounted it, so a frame of it that
    // another page made does nothing.
    chrome::send_js_message(&page_js::overlay_mounting_request(&channel)).await.map_err(|e| e.0)?;
    let overlay_url = format!(
        "{}?page={}&channel={channel}",
        chrome::extension_url("overlay.html"),
        js_sys::encode_uri_component(redline_protocol::without_query(&href)),
    );
    mount_overlay(&overlay_url, &chrome::extension_origin(), &channel)
}

/// Mounts an overlay iframe loading `overlay_url`, trusting messages only from
/// `overlay_origin`, and hands the frame the capture's channel with the secret `channel`
/// once it is ready. Separate from [`mount`] so tests can mount without `chrome.*`.
pub fn mount_overlay(overlay_url: &str, overlay_origin: &str, channel: &str) -> Result<(), JsValue> {
    let window = web_sys::window().ok_or("no window")?;
    let document = window.document().ok_or("no document")?;
    if let Some((host, frame)) =
        MOUNTED.with_borrow(|m| m.as_ref().map(|m| (m.host.clone(), m.frame.clone())))
    {
        if host.is_connected() {
            return frame.focus();
        }
        unmount()?;
    }

    let host = document.create_element("div")?;
    host.set_id(HOST_ID);
    host.set_attribute(STATE_ATTRIBUTE, "loading")?;
    // `all: initial` shields the host from the page's CSS; the shadow root keeps the
    // page's selectors and scripts away from the frame element.
    host.set_attribute(
        "style",
        "all: initial; position: fixed; inset: 0; z-index: 2147483647; display: block;",
    )?;
    let shadow = host.attach_shadow(&ShadowRootInit::new(ShadowRootMode::Closed))?;
    let frame = overlay_frame(&document, overlay_url)?;
    shadow.append_child(&frame)?;
    document.document_element().ok_or("no document element")?.append_child(&host)?;

    let on_key = Closure::<dyn FnMut(KeyboardEvent)>::new(|event: KeyboardEvent| {
        if event.key() == "Escape" {
            event.stop_propagation();
            event.prevent_default();
            let _ = unmount();
        }
    });
    window.add_event_listener_with_callback_and_bool("keydown", on_key.as_ref().unchecked_ref(), true)?;

    let trusted_origin = overlay_origin.to_owned();
    let channel = channel.to_owned();
    let frame_for_messages = frame.clone();
    let host_for_messages = host.clone();
    let on_message = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
        let from_our_frame = event.origin() == trusted_origin
            && frame_for_messages
                .content_window()
                .is_some_and(|w| event.source().is_some_and(|s| JsValue::from(w) == JsValue::from(s)));
        if !from_our_frame {
            return;
        }
        match page_js::overlay_event(&event.data()) {
            Some(OverlayEvent::Ready) => overlay_ready(&channel, &trusted_origin),
            Some(OverlayEvent::Close) => {
                let _ = unmount();
            }
            Some(OverlayEvent::Drawing { stroke }) => {
                if let Some(document) = web_sys::window().and_then(|w| w.document()) {
                    stroke_dom::drawing(&stroke, &document, &host_for_messages);
                }
            }
            Some(OverlayEvent::StrokeAbandoned) => stroke_dom::cancel(),
            Some(OverlayEvent::Circled { stroke }) => {
                wasm_bindgen_futures::spawn_local(capture_and_reply(stroke));
            }
            None => {}
        }
    });
    window.add_event_listener_with_callback("message", on_message.as_ref().unchecked_ref())?;

    MOUNTED.set(Some(Mounted { host, frame, port: None, on_key, on_message }));
    Ok(())
}

/// Removes the overlay and its listeners; nothing of ours is left in the page.
pub fn unmount() -> Result<(), JsValue> {
    stroke_dom::cancel();
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

fn overlay_frame(document: &Document, overlay_url: &str) -> Result<HtmlIFrameElement, JsValue> {
    let frame: HtmlIFrameElement = document.create_element("iframe")?.dyn_into()?;
    frame.set_src(overlay_url);
    frame.set_title("Redline: circle what is wrong");
    // A transparent frame needs the same (normal) color scheme as its content, or
    // Chrome paints an opaque backdrop behind it.
    frame.set_attribute(
        "style",
        "position: fixed; inset: 0; width: 100vw; height: 100vh; border: 0; \
         background: transparent; color-scheme: normal;",
    )?;
    Ok(frame)
}

const CAPTURE_MARK: &str = "redline:capture-start";
const CAPTURE_MEASURE: &str = "redline:capture";

/// Reads what the outline circles, screenshots the viewport, and hands both to the
/// overlay through the channel only it holds the other end of: the page can neither read
/// the capture nor send one the overlay would take.
async fn capture_and_reply(stroke: Vec<Point>) {
    let Some((host, frame, Some(port))) =
        MOUNTED.with_borrow(|m| m.as_ref().map(|m| (m.host.clone(), m.frame.clone(), m.port.clone())))
    else {
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
    // The default elements styles are compared with go into our frame's shadow root.
    let styles = frame.parent_node().and_then(|root| StyleReader::new(&window, &document, &root));
    let elements =
        dom::circled_elements(&document, &polygon, Some(&host), stroke_dom::take(), styles.as_ref());
    drop(styles);
    if let Some(p) = &performance {
        let _ = p.measure_with_start_mark(CAPTURE_MEASURE, CAPTURE_MARK);
    }
    let context = PageContext::read(&window, &document);
    let log = PageLog::read(&document);
    let screenshot = screenshot::visible_tab(&window, &document, &host).await;
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
    };
    let _ = port.post_message(&page_js::captured_event(&captured));
}

/// The overlay is up: hand it its end of a new channel for the capture (posted to the
/// extension's origin only, with the secret it was loaded with), and focus it.
fn overlay_ready(channel: &str, overlay_origin: &str) {
    MOUNTED.with_borrow_mut(|m| {
        let Some(m) = m else { return };
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
        let _ = m.host.set_attribute(STATE_ATTRIBUTE, "ready");
        // Keyboard focus moves into the frame so `Esc` reaches the overlay.
        let _ = m.frame.focus();
    });
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;
    use web_sys::{KeyboardEventInit, MessageEventInit};

    wasm_bindgen_test_configure!(run_in_browser);

    const ORIGIN: &str = "chrome-extension://abcdefghijklmnop";

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
    fn mounting_twice_keeps_one_overlay_and_esc_removes_it() {
        mount_overlay("about:blank", ORIGIN, "secret").unwrap();
        mount_overlay("about:blank", ORIGIN, "secret").unwrap();
        assert_eq!(hosts(), 1);
        assert!(is_mounted());
        press("a");
        assert!(is_mounted(), "other keys leave the overlay alone");
        press("Escape");
        assert!(!is_mounted());
        assert_eq!(hosts(), 0);
    }

    #[wasm_bindgen_test]
    fn a_close_message_from_anyone_but_our_frame_is_ignored() {
        mount_overlay("about:blank", ORIGIN, "secret").unwrap();
        let ours =
            MOUNTED.with_borrow(|m| m.as_ref().unwrap().frame.content_window()).expect("the frame's window");
        let page = web_sys::window().unwrap();
        post_close("https://stage.example", None);
        post_close(ORIGIN, None); // right origin, but not sent by our frame
        post_close(ORIGIN, Some(&page)); // right origin, sent by the page itself
        post_close("https://stage.example", Some(&ours)); // our frame, but not the extension's origin
        assert!(is_mounted());
        // The same message from our frame at the extension's origin closes the overlay:
        // without it this test would pass with no listener at all.
        post_close(ORIGIN, Some(&ours));
        assert!(!is_mounted(), "our frame's close is obeyed");
        assert_eq!(hosts(), 0);
    }

    #[wasm_bindgen_test]
    fn the_host_starts_loading_and_is_shielded_from_page_styles() {
        mount_overlay("about:blank", ORIGIN, "secret").unwrap();
        let document = web_sys::window().unwrap().document().unwrap();
        let host = document.get_element_by_id(HOST_ID).unwrap();
        assert_eq!(host.get_attribute(STATE_ATTRIBUTE).as_deref(), Some("loading"));
        assert!(host.get_attribute("style").unwrap().starts_with("all: initial"));
        assert!(host.shadow_root().is_none(), "the shadow root is closed to the page");
        unmount().unwrap();
    }
}

//! Frames in the page, for the capture and "Show on page": which elements are frames,
//! the document inside one when this page may read it, and where its viewport sits.

use redline_protocol::Rect;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Document, Element, HtmlIFrameElement};

use super::frames::FrameView;

/// `<iframe>` or `<frame>`.
pub fn is_frame(element: &Element) -> bool {
    matches!(element.local_name().as_str(), "iframe" | "frame")
}

/// The document inside `frame`, when it is a frame this page may read (same origin).
pub fn frame_document(frame: &Element) -> Option<Document> {
    // Read as a property, not through `instanceof`: a frame inside a frame is an element
    // of that frame's window, whose `HTMLIFrameElement` is not this window's.
    is_frame(frame).then(|| frame.unchecked_ref::<HtmlIFrameElement>().content_document()).flatten()
}

/// Where the frame shown by the frame element `frame` sits among the tab's frames: from
/// the top window down, its index among its parent window's frames (`window[i]`). Read
/// through `parent`, which a window of any origin lets one read, so it is the same path
/// the worker's `in_frame` finds from inside the frame. `None` for a frame not showing.
pub fn frame_path(frame: &Element) -> Option<Vec<u32>> {
    let mut window = frame.unchecked_ref::<HtmlIFrameElement>().content_window()?;
    let mut path = Vec::new();
    loop {
        let parent = window.parent().ok()??;
        if parent == window {
            return Some(path);
        }
        let mut index = 0;
        while js_sys::Reflect::get_u32(&parent, index).ok()? != *AsRef::<JsValue>::as_ref(&window) {
            index += 1;
        }
        path.insert(0, index);
        window = parent;
    }
}

/// A frame that this page may not read (of another origin).
pub fn is_closed_frame(element: &Element) -> bool {
    is_frame(element) && frame_document(element).is_none()
}

/// Where `frame` shows its document, in the viewport of the frame's own document: its
/// box less border and padding.
pub fn content_box(frame: &Element) -> Rect {
    let r = frame.get_bounding_client_rect();
    let style = web_sys::window().and_then(|w| w.get_computed_style(frame).ok().flatten());
    let padding = |side: &str| {
        let value = style.as_ref().and_then(|s| s.get_property_value(side).ok()).unwrap_or_default();
        Some(js_sys::parse_float(&value)).filter(|v| v.is_finite()).unwrap_or(0.0)
    };
    let (left, top) = (padding("padding-left"), padding("padding-top"));
    Rect {
        x: r.left() + f64::from(frame.client_left()) + left,
        y: r.top() + f64::from(frame.client_top()) + top,
        width: f64::from(frame.client_width()) - left - padding("padding-right"),
        height: f64::from(frame.client_height()) - top - padding("padding-bottom"),
    }
}

/// The element's box in `top`'s viewport, through the frames it is in.
pub fn rect_in_top(element: &Element, top: &Document) -> Rect {
    let r = element.get_bounding_client_rect();
    let rect = Rect { x: r.x(), y: r.y(), width: r.width(), height: r.height() };
    view_of(element, top).map_or(rect, |view| view.to_top(rect))
}

/// Where the viewport of the frame holding `element` sits in `top`'s; `None` in `top`.
fn view_of(element: &Element, top: &Document) -> Option<FrameView> {
    let document = element.owner_document().filter(|d| d != top)?;
    let frame = document.default_view()?.frame_element().ok()??;
    Some(view_inside(&frame, top))
}

/// Where the viewport inside `frame` sits in `top`'s, through the frames around it.
pub fn view_inside(frame: &Element, top: &Document) -> FrameView {
    let content = content_box(frame);
    view_of(frame, top).map_or_else(|| FrameView::in_top(content), |outer| outer.child(content))
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use crate::content::capture::selector_dom::{css_path, resolve_css_path};
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    /// A frame of this page's origin at (30, 40) with a 2 px border and 4 px padding,
    /// holding `html`, once it has loaded.
    async fn frame(html: &str) -> Element {
        let document = web_sys::window().unwrap().document().unwrap();
        let frame = document.create_element("iframe").unwrap();
        frame
            .set_attribute(
                "style",
                "position: fixed; left: 30px; top: 40px; width: 300px; height: 200px; border: 2px solid; padding: 4px;",
            )
            .unwrap();
        frame.set_attribute("srcdoc", html).unwrap();
        let loaded = js_sys::Promise::new(&mut |resolve, _| {
            frame.add_event_listener_with_callback("load", &resolve).unwrap();
        });
        document.body().unwrap().append_child(&frame).unwrap();
        wasm_bindgen_futures::JsFuture::from(loaded).await.unwrap();
        frame
    }

    #[wasm_bindgen_test]
    async fn a_path_through_a_frame_of_this_origin_finds_the_element_and_its_box_in_the_top_viewport() {
        let frame = frame(
            "<body style=\"margin: 0\"><p>x</p><button class=\"pay\" style=\"margin: 10px 0 0 20px\">Pay</button></body>",
        )
        .await;
        let top = web_sys::window().unwrap().document().unwrap();
        let inside = frame_document(&frame).expect("a frame of this origin is readable");
        let button = inside.query_selector("button").unwrap().unwrap();
        assert!(!is_closed_frame(&frame));

        let path =
            redline_protocol::element_path::in_frame(&css_path(&frame).unwrap(), &css_path(&button).unwrap());
        assert_eq!(resolve_css_path(&top, &path), Some(button.clone()), "{path}");

        let content = content_box(&frame);
        assert_eq!((content.x, content.y, content.width, content.height), (36.0, 46.0, 300.0, 200.0));
        let own = button.get_bounding_client_rect();
        let in_top = rect_in_top(&button, &top);
        assert_eq!((in_top.x, in_top.y), (own.x() + 36.0, own.y() + 46.0));
        frame.remove();
    }
}

//! The content module's messages as plain JS values, converted by hand: those to the
//! overlay, and its calls to the worker ([`call`]).
//!
//! Everything a page loads counts against the content side's budget (ARCHITECTURE.md),
//! and serde's derives with serde-wasm-bindgen and serde_json were about a third of it:
//! each derive is generic code instantiated per type, and wasm2js turns it into even
//! more JavaScript. The page side's messages are few and small, so they are written here
//! field by field with `js_sys`. The extension pages on the other end (overlay, worker)
//! still read and write them with serde; the browser tests below hold both to one shape,
//! so a field renamed in `redline-protocol` or `messages.rs` fails here.

use js_sys::{Array, Object, Reflect};
use redline_protocol::{Capture, Element, ElementStyles, FailedRequest, Point, Rect, StyleValues, Viewport};
use wasm_bindgen::JsValue;

use crate::messages::{Captured, OverlayEvent};
use crate::rules::locate::{InFrame, Located, MatchedBy};
use crate::rules::refind::{PageFinding, PageRefind};
use crate::worker_call::{CaptureInFrame, CaptureVisibleTab, FrameCaptured, WorkerCall, WorkerError};

/// A value as serde-wasm-bindgen's `json_compatible` serializer writes it.
pub trait ToJs {
    fn to_js(&self) -> JsValue;
}

/// An object with these fields, in this order.
pub fn object(fields: &[(&str, JsValue)]) -> JsValue {
    let object = Object::new();
    for (key, value) in fields {
        let _ = Reflect::set(&object, &JsValue::from_str(key), value);
    }
    object.into()
}

/// The field `key` of `value`; `undefined` when it has none (or is not an object).
pub fn field(value: &JsValue, key: &str) -> JsValue {
    Reflect::get(value, &JsValue::from_str(key)).unwrap_or(JsValue::UNDEFINED)
}

impl ToJs for f64 {
    fn to_js(&self) -> JsValue {
        JsValue::from_f64(*self)
    }
}

impl ToJs for u32 {
    fn to_js(&self) -> JsValue {
        JsValue::from_f64(f64::from(*self))
    }
}

impl ToJs for String {
    fn to_js(&self) -> JsValue {
        JsValue::from_str(self)
    }
}

impl<T: ToJs> ToJs for Option<T> {
    fn to_js(&self) -> JsValue {
        self.as_ref().map_or(JsValue::NULL, ToJs::to_js)
    }
}

impl<T: ToJs> ToJs for [T] {
    fn to_js(&self) -> JsValue {
        self.iter().map(ToJs::to_js).collect::<Array>().into()
    }
}

impl<T: ToJs> ToJs for Vec<T> {
    fn to_js(&self) -> JsValue {
        self.as_slice().to_js()
    }
}

impl ToJs for Point {
    fn to_js(&self) -> JsValue {
        object(&[("x", self.x.to_js()), ("y", self.y.to_js())])
    }
}

impl ToJs for Rect {
    fn to_js(&self) -> JsValue {
        object(&[
            ("x", self.x.to_js()),
            ("y", self.y.to_js()),
            ("width", self.width.to_js()),
            ("height", self.height.to_js()),
        ])
    }
}

impl ToJs for Viewport {
    fn to_js(&self) -> JsValue {
        object(&[("width", self.width.to_js()), ("height", self.height.to_js())])
    }
}

impl ToJs for Element {
    fn to_js(&self) -> JsValue {
        object(&[
            ("testId", self.test_id.to_js()),
            ("sourceAnchor", self.source_anchor.to_js()),
            ("cssPath", self.css_path.to_js()),
            ("text", self.text.to_js()),
            ("rect", self.rect.to_js()),
            ("componentTestId", self.component_test_id.to_js()),
            ("role", self.role.to_js()),
            ("name", self.name.to_js()),
            ("tag", self.tag.to_js()),
            ("styles", self.styles.to_js()),
        ])
    }
}

impl ToJs for StyleValues {
    fn to_js(&self) -> JsValue {
        let object = Object::new();
        for (key, value) in self.iter() {
            let _ = Reflect::set(&object, &JsValue::from_str(key), &JsValue::from_str(value));
        }
        object.into()
    }
}

impl ToJs for ElementStyles {
    fn to_js(&self) -> JsValue {
        object(&[("changed", self.changed.to_js()), ("unchanged", self.unchanged.to_js())])
    }
}

impl ToJs for FailedRequest {
    fn to_js(&self) -> JsValue {
        object(&[
            ("method", self.method.to_js()),
            ("url", self.url.to_js()),
            ("status", u32::from(self.status).to_js()),
        ])
    }
}

impl ToJs for Capture {
    fn to_js(&self) -> JsValue {
        object(&[
            ("stroke", self.stroke.to_js()),
            ("bounds", self.bounds.to_js()),
            ("elements", self.elements.to_js()),
            ("devicePixelRatio", self.device_pixel_ratio.to_js()),
            ("scroll", self.scroll.to_js()),
            ("failedRequests", self.failed_requests.to_js()),
        ])
    }
}

/// `PageEvent::Captured`: the captured fields beside the message's `type`.
pub fn captured_event(captured: &Captured) -> JsValue {
    let screenshot = match &captured.screenshot {
        Ok(id) => object(&[("Ok", id.to_js())]),
        Err(why) => object(&[("Err", why.to_js())]),
    };
    object(&[
        ("type", JsValue::from_str("redline:captured")),
        ("capture", captured.capture.to_js()),
        ("route", captured.route.to_js()),
        ("locale", captured.locale.to_js()),
        ("viewport", captured.viewport.to_js()),
        ("gitSha", captured.git_sha.to_js()),
        ("consoleErrors", captured.console_errors.to_js()),
        ("screenshot", screenshot),
        ("unreadableFrames", captured.unreadable_frames.to_js()),
    ])
}

/// `PageEvent::Styles`: the computed styles of the capture just sent, by element.
pub fn styles_event(elements: &[Option<ElementStyles>]) -> JsValue {
    object(&[("type", JsValue::from_str("redline:styles")), ("elements", elements.to_js())])
}

/// What `capture_frame` answers the worker: a [`FrameCaptured`].
pub fn frame_captured(elements: &[Element], unreadable_frames: &[String]) -> JsValue {
    object(&[("elements", elements.to_js()), ("unreadableFrames", unreadable_frames.to_js())])
}

/// A reply from the worker, read as serde writes it; `None` when it is not one.
pub trait FromJs: Sized {
    fn from_js(value: &JsValue) -> Option<Self>;
}

/// Makes call `C` to the worker, written and read by hand as `ui::call` does with serde:
/// the reply, or why there is none.
pub async fn call<C: WorkerCall + ToJs>(request: &C) -> Result<C::Reply, WorkerError>
where
    C::Reply: FromJs,
{
    let reply = crate::browser::chrome::send_js_message(&request.to_js())
        .await
        .map_err(|e| WorkerError::NoAnswer { message: e.0 })?;
    answer(&reply)
}

/// A `Result<R, WorkerError>` as serde writes it.
fn answer<R: FromJs>(reply: &JsValue) -> Result<R, WorkerError> {
    let unread = || WorkerError::NoAnswer { message: "an answer it could not read".into() };
    if Reflect::has(reply, &JsValue::from_str("Ok")).unwrap_or(false) {
        return R::from_js(&field(reply, "Ok")).ok_or_else(unread);
    }
    Err(WorkerError::from_js(&field(reply, "Err")).unwrap_or_else(unread))
}

impl FromJs for WorkerError {
    fn from_js(value: &JsValue) -> Option<Self> {
        let message = || string(value, "message");
        Some(match string(value, "error")?.as_str() {
            "notACall" => WorkerError::NotACall { message: message()? },
            "notFromThere" => WorkerError::NotFromThere,
            "noAnswer" => WorkerError::NoAnswer { message: message()? },
            "failed" => WorkerError::Failed { message: message()? },
            _ => return None,
        })
    }
}

impl FromJs for String {
    fn from_js(value: &JsValue) -> Option<Self> {
        value.as_string()
    }
}

impl FromJs for FrameCaptured {
    fn from_js(value: &JsValue) -> Option<Self> {
        let mut unreadable_frames = Vec::new();
        for origin in items(&field(value, "unreadableFrames"))? {
            unreadable_frames.push(origin.as_string()?);
        }
        Some(FrameCaptured { elements: elements(&field(value, "elements"))?, unreadable_frames })
    }
}

impl ToJs for CaptureInFrame {
    fn to_js(&self) -> JsValue {
        object(&[
            ("kind", JsValue::from_str(Self::KIND)),
            ("framePath", self.frame_path.to_js()),
            ("stroke", self.stroke.to_js()),
        ])
    }
}

impl ToJs for CaptureVisibleTab {
    fn to_js(&self) -> JsValue {
        object(&[("kind", JsValue::from_str(Self::KIND))])
    }
}

/// The outline `capture_frame` is given, in the frame's viewport.
pub fn stroke(value: &JsValue) -> Option<Vec<Point>> {
    items(value)?.map(|p| point(&p)).collect()
}

impl ToJs for MatchedBy {
    fn to_js(&self) -> JsValue {
        JsValue::from_str(match self {
            MatchedBy::TestId => "testId",
            MatchedBy::SourceAnchor => "sourceAnchor",
            MatchedBy::CssPath => "cssPath",
            MatchedBy::Text => "text",
        })
    }
}

impl ToJs for Located {
    fn to_js(&self) -> JsValue {
        object(&[
            ("label", self.label.to_js()),
            ("matchedBy", self.matched_by.to_js()),
            ("count", self.count.to_js()),
        ])
    }
}

impl ToJs for PageFinding {
    fn to_js(&self) -> JsValue {
        object(&[
            ("matchedBy", self.matched_by.to_js()),
            ("pathLeadsToIt", JsValue::from_bool(self.path_leads_to_it)),
            ("cssPath", self.css_path.to_js()),
            ("rect", self.rect.to_js()),
        ])
    }
}

impl ToJs for PageRefind {
    fn to_js(&self) -> JsValue {
        object(&[
            ("gitSha", self.git_sha.to_js()),
            ("scroll", self.scroll.to_js()),
            ("viewport", self.viewport.to_js()),
            ("elements", self.elements.to_js()),
        ])
    }
}

impl ToJs for InFrame {
    fn to_js(&self) -> JsValue {
        object(&[
            ("index", (self.index as f64).to_js()),
            ("framePath", self.frame_path.to_js()),
            ("cssPath", self.css_path.to_js()),
        ])
    }
}

fn string(value: &JsValue, key: &str) -> Option<String> {
    field(value, key).as_string()
}

fn number(value: &JsValue, key: &str) -> Option<f64> {
    field(value, key).as_f64()
}

fn point(value: &JsValue) -> Option<Point> {
    Some(Point { x: number(value, "x")?, y: number(value, "y")? })
}

fn rect(value: &JsValue) -> Option<Rect> {
    Some(Rect {
        x: number(value, "x")?,
        y: number(value, "y")?,
        width: number(value, "width")?,
        height: number(value, "height")?,
    })
}

/// The items of an array, or `None` when `value` is not one.
fn items(value: &JsValue) -> Option<impl Iterator<Item = JsValue>> {
    Array::is_array(value).then(|| Array::from(value).into_iter())
}

/// A message from the overlay frame; `None` for anything else the page's window hears.
pub fn overlay_event(data: &JsValue) -> Option<OverlayEvent> {
    let stroke = || stroke(&field(data, "stroke"));
    Some(match string(data, "type")?.as_str() {
        "redline:ready" => OverlayEvent::Ready,
        "redline:close" => OverlayEvent::Close,
        "redline:drawing" => OverlayEvent::Drawing { stroke: stroke()? },
        "redline:stroke-abandoned" => OverlayEvent::StrokeAbandoned,
        "redline:circled" => OverlayEvent::Circled { stroke: stroke()? },
        _ => return None,
    })
}

/// An item's elements as the worker sends them to "Show on page" and answers a frame's
/// capture, both without styles (finding them needs none; a frame's capture reads none);
/// `None` unless an array. A field of the wrong type reads as absent, as the protocol's
/// optional fields default.
pub fn elements(value: &JsValue) -> Option<Vec<Element>> {
    let element = |e: JsValue| Element {
        test_id: string(&e, "testId"),
        source_anchor: string(&e, "sourceAnchor"),
        css_path: string(&e, "cssPath"),
        text: string(&e, "text"),
        rect: rect(&field(&e, "rect")),
        component_test_id: string(&e, "componentTestId"),
        role: string(&e, "role"),
        name: string(&e, "name"),
        tag: string(&e, "tag").unwrap_or_default(),
        // "Show on page" finds elements; how they looked is not needed for that.
        styles: None,
    };
    Some(items(value)?.map(element).collect())
}

/// `PageEvent::Port`: the overlay's end of the capture's channel goes with this, and
/// the secret the overlay was loaded with.
pub fn port_event(channel: &str) -> JsValue {
    object(&[("type", JsValue::from_str("redline:port")), ("token", JsValue::from_str(channel))])
}

/// `PageEvent::Drawn`: a stroke the mount script's pen took before the overlay was up,
/// as the pen recorded it (a list of `{x, y}`).
pub fn drawn_event(stroke: JsValue) -> JsValue {
    object(&[("type", JsValue::from_str("redline:drawn")), ("stroke", stroke)])
}

/// `PageEvent::Screenshot`: `image` is the PNG's `data:` URL as the worker answered it,
/// posted without passing through this module's memory.
pub fn screenshot_event(id: u32, image: &JsValue) -> JsValue {
    object(&[("type", JsValue::from_str("redline:screenshot")), ("id", id.to_js()), ("image", image.clone())])
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use crate::messages::PageEvent;
    use crate::worker_call::Envelope;
    use serde::Serialize;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    fn serde_js<T: Serialize>(value: &T) -> JsValue {
        value.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).unwrap()
    }

    /// The message as the overlay reads it (`page_event_js`), which serde reads the same.
    fn read_both(written: &JsValue) -> PageEvent {
        let read = crate::page_event_js::read_page_event(written).expect("the overlay reads it");
        assert_eq!(serde_wasm_bindgen::from_value::<PageEvent>(written.clone()).unwrap(), read);
        read
    }

    fn json(value: &JsValue) -> String {
        js_sys::JSON::stringify(value).unwrap().into()
    }

    fn element() -> Element {
        Element {
            test_id: Some("orders.export".into()),
            source_anchor: Some("src/App.tsx:42".into()),
            css_path: Some("main > button:nth-of-type(2)".into()),
            text: Some("Export \"CSV\"".into()),
            rect: Some(Rect { x: 1.5, y: -2.0, width: 100.25, height: 30.0 }),
            component_test_id: Some("Toolbar".into()),
            role: Some("button".into()),
            name: Some("Export CSV".into()),
            tag: "button".into(),
            // Not in alphabetical order: both sides keep the order the page read.
            styles: Some(ElementStyles {
                changed: [("padding", "4px 8px"), ("color", "rgb(255, 0, 0)")].into(),
                unchanged: [("font-size", "16px")].into(),
            }),
        }
    }

    fn captured(screenshot: Result<u32, String>) -> Captured {
        Captured {
            capture: Capture {
                stroke: vec![Point { x: 1.0, y: 2.5 }, Point { x: 3.0, y: 4.0 }],
                bounds: Some(Rect { x: 1.0, y: 2.5, width: 2.0, height: 1.5 }),
                elements: vec![element(), Element { tag: "div".into(), ..Element::default() }],
                device_pixel_ratio: Some(2.0),
                scroll: Some(Point { x: 0.0, y: 120.0 }),
                failed_requests: vec![FailedRequest::new("POST", "https://api.example/orders", 503)],
            },
            route: "/orders?page=2".into(),
            locale: Some("de-DE".into()),
            viewport: Viewport { width: 1280.0, height: 720.0 },
            git_sha: None,
            console_errors: vec!["TypeError: x is undefined".into()],
            screenshot,
            unreadable_frames: vec!["https://pay.example".into()],
        }
    }

    #[wasm_bindgen_test]
    fn the_overlay_reads_the_capture_exactly_as_written() {
        for screenshot in [Ok(7), Err("no permission".to_owned())] {
            let sent = captured(screenshot);
            let written = captured_event(&sent);
            let read = read_both(&written);
            assert_eq!(read, PageEvent::Captured(Box::new(sent.clone())));
            // The same JSON as serde writes, so nothing reads differently downstream.
            assert_eq!(json(&written), json(&serde_js(&PageEvent::Captured(Box::new(sent)))));
        }
    }

    #[wasm_bindgen_test]
    fn the_overlay_reads_a_screenshot_posted_ahead() {
        let image = JsValue::from_str("data:image/png;base64,AAAA");
        let read = read_both(&screenshot_event(3, &image));
        assert_eq!(read, PageEvent::Screenshot { id: 3, image: "data:image/png;base64,AAAA".into() });
    }

    #[wasm_bindgen_test]
    fn the_overlay_reads_the_styles_after_a_capture() {
        let elements = vec![element().styles, None];
        let read = read_both(&styles_event(&elements));
        assert_eq!(read, PageEvent::Styles { elements: elements.clone() });
        assert_eq!(json(&styles_event(&elements)), json(&serde_js(&PageEvent::Styles { elements })));
    }

    #[wasm_bindgen_test]
    fn the_overlay_reads_the_channel_hand_over() {
        let read = read_both(&port_event("s3cret"));
        assert_eq!(read, PageEvent::Port { token: "s3cret".into() });
    }

    #[wasm_bindgen_test]
    fn the_overlay_reads_a_stroke_the_pen_took() {
        let stroke = Array::new();
        for (x, y) in [(10.0, 20.0), (30.5, 40.0)] {
            stroke.push(&object(&[("x", JsValue::from_f64(x)), ("y", JsValue::from_f64(y))]));
        }
        let read = read_both(&drawn_event(stroke.into()));
        let expected = vec![Point { x: 10.0, y: 20.0 }, Point { x: 30.5, y: 40.0 }];
        assert_eq!(read, PageEvent::Drawn { stroke: expected });
    }

    #[wasm_bindgen_test]
    fn the_page_reads_every_overlay_event_as_serde_writes_it() {
        let stroke = vec![Point { x: 10.0, y: 20.0 }, Point { x: 30.5, y: 40.0 }];
        let events = [
            OverlayEvent::Ready,
            OverlayEvent::Close,
            OverlayEvent::Drawing { stroke: stroke.clone() },
            OverlayEvent::StrokeAbandoned,
            OverlayEvent::Circled { stroke },
        ];
        for event in events {
            assert_eq!(overlay_event(&serde_js(&event)), Some(event));
        }
        for other in [
            JsValue::from_str("redline:close"),
            JsValue::NULL,
            object(&[("type", JsValue::from_str("close"))]),
            object(&[("type", JsValue::from_str("redline:circled"))]),
            object(&[("type", JsValue::from_str("redline:circled")), ("stroke", JsValue::from_str("x"))]),
        ] {
            assert_eq!(overlay_event(&other), None, "{}", json(&other));
        }
    }

    #[wasm_bindgen_test]
    fn show_on_page_reads_elements_and_answers_as_the_worker_expects() {
        let sent =
            vec![Element { styles: None, ..element() }, Element { tag: "a".into(), ..Element::default() }];
        assert_eq!(elements(&serde_js(&sent)), Some(sent));
        assert_eq!(elements(&JsValue::NULL), None);

        let located = vec![
            Located { label: "orders.export".into(), matched_by: Some(MatchedBy::TestId), count: 1 },
            Located { label: "a".into(), matched_by: Some(MatchedBy::SourceAnchor), count: 3 },
            Located { label: "b".into(), matched_by: Some(MatchedBy::CssPath), count: 1 },
            Located { label: "c".into(), matched_by: Some(MatchedBy::Text), count: 2 },
            Located { label: "d".into(), matched_by: None, count: 0 },
        ];
        let read: Vec<Located> = serde_wasm_bindgen::from_value(located.to_js()).unwrap();
        assert_eq!(read, located);
        let handed_on = vec![InFrame { index: 2, frame_path: vec![1, 0], css_path: "#g |> button".into() }];
        let read: Vec<InFrame> = serde_wasm_bindgen::from_value(handed_on.to_js()).unwrap();
        assert_eq!(read, handed_on);
        let refind = PageRefind {
            git_sha: Some("b2".into()),
            scroll: Point { x: 0.0, y: 40.0 },
            viewport: Viewport { width: 1200.0, height: 700.0 },
            elements: vec![
                Some(PageFinding {
                    matched_by: Some(MatchedBy::TestId),
                    path_leads_to_it: false,
                    css_path: Some(".section-head > button".into()),
                    rect: Some(Rect { x: 1.0, y: 2.0, width: 3.0, height: 4.0 }),
                }),
                Some(PageFinding { matched_by: None, path_leads_to_it: false, css_path: None, rect: None }),
                None,
            ],
        };
        let read: PageRefind = serde_wasm_bindgen::from_value(refind.to_js()).unwrap();
        assert_eq!(read, refind);
    }

    #[wasm_bindgen_test]
    fn a_frames_capture_goes_to_the_worker_and_back_as_it_reads_and_writes_them() {
        let stroke = vec![Point { x: 1.0, y: 2.5 }, Point { x: 30.0, y: 4.0 }];
        let request = CaptureInFrame { frame_path: vec![2, 0], stroke: stroke.clone() };
        assert_eq!(json(&request.to_js()), json(&serde_js(&Envelope::new(&request))));
        let read: CaptureInFrame = serde_wasm_bindgen::from_value(request.to_js()).unwrap();
        assert_eq!(read, request);
        assert_eq!(self::stroke(&serde_js(&stroke)), Some(stroke));

        // A frame's elements carry no styles (see `content::script::capture_frame`).
        let elements =
            vec![Element { styles: None, ..element() }, Element { tag: "div".into(), ..Element::default() }];
        let unreadable = vec!["https://ads.example".to_owned()];
        let captured = FrameCaptured { elements: elements.clone(), unreadable_frames: unreadable.clone() };
        assert_eq!(json(&frame_captured(&elements, &unreadable)), json(&serde_js(&captured)));
        let reply: Result<FrameCaptured, WorkerError> = Ok(captured.clone());
        assert_eq!(answer(&serde_js(&reply)), Ok(captured));
    }

    #[wasm_bindgen_test]
    fn the_screenshot_request_and_its_answers_are_the_workers() {
        assert_eq!(
            json(&CaptureVisibleTab {}.to_js()),
            json(&serde_js(&Envelope::new(&CaptureVisibleTab {})))
        );
        let shot: Result<String, WorkerError> = Ok("data:image/png;base64,AAAA".into());
        assert_eq!(answer::<String>(&serde_js(&shot)), shot);
        let not_a_shot: Result<u32, WorkerError> = Ok(3);
        assert!(matches!(answer::<String>(&serde_js(&not_a_shot)), Err(WorkerError::NoAnswer { .. })));
    }

    #[wasm_bindgen_test]
    fn every_error_the_worker_answers_reads_as_it_was_written() {
        for error in [
            WorkerError::NotACall { message: "no call of kind \"x\"".into() },
            WorkerError::NotFromThere,
            WorkerError::NoAnswer { message: "gone".into() },
            WorkerError::failed("Tabs cannot be edited right now"),
        ] {
            let reply: Result<String, WorkerError> = Err(error.clone());
            assert_eq!(answer::<String>(&serde_js(&reply)), Err(error));
        }
        assert!(matches!(answer::<String>(&JsValue::UNDEFINED), Err(WorkerError::NoAnswer { .. })));
    }
}

//! The messages the extension's contexts send each other. Pure serde types: the worker,
//! panel, overlay and content script all agree on them through this one module.

use redline_protocol::{Capture, Element, ElementStyles, Point, Rect, Viewport};
use serde::{Deserialize, Serialize};

use crate::locate::Located;
use crate::outbox::{Draft, OutboxItem};

/// A request to the background worker (`chrome.runtime.sendMessage`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum WorkerRequest {
    /// Is the worker alive, and which build is it?
    Ping,
    /// Start circling in the active tab (the panel's "Circle" button).
    StartCircle,
    /// Keep the console errors of pages matching `pattern` (a stage's origin, already
    /// granted by the person) from their next load on.
    WatchConsole { pattern: String },
    /// Screenshot the visible part of the sender's tab (the content script asks, with
    /// the overlay hidden and sensitive fields masked).
    CaptureVisibleTab,
    /// Queue what the filer filed: answered with [`WorkerReply::Queued`] only once it is
    /// in IndexedDB, so the composer keeps the text until then. Sending the same draft
    /// again (same `changeId`) queues it once.
    File { draft: Box<Draft> },
    /// What waits in the outbox: answered with [`WorkerReply::Outbox`].
    OutboxStatus,
    /// Try every item in the outbox now, failing ones included (e.g. after signing in):
    /// answered with [`WorkerReply::Outbox`] once the attempt is over.
    Deliver,
    /// The panel's "Show on page": outline an item's elements in the active tab,
    /// answered with [`WorkerReply::Shown`]. `tabId` names the tab the panel follows;
    /// without it, the active tab.
    ShowOnPage {
        #[serde(rename = "tabId", default)]
        tab_id: Option<i32>,
        elements: Vec<Element>,
    },
    /// Re-read the questions waiting for the person and set the toolbar badge now
    /// (answered with [`WorkerReply::Badge`]).
    RefreshBadge,
    /// The panel's "Check on stage": open (or bring forward) a tab of the stage at
    /// `url`, re-locate `elements` there, outline them and screenshot the tab; answered
    /// with [`WorkerReply::Checked`]. `tabId` is the tab the panel follows, preferred
    /// when it shows the stage at `stageUrl`. The content module neither sends nor reads
    /// the check's messages: left out of it, they add nothing to what a page loads.
    #[cfg(any(feature = "worker", feature = "ui", not(feature = "content")))]
    CheckOnStage {
        #[serde(rename = "tabId", default)]
        tab_id: Option<i32>,
        #[serde(rename = "stageUrl")]
        stage_url: String,
        url: String,
        elements: Vec<Element>,
    },
    /// Items re-found on a new build: find `elements` in tab `tabId`'s page without
    /// outlining them (with none, only read the build it states); answered with
    /// [`WorkerReply::Refound`]. Left out of the content module, as the check's are.
    #[cfg(any(feature = "worker", feature = "ui", not(feature = "content")))]
    RefindOnPage {
        #[serde(rename = "tabId")]
        tab_id: i32,
        elements: Vec<Element>,
    },
    /// The content script circled a frame of another origin: capture what `stroke` (in
    /// that frame's viewport) circles inside the frame of the sender's tab at
    /// `framePath` (`frame_dom::frame_path`), which works only where the person granted
    /// the frame's origin; answered with [`WorkerReply::FrameCaptured`].
    CaptureInFrame {
        #[serde(rename = "framePath")]
        frame_path: Vec<u32>,
        stroke: Vec<Point>,
    },
    /// The content script is about to mount the overlay in its tab with this secret
    /// (`?channel=`); answered with [`WorkerReply::Overlay`].
    OverlayMounting { channel: String },
    /// The overlay, starting, asks whether the content script of its own tab mounted it
    /// with this secret; it runs only if so ([`WorkerReply::Overlay`]).
    OverlayStarting { channel: String },
}

/// Which of Redline's contexts sent the worker a message, by `sender.url`. Only our own
/// contexts can message the worker at all; of those, a content script runs inside a
/// page, so it is trusted least.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sender {
    /// An extension page: the overlay iframe or the side panel.
    ExtensionPage,
    /// The content script in a page (its `sender.url` is the page's).
    ContentScript,
}

impl Sender {
    /// `sender.url` is an extension page when it is under `extension_origin`
    /// (`chrome-extension://ID`, no slash); anything else came from a content script.
    pub fn of(url: &str, extension_origin: &str) -> Sender {
        match url.strip_prefix(extension_origin) {
            Some(rest) if rest.starts_with('/') => Sender::ExtensionPage,
            _ => Sender::ContentScript,
        }
    }
}

impl WorkerRequest {
    /// Whether `sender` may ask this. The content script only asks for the screenshot
    /// (the overlay hidden and secrets masked first, which only it can do); everything
    /// else, filing, watching a stage's console, circling, showing on a page, is the
    /// extension pages' to ask.
    pub fn may_come_from(&self, sender: Sender) -> bool {
        match self {
            WorkerRequest::CaptureVisibleTab
            | WorkerRequest::OverlayMounting { .. }
            | WorkerRequest::CaptureInFrame { .. } => sender == Sender::ContentScript,
            _ => sender == Sender::ExtensionPage,
        }
    }
}

/// The worker's answer to a [`WorkerRequest`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum WorkerReply {
    Pong {
        version: String,
    },
    CircleStarted,
    ConsoleWatched,
    /// A PNG of the visible tab, as a `data:` URL.
    Screenshot {
        data_url: String,
    },
    Error {
        message: String,
    },
    /// The draft is stored; the worker delivers it from here.
    Queued {
        #[serde(rename = "changeId")]
        change_id: String,
    },
    /// Everything not yet acknowledged by the server ("waiting to send (n)").
    Outbox {
        waiting: u32,
        items: Vec<OutboxItem>,
    },
    /// What "Show on page" found, one entry per element, on the page at `url`.
    Shown {
        url: Option<String>,
        located: Vec<Located>,
    },
    /// The badge as now set: how many items wait for the person's answer or check.
    Badge {
        count: u32,
    },
    /// What "Check on stage" saw in tab `tabId`: what the page found (or why the page
    /// could not be asked) and the tab's screenshot as a PNG `data:` URL (or why Chrome
    /// refused it).
    #[cfg(any(feature = "worker", feature = "ui", not(feature = "content")))]
    Checked {
        #[serde(rename = "tabId")]
        tab_id: i32,
        check: Result<crate::verify::PageCheck, String>,
        screenshot: Result<String, String>,
    },
    /// What the page found for [`WorkerRequest::RefindOnPage`].
    #[cfg(any(feature = "worker", feature = "ui", not(feature = "content")))]
    Refound {
        page: crate::refind::PageRefind,
    },
    /// What [`WorkerRequest::CaptureInFrame`] captured in the frame, boxes and paths in
    /// the frame's own terms, and the origins of frames inside it it could not read.
    FrameCaptured {
        elements: Vec<Element>,
        #[serde(rename = "unreadableFrames")]
        unreadable_frames: Vec<String>,
    },
    /// Whether the overlay asking was mounted in its tab by our content script.
    Overlay {
        #[serde(rename = "mountedHere")]
        mounted_here: bool,
    },
}

/// What the overlay iframe tells the content script in the page (`window.postMessage`).
/// The content script accepts these only from its own iframe and the extension's origin.
/// The page can read them too, so they carry nothing the page does not already know.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum OverlayEvent {
    /// The overlay's app is mounted and taking input.
    #[serde(rename = "redline:ready")]
    Ready,
    /// The person cancelled (Esc) or finished; remove the overlay.
    #[serde(rename = "redline:close")]
    Close,
    /// The person is drawing: the stroke so far, viewport CSS pixels, each time it grows,
    /// so the page can read ahead. One no longer than the last begins a new stroke.
    #[serde(rename = "redline:drawing")]
    Drawing { stroke: Vec<Point> },
    /// The stroke ended without circling anything (a release with no area, or the
    /// browser cancelled the pointer): the page stops reading ahead for it.
    #[serde(rename = "redline:stroke-abandoned")]
    StrokeAbandoned,
    /// The person released the lasso: the simplified outline, viewport CSS pixels.
    #[serde(rename = "redline:circled")]
    Circled { stroke: Vec<Point> },
}

impl Captured {
    /// The elements to file: those captured but the ones the filer `removed` (indexes
    /// into `capture.elements`), in the captured order, each with its computed styles
    /// from `styles` (`PageEvent::Styles`).
    pub fn filed_elements(&self, removed: &[usize], styles: &[Option<ElementStyles>]) -> Vec<Element> {
        let elements = self.capture.elements.iter().enumerate().filter(|(i, _)| !removed.contains(i));
        elements
            .map(|(i, element)| Element { styles: styles.get(i).cloned().flatten(), ..element.clone() })
            .collect()
    }

    /// The circle's bounds, or the whole viewport when the outline had none.
    pub fn bounds_or_viewport(&self) -> Rect {
        bounds_or_viewport(self.capture.bounds, self.viewport)
    }
}

/// A circle's `bounds`, or the whole `viewport` when its outline had none.
pub fn bounds_or_viewport(bounds: Option<Rect>, viewport: Viewport) -> Rect {
    bounds.unwrap_or(Rect { x: 0.0, y: 0.0, width: viewport.width, height: viewport.height })
}

/// What the content script tells its overlay frame. The page cannot read these (they
/// go to the extension's origin), but it can post the frame messages of its own, so the
/// capture comes only through the channel handed over in `Port`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum PageEvent {
    /// Posted to the frame's window once it is ready, transferring one end of a
    /// `MessageChannel`; `token` is the secret in the overlay's address, which the page
    /// cannot read. The overlay takes the port only with it.
    #[serde(rename = "redline:port")]
    Port { token: String },
    /// A stroke the mount script's pen took over the page before the overlay was up (the
    /// pointer's positions, viewport CSS pixels): the overlay takes it as if drawn on its
    /// lasso. Sent only through that port.
    #[serde(rename = "redline:drawn")]
    Drawn { stroke: Vec<Point> },
    /// A screenshot of the viewport (a PNG `data:` URL), posted through that port as soon
    /// as it is taken, ahead of the stroke, so that a release does not wait for it to
    /// cross to the overlay: a capture names it by `id`. Each one posted is newer than
    /// those before it.
    #[serde(rename = "redline:screenshot")]
    Screenshot { id: u32, image: String },
    /// What was circled, where, and how it looked: sent only through that port.
    #[serde(rename = "redline:captured")]
    Captured(Box<Captured>),
    /// The computed styles of the capture just sent, read after it was handed over so
    /// that the composer does not wait for them: `elements[i]` are those of the
    /// capture's `elements[i]` (none past the list's end). One follows every capture.
    #[serde(rename = "redline:styles")]
    Styles { elements: Vec<Option<ElementStyles>> },
}

/// The page side of one circle: elements, context and the screenshot.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Captured {
    pub capture: Capture,
    pub route: String,
    pub locale: Option<String>,
    pub viewport: Viewport,
    pub git_sha: Option<String>,
    /// What the page logged as errors since it loaded (stages with console capture on).
    pub console_errors: Vec<String>,
    /// The `id` of the viewport's screenshot, posted on the channel before this
    /// (`PageEvent::Screenshot`), or why there is none.
    pub screenshot: Result<u32, String>,
    /// The origins of circled frames Redline could not look inside (the person has not
    /// granted them): each frame element is captured instead, and the composer says why.
    #[serde(default)]
    pub unreadable_frames: Vec<String>,
}

/// The command name of the `Alt+Shift+C` shortcut in `manifest.json`.
pub const START_CIRCLE_COMMAND: &str = "start-circle";

/// The script `chrome.scripting` injects on a gesture (see `static/content.js`).
pub const CONTENT_SCRIPT_FILE: &str = "content.js";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn worker_messages_have_a_kind_tag() {
        assert_eq!(serde_json::to_value(WorkerRequest::StartCircle).unwrap(), json!({"kind": "startCircle"}));
        assert_eq!(
            serde_json::from_value::<WorkerRequest>(json!({"kind": "ping"})).unwrap(),
            WorkerRequest::Ping
        );
        assert_eq!(
            serde_json::to_value(WorkerReply::Pong { version: "0.1.0".into() }).unwrap(),
            json!({"kind": "pong", "version": "0.1.0"})
        );
    }

    #[test]
    fn outbox_messages_have_the_shapes_the_composer_uses() {
        let id = "0b6c5a53-2f0e-4d0c-9c1e-6a4f3d2b1a00";
        let file = json!({"kind": "file", "draft": {"changeId": id, "projectId": "p", "input": {"stageId": "s", "title": "t"}}});
        assert!(
            matches!(serde_json::from_value(file).unwrap(), WorkerRequest::File { draft } if draft.change_id == id)
        );
        assert_eq!(
            serde_json::from_value::<WorkerRequest>(json!({"kind": "outboxStatus"})).unwrap(),
            WorkerRequest::OutboxStatus
        );
        assert_eq!(
            serde_json::from_value::<WorkerRequest>(json!({"kind": "deliver"})).unwrap(),
            WorkerRequest::Deliver
        );
        assert_eq!(
            serde_json::to_value(WorkerReply::Queued { change_id: id.into() }).unwrap(),
            json!({"kind": "queued", "changeId": id})
        );
        assert_eq!(
            serde_json::to_value(WorkerReply::Outbox { waiting: 0, items: vec![] }).unwrap(),
            json!({"kind": "outbox", "waiting": 0, "items": []})
        );
    }

    #[test]
    fn show_on_page_messages_carry_elements_and_findings() {
        let request =
            json!({"kind": "showOnPage", "elements": [{"testId": "orders.export", "tag": "button"}]});
        assert!(matches!(serde_json::from_value(request).unwrap(),
            WorkerRequest::ShowOnPage { elements, tab_id: None } if elements[0].test_id.as_deref() == Some("orders.export")));
        let reply = WorkerReply::Shown { url: None, located: vec![] };
        assert_eq!(
            serde_json::to_value(reply).unwrap(),
            json!({"kind": "shown", "url": null, "located": []})
        );
        assert_eq!(
            serde_json::to_value(WorkerReply::Badge { count: 1 }).unwrap(),
            json!({"kind": "badge", "count": 1})
        );
    }

    #[cfg(not(feature = "content"))]
    #[test]
    fn check_on_stage_messages_carry_the_page_and_the_shot() {
        let request = json!({"kind": "checkOnStage", "stageUrl": "http://s/", "url": "http://s/orders", "elements": []});
        assert!(matches!(serde_json::from_value(request).unwrap(),
            WorkerRequest::CheckOnStage { tab_id: None, url, .. } if url == "http://s/orders"));
        let reply =
            WorkerReply::Checked { tab_id: 3, check: Err("no".into()), screenshot: Ok("data:".into()) };
        assert_eq!(
            serde_json::to_value(reply).unwrap(),
            json!({"kind": "checked", "tabId": 3, "check": {"Err": "no"}, "screenshot": {"Ok": "data:"}})
        );
    }

    #[cfg(not(feature = "content"))]
    #[test]
    fn refind_messages_name_the_tab_and_carry_the_page() {
        let request = json!({"kind": "refindOnPage", "tabId": 4, "elements": [{"testId": "a", "tag": "b"}]});
        assert!(matches!(serde_json::from_value(request).unwrap(),
            WorkerRequest::RefindOnPage { tab_id: 4, elements } if elements.len() == 1));
        let page = json!({"gitSha": "b2", "scroll": {"x": 0, "y": 0}, "viewport": {"width": 9, "height": 9},
            "elements": [null, {"matchedBy": "text", "pathLeadsToIt": false, "cssPath": null, "rect": null}]});
        let reply: WorkerReply = serde_json::from_value(json!({"kind": "refound", "page": page})).unwrap();
        assert!(matches!(reply, WorkerReply::Refound { page } if page.elements[0].is_none()
            && page.elements[1].as_ref().is_some_and(|f| f.matched_by == Some(crate::locate::MatchedBy::Text))));
    }

    #[test]
    fn the_worker_takes_each_request_only_from_the_context_that_may_send_it() {
        let origin = "chrome-extension://abcdefghijklmnop";
        let overlay = Sender::of("chrome-extension://abcdefghijklmnop/overlay.html?page=x", origin);
        let panel = Sender::of("chrome-extension://abcdefghijklmnop/panel.html", origin);
        assert_eq!((overlay, panel), (Sender::ExtensionPage, Sender::ExtensionPage));
        for page in [
            "https://stage.example/orders",
            "chrome-extension://abcdefghijklmnopqrs/panel.html",
            "chrome-extension://other/panel.html",
            "",
        ] {
            assert_eq!(Sender::of(page, origin), Sender::ContentScript, "{page}");
        }

        for request in [
            WorkerRequest::CaptureVisibleTab,
            WorkerRequest::OverlayMounting { channel: "c".into() },
            WorkerRequest::CaptureInFrame { frame_path: vec![1, 0], stroke: vec![] },
        ] {
            assert!(request.may_come_from(Sender::ContentScript), "{request:?}");
            assert!(!request.may_come_from(Sender::ExtensionPage), "{request:?}");
        }
        let draft = serde_json::from_value(
            json!({"changeId": "c", "projectId": "p", "input": {"stageId": "s", "title": "t"}}),
        )
        .unwrap();
        for request in [
            WorkerRequest::Ping,
            WorkerRequest::StartCircle,
            WorkerRequest::WatchConsole { pattern: "https://stage.example/*".into() },
            WorkerRequest::File { draft },
            WorkerRequest::OutboxStatus,
            WorkerRequest::Deliver,
            WorkerRequest::ShowOnPage { tab_id: None, elements: vec![] },
            WorkerRequest::RefreshBadge,
            WorkerRequest::OverlayStarting { channel: "c".into() },
        ] {
            assert!(request.may_come_from(Sender::ExtensionPage), "{request:?}");
            assert!(!request.may_come_from(Sender::ContentScript), "{request:?}");
        }
    }

    #[test]
    fn overlay_events_are_namespaced() {
        assert_eq!(serde_json::to_value(OverlayEvent::Close).unwrap(), json!({"type": "redline:close"}));
        assert!(serde_json::from_value::<OverlayEvent>(json!({"type": "close"})).is_err());
    }

    #[test]
    fn the_elements_not_removed_are_filed_in_order_with_the_styles_that_came_after() {
        let element = |id: &str| Element { test_id: Some(id.into()), ..Element::default() };
        let captured = Captured {
            capture: Capture {
                stroke: Vec::new(),
                bounds: None,
                elements: vec![element("a"), element("b"), element("c")],
                device_pixel_ratio: None,
                scroll: None,
                failed_requests: Vec::new(),
            },
            route: "/".into(),
            locale: None,
            viewport: Viewport { width: 800.0, height: 600.0 },
            git_sha: None,
            console_errors: Vec::new(),
            screenshot: Ok(1),
            unreadable_frames: Vec::new(),
        };
        let red = ElementStyles { changed: [("color", "rgb(255, 0, 0)")].into(), ..ElementStyles::default() };
        // Styles for the first two only (the rest were past the styled maximum); the
        // filer removed `b`.
        let filed = captured.filed_elements(&[1], &[Some(red.clone()), None]);
        assert_eq!(filed, vec![Element { styles: Some(red), ..element("a") }, element("c")]);
        assert_eq!(captured.filed_elements(&[], &[]), captured.capture.elements, "no styles came");
        assert_eq!(captured.filed_elements(&[7], &[]).len(), 3, "an index past the capture removes nothing");
    }

    #[test]
    fn the_styles_after_a_capture_keep_each_element_in_its_place() {
        let message = PageEvent::Styles { elements: vec![None, Some(ElementStyles::default())] };
        let written = serde_json::to_value(&message).unwrap();
        assert_eq!(written["type"], "redline:styles");
        assert_eq!(written["elements"][0], serde_json::Value::Null);
        assert_eq!(serde_json::from_value::<PageEvent>(written).unwrap(), message);
    }
}

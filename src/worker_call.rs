//! The calls the extension's contexts make to the background worker, typed as the
//! protocol's RPCs are (`redline_protocol::Rpc`): one request struct per call, tied by
//! [`WorkerCall`] to its kind, the context that may make it and its reply type. One list,
//! [`with_worker_calls!`], names them all: the trait impls here and the worker's dispatch
//! (`worker::on_message`) are generated from it, so a call the worker does not answer,
//! or an answer of another type, does not compile.
//!
//! On the wire (`chrome.runtime.sendMessage`) a request is its struct's fields beside
//! `kind`, [`WorkerCall::KIND`]; the answer is `Result<Reply, WorkerError>` as serde
//! writes it (`{"Ok": reply}` or `{"Err": {"error": …}}`). The overlay and the panel
//! send and read both with serde (`ui::call`); the content module, which carries no
//! serde, with `page_js`, whose browser tests hold it to these types.

use redline_protocol::{Element, Point};
use serde::{Deserialize, Serialize};

use crate::rules::locate::Located;
use crate::rules::outbox::Draft;
use crate::rules::settings::Settings;

/// One call to the worker: the request is `Self`, answered with `Reply`.
pub trait WorkerCall {
    /// The request's `kind` on the wire, e.g. `startCircle`.
    const KIND: &'static str;
    /// The only context the worker takes this call from.
    const FROM: Sender;
    type Reply;
}

/// Why the worker did not answer a call with its reply.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "error", rename_all = "camelCase")]
pub enum WorkerError {
    /// Not a call the worker knows, or not in its shape.
    NotACall { message: String },
    /// The context that sent it may not make this call ([`WorkerCall::FROM`]).
    NotFromThere,
    /// No answer came: the worker's module failed to load, or Chrome could not reach it.
    NoAnswer { message: String },
    /// The call was made and failed; `message` says why, in words for the person.
    Failed { message: String },
}

impl WorkerError {
    pub fn failed(message: impl std::fmt::Display) -> WorkerError {
        WorkerError::Failed { message: message.to_string() }
    }
}

impl std::fmt::Display for WorkerError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            WorkerError::NotACall { message } => write!(f, "not a Redline message: {message}"),
            WorkerError::NotFromThere => f.write_str("Redline does not take this request from there."),
            WorkerError::NoAnswer { message } => {
                write!(f, "Redline\u{2019}s worker did not answer ({message}).")
            }
            WorkerError::Failed { message } => f.write_str(message),
        }
    }
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

/// Calls macro `$m` with every call the worker answers: its request type, `kind`, the
/// context it takes it from and the reply type. The content script asks only for what
/// only it can do (the screenshot, with the overlay hidden and secrets masked; a capture
/// inside a frame of its tab; announcing the overlay it mounts); everything else is the
/// extension pages' to ask.
macro_rules! with_worker_calls {
    ($m:ident) => {
        $m! {
            StartCircle = "startCircle", ExtensionPage => ();
            EnableStage = "enableStage", ExtensionPage => ();
            CaptureVisibleTab = "captureVisibleTab", ContentScript => String;
            CaptureInFrame = "captureInFrame", ContentScript => FrameCaptured;
            File = "file", ExtensionPage => Queued;
            ShowOnPage = "showOnPage", ExtensionPage => Vec<Located>;
            RefreshBadge = "refreshBadge", ExtensionPage => u32;
            CheckOnStage = "checkOnStage", ExtensionPage => Checked;
            RefindOnPage = "refindOnPage", ExtensionPage => crate::rules::refind::PageRefind;
            OverlayMounting = "overlayMounting", ContentScript => ();
            OverlayStarting = "overlayStarting", ExtensionPage => Option<OverlayStarted>;
        }
    };
}
#[cfg(feature = "worker")]
pub(crate) use with_worker_calls;

macro_rules! worker_calls {
    ($($call:ident = $kind:literal, $from:ident => $reply:ty;)*) => {
        $(
            impl WorkerCall for $call {
                const KIND: &'static str = $kind;
                const FROM: Sender = Sender::$from;
                type Reply = $reply;
            }
        )*
        /// Every call's `kind`.
        pub const WORKER_CALL_KINDS: &[&str] = &[$($kind),*];
    };
}
with_worker_calls!(worker_calls);

/// Start circling in the active tab (the panel's "Circle" button).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StartCircle {}

/// Enable the stage of pages matching `pattern` (its origin, already granted by the
/// person): from their next load on, keep their console errors and put the overlay in
/// them hidden, ready for a gesture.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct EnableStage {
    pub pattern: String,
}

/// Screenshot the visible part of the sender's tab (the content script asks, with the
/// overlay hidden and sensitive fields masked): answered with a PNG `data:` URL.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CaptureVisibleTab {}

/// The content script circled a frame of another origin: capture what `stroke` (in that
/// frame's viewport) circles inside the frame of the sender's tab at `framePath`
/// (`frame_dom::frame_path`), which works only where the person granted the frame's
/// origin.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CaptureInFrame {
    pub frame_path: Vec<u32>,
    pub stroke: Vec<Point>,
}

/// What [`CaptureInFrame`] captured in the frame, boxes and paths in the frame's own
/// terms (no styles: see `content::script::capture_frame`), and the origins of frames inside it
/// it could not read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FrameCaptured {
    pub elements: Vec<Element>,
    pub unreadable_frames: Vec<String>,
}

/// Queue what the filer filed: answered only once it is in IndexedDB, so the composer
/// keeps the text until then. Sending the same draft again (same `changeId`) queues it
/// once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct File {
    pub draft: Box<Draft>,
}

/// The draft is stored; the worker delivers it from here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Queued {
    pub change_id: String,
}

/// The panel's "Show on page": outline an item's elements in tab `tabId` (the tab the
/// panel follows; without it, the active tab), answered with what was found of each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ShowOnPage {
    #[serde(default)]
    pub tab_id: Option<i32>,
    pub elements: Vec<Element>,
}

/// Re-read the questions waiting for the person and set the toolbar badge now: answered
/// with the count the badge shows.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RefreshBadge {}

/// The panel's "Check on stage": open (or bring forward) a tab of the stage at `url`,
/// re-locate `elements` there, outline them and screenshot the tab. `tabId` is the tab
/// the panel follows, preferred when it shows the stage at `stageUrl`. `again`: "Check
/// again", which leaves a tab already at `url` as it is rather than reloading it, so that
/// a toolbar click made there since still lets the tab be screenshot (Firefox forgets
/// the click when the page loads again).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct CheckOnStage {
    #[serde(default)]
    pub tab_id: Option<i32>,
    pub stage_url: String,
    pub url: String,
    pub elements: Vec<Element>,
    #[serde(default)]
    pub again: bool,
}

/// What "Check on stage" saw in tab `tabId`: what the page found (or why the page could
/// not be asked) and the tab's screenshot as a PNG `data:` URL (or why Chrome refused it).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Checked {
    pub tab_id: i32,
    pub check: Result<crate::rules::verify::PageCheck, String>,
    pub screenshot: Result<String, String>,
}

/// Items re-found on a new build: find `elements` in tab `tabId`'s page without
/// outlining them (with none, only read the build the page states).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RefindOnPage {
    pub tab_id: i32,
    pub elements: Vec<Element>,
}

/// The content script is about to mount the overlay in its tab with this secret
/// (`?channel=`). Sent by the mount script (`static/content.js`) before the content
/// module is loaded, so written there by hand: a test below holds it to this type.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverlayMounting {
    pub channel: String,
}

/// The overlay, starting, asks whether the content script of its own tab mounted it with
/// this secret: answered [`OverlayStarted`] only once, for that tab (`None` otherwise);
/// it runs only if so.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OverlayStarting {
    pub channel: String,
}

/// The overlay may run, and files with this sign-in, or says why it could not be read:
/// the worker reads it (`sign_in_store`) so that the overlay's module, which a gesture
/// waits for, carries no IndexedDB code of its own.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OverlayStarted {
    pub sign_in: Result<Settings, String>,
}

/// A call as it goes on the wire: the request's fields beside its `kind`.
#[derive(Serialize)]
pub struct Envelope<'a, C> {
    pub kind: &'static str,
    #[serde(flatten)]
    pub request: &'a C,
}

impl<'a, C: WorkerCall> Envelope<'a, C> {
    pub fn new(request: &'a C) -> Self {
        Envelope { kind: C::KIND, request }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn wire<C: WorkerCall + Serialize>(request: &C) -> Value {
        serde_json::to_value(Envelope::new(request)).unwrap()
    }

    /// What the worker reads of a message: the call `kind` names, from the same object.
    fn read<C: WorkerCall + for<'de> Deserialize<'de>>(message: Value) -> C {
        assert_eq!(message["kind"], C::KIND);
        serde_json::from_value(message).unwrap()
    }

    #[test]
    fn every_call_has_its_own_kind_and_no_field_of_that_name() {
        let mut kinds = WORKER_CALL_KINDS.to_vec();
        kinds.sort();
        kinds.dedup();
        assert_eq!(kinds.len(), WORKER_CALL_KINDS.len());
        let draft = serde_json::from_value(
            json!({"changeId": "c", "projectId": "p", "input": {"stageId": "s", "title": "t"}}),
        )
        .unwrap();
        let check = CheckOnStage {
            tab_id: Some(3),
            stage_url: "http://s/".into(),
            url: "http://s/o".into(),
            elements: vec![],
            again: false,
        };
        let written = [
            wire(&StartCircle {}),
            wire(&EnableStage { pattern: "https://stage.example/*".into() }),
            wire(&CaptureVisibleTab {}),
            wire(&CaptureInFrame { frame_path: vec![1], stroke: vec![] }),
            wire(&File { draft }),
            wire(&ShowOnPage { tab_id: None, elements: vec![] }),
            wire(&RefreshBadge {}),
            wire(&check),
            wire(&RefindOnPage { tab_id: 4, elements: vec![] }),
            wire(&OverlayMounting { channel: "c".into() }),
            wire(&OverlayStarting { channel: "c".into() }),
        ];
        let written: Vec<&str> = written.iter().map(|w| w["kind"].as_str().unwrap()).collect();
        assert_eq!(written, WORKER_CALL_KINDS, "each request keeps its kind, in the list's order");
    }

    #[test]
    fn a_request_goes_as_its_fields_beside_its_kind() {
        assert_eq!(wire(&StartCircle {}), json!({"kind": "startCircle"}));
        let show =
            ShowOnPage { tab_id: Some(4), elements: vec![Element { tag: "a".into(), ..Element::default() }] };
        assert_eq!(wire(&show)["tabId"], 4);
        assert_eq!(read::<ShowOnPage>(wire(&show)), show);
        let read_show: ShowOnPage =
            read(json!({"kind": "showOnPage", "elements": [{"testId": "orders.export", "tag": "button"}]}));
        assert_eq!(
            (read_show.tab_id, read_show.elements[0].test_id.as_deref()),
            (None, Some("orders.export"))
        );
        let check: CheckOnStage = read(
            json!({"kind": "checkOnStage", "stageUrl": "http://s/", "url": "http://s/orders", "elements": []}),
        );
        assert_eq!((check.tab_id, check.url.as_str()), (None, "http://s/orders"));
        let refind: RefindOnPage =
            read(json!({"kind": "refindOnPage", "tabId": 4, "elements": [{"testId": "a", "tag": "b"}]}));
        assert_eq!((refind.tab_id, refind.elements.len()), (4, 1));
        let frame = CaptureInFrame { frame_path: vec![2, 0], stroke: vec![Point { x: 1.0, y: 2.0 }] };
        assert_eq!(
            wire(&frame),
            json!({"kind": "captureInFrame", "framePath": [2, 0], "stroke": [{"x": 1.0, "y": 2.0}]})
        );
    }

    #[test]
    fn the_composer_files_a_draft_and_hears_its_change_id() {
        let id = "0b6c5a53-2f0e-4d0c-9c1e-6a4f3d2b1a00";
        let file: File = read(
            json!({"kind": "file", "draft": {"changeId": id, "projectId": "p", "input": {"stageId": "s", "title": "t"}}}),
        );
        assert_eq!(file.draft.change_id, id);
        let reply: Result<Queued, WorkerError> = Ok(Queued { change_id: id.into() });
        assert_eq!(serde_json::to_value(reply).unwrap(), json!({"Ok": {"changeId": id}}));
    }

    #[test]
    fn an_answer_is_the_reply_or_a_typed_error() {
        let badge: Result<u32, WorkerError> = Ok(2);
        assert_eq!(serde_json::to_value(badge).unwrap(), json!({"Ok": 2}));
        let refused: Result<u32, WorkerError> = Err(WorkerError::NotFromThere);
        assert_eq!(serde_json::to_value(refused).unwrap(), json!({"Err": {"error": "notFromThere"}}));
        let failed = WorkerError::failed("There is no active tab to circle on.");
        let written = serde_json::to_value(Err::<(), _>(failed.clone())).unwrap();
        assert_eq!(
            written,
            json!({"Err": {"error": "failed", "message": "There is no active tab to circle on."}})
        );
        assert_eq!(serde_json::from_value::<Result<(), WorkerError>>(written).unwrap(), Err(failed));
        let checked = Checked { tab_id: 3, check: Err("no".into()), screenshot: Ok("data:".into()) };
        assert_eq!(
            serde_json::to_value(checked).unwrap(),
            json!({"tabId": 3, "check": {"Err": "no"}, "screenshot": {"Ok": "data:"}})
        );
        assert_eq!(WorkerError::NotFromThere.to_string(), "Redline does not take this request from there.");
    }

    #[test]
    fn the_overlay_hears_the_sign_in_only_with_its_mount_confirmed() {
        let sign_in = Settings { api_url: "http://127.0.0.1:7878".into(), token: "t0k".into() };
        let started: Result<Option<OverlayStarted>, WorkerError> =
            Ok(Some(OverlayStarted { sign_in: Ok(sign_in.clone()) }));
        let written = serde_json::to_value(&started).unwrap();
        assert_eq!(
            written,
            json!({"Ok": {"signIn": {"Ok": {"apiUrl": "http://127.0.0.1:7878", "token": "t0k"}}}})
        );
        assert_eq!(
            serde_json::from_value::<Result<Option<OverlayStarted>, WorkerError>>(written).unwrap(),
            started
        );
        let elsewhere: Result<Option<OverlayStarted>, WorkerError> = Ok(None);
        assert_eq!(serde_json::to_value(elsewhere).unwrap(), json!({"Ok": null}));
    }

    #[test]
    fn the_mount_script_announces_the_overlay_as_the_worker_reads_it() {
        let script = include_str!("../static/content.js");
        assert!(script.contains("chrome.runtime.sendMessage({ kind: \"overlayMounting\", channel })"));
        let mounting: OverlayMounting = read(json!({"kind": "overlayMounting", "channel": "s3cret"}));
        assert_eq!(mounting, OverlayMounting { channel: "s3cret".into() });
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
        macro_rules! from_content {
            ($($call:ident = $kind:literal, $from:ident => $reply:ty;)*) => {
                vec![$($kind,)*].into_iter().zip([$(<$call as WorkerCall>::FROM == Sender::ContentScript,)*])
                    .filter(|(_, content)| *content).map(|(kind, _)| kind).collect::<Vec<_>>()
            };
        }
        let from_content: Vec<&str> = with_worker_calls!(from_content);
        assert_eq!(from_content, ["captureVisibleTab", "captureInFrame", "overlayMounting"]);
    }
}

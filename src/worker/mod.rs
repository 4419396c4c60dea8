//! The background service worker's Rust side. `static/worker.js` registers the listeners
//! synchronously (Chrome requires it) and calls these exports once the module is ready.

use serde::Serialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::prelude::*;

use std::cell::RefCell;

use crate::browser::chrome::{self, ChromeError, FrameCall, MessageSender, Tab};
use crate::browser::sign_in_store;
use crate::browser::timer;
use crate::messages::{AHEAD_SCRIPT_FILE, CONTENT_SCRIPT_FILE, START_CIRCLE_COMMAND};
use crate::rules::locate::{self, Located, Shown};
use crate::rules::throttle::Throttle;
use crate::worker_call::*;

mod badge;
mod check;
mod outbox;

/// `chrome.runtime.onMessage`: answers a call ([`worker_call`]) with its reply or a
/// [`WorkerError`], generated from `with_worker_calls!`'s list. Never throws: a message
/// the worker cannot read is answered with an error too.
#[wasm_bindgen]
pub async fn on_message(message: JsValue, sender: JsValue) -> JsValue {
    let sender: MessageSender = serde_wasm_bindgen::from_value(sender).unwrap_or_default();
    let from = Sender::of(&sender.url, &chrome::extension_origin());
    let kind = js_sys::Reflect::get(&message, &JsValue::from_str("kind")).ok().and_then(|k| k.as_string());
    macro_rules! dispatch {
        ($($call:ident = $kind:literal, $from:ident => $reply:ty;)*) => {
            match kind.as_deref() {
                $(Some(<$call as WorkerCall>::KIND) => answer::<$call>(message, from, &sender).await,)*
                _ => to_js(&Err::<(), _>(WorkerError::NotACall {
                    message: format!("no call of kind {}", kind.as_deref().unwrap_or("(none)")),
                })),
            }
        };
    }
    with_worker_calls!(dispatch)
}

/// Reads call `C` from `message` and answers it, if `from` may make it.
async fn answer<C: Answer>(message: JsValue, from: Sender, sender: &MessageSender) -> JsValue {
    let reply = if from != C::FROM {
        Err(WorkerError::NotFromThere)
    } else {
        match serde_wasm_bindgen::from_value::<C>(message) {
            Ok(call) => call.answer(sender).await,
            Err(error) => Err(WorkerError::NotACall { message: format!("{}: {error}", C::KIND) }),
        }
    };
    to_js(&reply)
}

fn to_js<T: Serialize>(reply: &Result<T, WorkerError>) -> JsValue {
    reply.serialize(&serde_wasm_bindgen::Serializer::json_compatible()).unwrap_or(JsValue::UNDEFINED)
}

/// How the worker answers one call.
trait Answer: WorkerCall<Reply: Serialize> + DeserializeOwned {
    async fn answer(self, sender: &MessageSender) -> Result<Self::Reply, WorkerError>;
}

impl From<ChromeError> for WorkerError {
    fn from(error: ChromeError) -> Self {
        WorkerError::failed(error)
    }
}

impl Answer for StartCircle {
    async fn answer(self, _: &MessageSender) -> Result<(), WorkerError> {
        match chrome::active_tab().await? {
            Some(tab) => Ok(start_circle(&tab).await?),
            None => Err(WorkerError::failed("There is no active tab to circle on.")),
        }
    }
}

impl Answer for EnableStage {
    async fn answer(self, _: &MessageSender) -> Result<(), WorkerError> {
        for script in stage_scripts() {
            run_also_on(script, &self.pattern).await?;
        }
        Ok(())
    }
}

impl Answer for CaptureVisibleTab {
    async fn answer(self, sender: &MessageSender) -> Result<String, WorkerError> {
        match sender.tab.as_ref().and_then(|t| t.window_id) {
            Some(window_id) => Ok(screenshot(window_id).await?),
            None => Err(WorkerError::failed("Only a page in a tab can ask for a screenshot.")),
        }
    }
}

impl Answer for CaptureInFrame {
    async fn answer(self, sender: &MessageSender) -> Result<FrameCaptured, WorkerError> {
        match sender.tab.as_ref().and_then(|t| t.id) {
            Some(tab_id) => capture_in_frame(tab_id, &self.frame_path, self.stroke).await,
            None => Err(WorkerError::failed("Only a page in a tab has frames to capture.")),
        }
    }
}

impl Answer for File {
    async fn answer(self, _: &MessageSender) -> Result<Queued, WorkerError> {
        outbox::file(*self.draft).await
    }
}

impl Answer for ShowOnPage {
    async fn answer(self, _: &MessageSender) -> Result<Vec<Located>, WorkerError> {
        show_on_page(self.tab_id, self.elements).await
    }
}

impl Answer for CheckOnStage {
    async fn answer(self, _: &MessageSender) -> Result<Checked, WorkerError> {
        check::check_on_stage(self).await
    }
}

impl Answer for RefindOnPage {
    async fn answer(self, _: &MessageSender) -> Result<crate::rules::refind::PageRefind, WorkerError> {
        chrome::in_frame(self.tab_id, &[], FrameCall::Refind, &self.elements)
            .await
            .map_err(WorkerError::failed)
    }
}

impl Answer for RefreshBadge {
    async fn answer(self, _: &MessageSender) -> Result<u32, WorkerError> {
        badge::refresh().await.map_err(WorkerError::failed)
    }
}

impl Answer for OverlayMounting {
    async fn answer(self, sender: &MessageSender) -> Result<(), WorkerError> {
        let tab = sender.tab.as_ref().and_then(|t| t.id);
        match tab {
            Some(tab) => {
                MOUNTS.with_borrow_mut(|m| m.insert(tab, self.channel));
                Ok(())
            }
            None => Err(WorkerError::failed("Only a page in a tab can mount the overlay.")),
        }
    }
}

impl Answer for OverlayStarting {
    async fn answer(self, sender: &MessageSender) -> Result<Option<OverlayStarted>, WorkerError> {
        // Taken once: a second frame with the same secret is not the one mounted.
        let tab = sender.tab.as_ref().and_then(|t| t.id);
        let mounted = tab.is_some_and(|tab| {
            MOUNTS.with_borrow_mut(|m| m.get(&tab) == Some(&self.channel) && m.remove(&tab).is_some())
        });
        if !mounted {
            return Ok(None);
        }
        Ok(Some(OverlayStarted { sign_in: sign_in_store::load().await.map_err(|e| e.to_string()) }))
    }
}

thread_local! {
    /// The overlay each tab's content script is mounting: its secret, by tab id, until the
    /// overlay starts (a moment later, well within the worker's 30 s of idle life).
    static MOUNTS: RefCell<std::collections::HashMap<i32, String>> = RefCell::default();
    /// Chrome allows two `captureVisibleTab` calls a second per extension.
    static CAPTURES: RefCell<Throttle> = const { RefCell::new(Throttle::new(CAPTURE_SPACING_MS)) };
}

const CAPTURE_SPACING_MS: f64 = 550.0;

/// Screenshots a window's visible tab, queueing behind earlier captures so a burst of
/// circles waits its turn instead of failing Chrome's rate limit.
async fn screenshot(window_id: i32) -> Result<String, ChromeError> {
    let mut attempt = 0;
    loop {
        let wait = CAPTURES.with_borrow_mut(|t| t.reserve(timer::now_ms()));
        timer::sleep(wait).await;
        match chrome::capture_visible_tab(window_id).await {
            Err(error) if error.0.contains("MAX_CAPTURE_VISIBLE_TAB_CALLS_PER_SECOND") && attempt < 5 => {
                attempt += 1;
            }
            result => return result,
        }
    }
}

/// Run once the module is loaded, at every start of the worker: moves a token an earlier
/// version kept in `storage.local` to the sign-in's own store (`sign_in_store`), and
/// closes `storage.local` to content scripts where the browser can
/// (`chrome::restrict_local_storage`; not Firefox).
#[wasm_bindgen]
pub async fn on_start() -> Result<(), JsValue> {
    let restricted = chrome::restrict_local_storage().await.map(drop).map_err(|e| JsValue::from_str(&e.0));
    sign_in_store::load().await.map_err(|e| JsValue::from_str(&e.to_string()))?;
    restricted
}

/// `chrome.action.onClicked`: the toolbar button is a gesture that grants `activeTab`.
#[wasm_bindgen]
pub async fn on_action_clicked(tab: JsValue) -> Result<(), JsValue> {
    let tab: Tab = serde_wasm_bindgen::from_value(tab)?;
    start_circle(&tab).await.map_err(|e| JsValue::from_str(&e.0))
}

/// `chrome.commands.onCommand`: the `Alt+Shift+C` shortcut, also a gesture.
#[wasm_bindgen]
pub async fn on_command(command: String, tab: JsValue) -> Result<(), JsValue> {
    if command != START_CIRCLE_COMMAND {
        return Ok(());
    }
    let tab: Tab = serde_wasm_bindgen::from_value(tab)?;
    start_circle(&tab).await.map_err(|e| JsValue::from_str(&e.0))
}

/// Injects the content script, which mounts the overlay. Runs only from a gesture's
/// handler, so nothing of ours enters a page the person did not ask for.
async fn start_circle(tab: &Tab) -> Result<(), ChromeError> {
    let tab_id = tab.id.ok_or_else(|| ChromeError("That tab cannot be circled on.".into()))?;
    chrome::execute_script(tab_id, &[CONTENT_SCRIPT_FILE]).await
}

/// "Show on page": outlines the elements in the active tab through the content module.
/// Works where Redline may run script: a stage whose origin was granted, or a tab where
/// the person used the toolbar button (`activeTab`).
async fn show_on_page(
    tab_id: Option<i32>,
    elements: Vec<redline_protocol::Element>,
) -> Result<Vec<Located>, WorkerError> {
    let tab_id = match tab_id {
        Some(id) => id,
        None => match chrome::active_tab().await? {
            Some(Tab { id: Some(id), .. }) => id,
            _ => return Err(WorkerError::failed("There is no tab to show it on.")),
        },
    };
    match chrome::in_frame::<_, Shown>(tab_id, &[], FrameCall::Show, &elements).await {
        Ok(shown) => Ok(show_in_frames(tab_id, &elements, shown).await),
        Err(error) => Err(WorkerError::failed(format!(
            "Redline cannot reach this tab ({error}). Open the stage in it, click Redline\u{2019}s toolbar button there once, and try again."
        ))),
    }
}

/// Captures inside one frame of the sender's own tab, with the content module run in
/// that frame. Chrome runs it only where the person granted the frame's origin (the
/// toolbar click's `activeTab` covers the top page's origin only); elsewhere the answer
/// is Chrome's refusal, and the content script files the frame element instead.
async fn capture_in_frame(
    tab_id: i32,
    frame_path: &[u32],
    stroke: Vec<redline_protocol::Point>,
) -> Result<FrameCaptured, WorkerError> {
    Ok(chrome::in_frame::<_, FrameCaptured>(tab_id, frame_path, FrameCall::Capture, &stroke).await?)
}

/// What the top page found, completed with what frames of other origins find of the
/// elements it handed on to them (frames whose origin the person did not grant cannot
/// be asked: theirs stay not found). Each frame may hand on to frames inside it.
async fn show_in_frames(tab_id: i32, elements: &[redline_protocol::Element], top: Shown) -> Vec<Located> {
    let mut located = top.located;
    let places: Vec<usize> = (0..elements.len()).collect();
    let mut pending = locate::by_frame(&top.in_frames, elements, &places);
    while let Some((frame_path, list)) = pending.pop() {
        let (places, inside): (Vec<usize>, Vec<_>) = list.into_iter().unzip();
        let Ok(shown) = chrome::in_frame::<_, Shown>(tab_id, &frame_path, FrameCall::Show, &inside).await
        else {
            continue;
        };
        for (place, found) in places.iter().zip(shown.located) {
            if let Some(entry) = located.get_mut(*place) {
                entry.matched_by = found.matched_by;
                entry.count = found.count;
            }
        }
        pending.extend(locate::by_frame(&shown.in_frames, &inside, &places));
    }
    located
}

/// What runs on a stage the person enabled, from each page load on: the main-world script
/// that buffers console errors (`static/console-buffer.js`), and the overlay put in the
/// page hidden once it has loaded (`static/ahead.js`, then the gesture's own script), so
/// that a gesture there only has to show it.
fn stage_scripts() -> [chrome::RegisteredContentScript; 2] {
    let script = |id: &str, js: &[&str], run_at: &str, world: &str| chrome::RegisteredContentScript {
        id: id.to_owned(),
        matches: Vec::new(),
        js: js.iter().map(|&file| file.to_owned()).collect(),
        run_at: run_at.to_owned(),
        world: world.to_owned(),
        persist_across_sessions: true,
    };
    [
        script("redline-console-buffer", &["console-buffer.js"], "document_start", "MAIN"),
        script(
            "redline-overlay-ahead",
            &[AHEAD_SCRIPT_FILE, CONTENT_SCRIPT_FILE],
            "document_idle",
            "ISOLATED",
        ),
    ]
}

/// Adds `pattern` to the pages `script` runs on (registered under its id, or updated).
async fn run_also_on(script: chrome::RegisteredContentScript, pattern: &str) -> Result<(), ChromeError> {
    let existing = chrome::registered_content_script(&script.id).await?;
    let update = existing.is_some();
    let mut script = existing.unwrap_or(script);
    if !script.matches.iter().any(|m| m == pattern) {
        script.matches.push(pattern.to_owned());
    }
    chrome::register_content_script(&script, update).await
}

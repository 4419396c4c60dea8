//! The toolbar badge: how many items wait for the person: questions to answer and fixes
//! to check on the stage, as one total (the tooltip names both, `verify::badge`), counted by
//! the server (`countChanges`). The worker polls on its own `chrome.alarms` alarm so the
//! count stays right while the panel is closed; the panel asks it to count again when an
//! event touches an item that waits for the person.
//!
//! The same poll announces what newly waits with a browser notification (`notify.rs`
//! decides which): the worker is stopped when idle, and the alarm is what wakes it.

use std::cell::RefCell;

use redline_protocol::ChangeStatus;
use redline_protocol::rpc::{
    CountChanges, CountChangesInput, GetSession, GetSessionInput, ListChanges, ListChangesInput,
};
use wasm_bindgen::prelude::*;

use crate::browser::api::Client;
use crate::browser::chrome::{self, Alarm};
use crate::browser::sign_in_store;
use crate::browser::timer;
use crate::rules::api_error::ApiError;
use crate::rules::notify::{self, Memory, Reason, Waiting};
use crate::rules::queue;
use crate::rules::settings::{self, Preferences, Settings};
use crate::rules::verify;

/// The polling alarm; the outbox has its own (`redline-outbox`).
pub const ALARM: &str = "redline-queue";
/// Chrome's shortest repeating alarm.
const PERIOD_MINUTES: f64 = 0.5;

/// Worker start: make sure the alarm repeats, and count once now.
#[wasm_bindgen]
pub async fn start_badge() {
    if let Err(error) = chrome::ensure_repeating_alarm(ALARM, PERIOD_MINUTES).await {
        web_sys::console::error_1(&format!("Redline badge alarm: {error}").into());
    }
    let _ = refresh().await;
}

/// `chrome.alarms.onAlarm` for [`ALARM`] (other alarms are someone else's).
#[wasm_bindgen]
pub async fn on_badge_alarm(alarm: JsValue) -> Result<(), JsValue> {
    let alarm: Alarm = serde_wasm_bindgen::from_value(alarm)?;
    if alarm.name == ALARM {
        let _ = refresh().await;
    }
    Ok(())
}

/// Counts the questions and checks for the signed-in person, sets the badge and
/// announces what newly waits. Without settings the badge is cleared; on a failure it is
/// left as it was (the next poll tries again).
pub async fn refresh() -> Result<u32, String> {
    let settings = sign_in_store::load().await.map_err(|e| e.to_string())?;
    let Some(settings) = Some(settings).filter(Settings::is_complete) else {
        set(0, 0).await?;
        return Ok(0);
    };
    let client = Client::new(&settings);
    let session =
        client.call_parsed_by_browser::<GetSession>(GetSessionInput {}).await.map_err(|e| e.to_string())?;
    let (mut questions, mut checks) = (0, 0);
    let mut waiting = Vec::new();
    for project in &session.projects {
        let (q, c, w) = count(&client, &project.project_id, &session.name).await?;
        questions += q;
        checks += c;
        waiting.extend(w);
    }
    set(questions, checks).await?;
    if let Err(error) = announce(&waiting).await {
        web_sys::console::error_1(&format!("Redline notifications: {error}").into());
    }
    Ok((questions + checks) as u32)
}

/// One project's questions and checks for `me`, and the items waiting: `countChanges`, one
/// small answer; a server without it (Fabric, which answers 404) is asked for the list of
/// questions and done items instead, counted here.
async fn count(client: &Client, project_id: &str, me: &str) -> Result<(usize, usize, Vec<Waiting>), String> {
    if !COUNTS_MISSING.get() {
        let input = CountChangesInput { project_id: project_id.to_owned(), stage_id: None };
        match client.call_parsed_by_browser::<CountChanges>(input).await {
            Ok(counts) => return Ok(notify::from_counts(&counts)),
            Err(ApiError::Gone { .. }) => COUNTS_MISSING.set(true),
            Err(error) => return Err(error.to_string()),
        }
    }
    let input = ListChangesInput {
        project_id: project_id.to_owned(),
        status: Some(vec![ChangeStatus::NeedsAnswer, ChangeStatus::Done]),
        include_done: true,
        limit: Some(redline_protocol::LIST_LIMIT_MAX),
        ..ListChangesInput::default()
    };
    let list = client.call_parsed_by_browser::<ListChanges>(input).await.map_err(|e| e.to_string())?;
    let (mut questions, mut checks, mut waiting) = (0, 0, Vec::new());
    for change in &list.changes {
        if queue::needs_my_answer(change, me) {
            questions += 1;
            waiting.push(Waiting::new(change, Reason::Question));
        } else if verify::waits_for_my_check(change, me) {
            checks += 1;
            waiting.push(Waiting::new(change, Reason::Check));
        }
    }
    Ok((questions, checks, waiting))
}

thread_local! {
    /// The server answered `countChanges` with 404: it has none (Fabric), so the worker
    /// lists instead until it is restarted.
    static COUNTS_MISSING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// The notifications' memory while the worker lives (read from storage once): polls
    /// that overlap (the alarm, a panel's refresh) decide one after the other on it, with
    /// no await in between, so none announces what another just did.
    static MEMORY: RefCell<Option<Memory>> = const { RefCell::new(None) };
    /// The window the person used when the latest notification was shown: where a click
    /// on it opens the panel, which has to be known at once (see `on_notification_clicked`).
    static WINDOW: std::cell::Cell<Option<i32>> = const { std::cell::Cell::new(None) };
}

/// Announces the items that newly wait (`notify::decide`), unless the person switched
/// notifications off; the memory is kept either way, so switching them on again does not
/// announce everything that waits already.
async fn announce(waiting: &[Waiting]) -> Result<(), String> {
    if MEMORY.with_borrow(Option::is_none) {
        let stored = chrome::storage_get::<Memory>(notify::STORAGE_KEY).await.map_err(|e| e.0)?;
        MEMORY.with_borrow_mut(|memory| {
            memory.get_or_insert(stored.unwrap_or_default());
        });
    }
    let now = timer::now_ms() as i64;
    let (memory, notices) = MEMORY.with_borrow_mut(|memory| {
        let (next, notices) = notify::decide(memory.as_ref().unwrap_or(&Memory::default()), waiting, now);
        *memory = Some(next.clone());
        (next, notices)
    });
    chrome::storage_set(notify::STORAGE_KEY, &memory).await.map_err(|e| e.0)?;
    let preferences = chrome::storage_get::<Preferences>(settings::PREFERENCES_KEY)
        .await
        .map_err(|e| e.0)?
        .unwrap_or_default();
    if preferences.notify && !notices.is_empty() {
        WINDOW.set(chrome::last_focused_window().await.ok().flatten());
        for notice in notices {
            chrome::notify(&notice.id, &notice.title, &notice.message).await.map_err(|e| e.0)?;
        }
    }
    Ok(())
}

/// Sets the badge (one total) and the tooltip (both numbers).
pub async fn set(questions: usize, checks: usize) -> Result<(), String> {
    let (text, title) = verify::badge(questions, checks);
    chrome::set_badge(&text).await.map_err(|e| e.0)?;
    chrome::set_action_title(&title).await.map_err(|e| e.0)
}

/// `chrome.notifications.onClicked`: opens the side panel on the item (on the queue for
/// the summary). `sidePanel.open` needs the click's gesture, which lasts only while the
/// listener runs, so `static/worker.js` calls this at once when the module is ready and
/// the panel is opened before anything is awaited. When that cannot be (the worker was
/// stopped since, or the window is gone), the panel opens in a tab instead; either way
/// it finds the item under `notify::OPEN_ITEM_KEY`.
#[wasm_bindgen]
pub fn on_notification_clicked(id: String) {
    if !notify::is_ours(&id) {
        return;
    }
    let opening = WINDOW.get().map(chrome::open_side_panel);
    wasm_bindgen_futures::spawn_local(async move {
        if let Some(item) = notify::item_of(&id)
            && let Err(error) = chrome::session_set(notify::OPEN_ITEM_KEY, item).await
        {
            web_sys::console::error_1(&format!("Redline: {error}").into());
        }
        let _ = chrome::clear_notification(&id).await;
        let opened = match opening {
            Some(opening) => opening.await.is_ok(),
            None => false,
        };
        if !opened && let Err(error) = chrome::open_tab(&chrome::extension_url("panel.html")).await {
            web_sys::console::error_1(&format!("Redline: {error}").into());
        }
    });
}

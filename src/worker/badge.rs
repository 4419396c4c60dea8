//! The toolbar badge: how many items wait for the person: questions to answer and fixes
//! to check on the stage, as one total (the tooltip names both, `verify::badge`). The panel keeps it
//! fresh while it is open (it re-reads on every event); the worker polls on its own
//! `chrome.alarms` alarm so the count stays right while the panel is closed.

use redline_protocol::ChangeStatus;
use redline_protocol::rpc::{GetSession, GetSessionInput, ListChanges, ListChangesInput};
use wasm_bindgen::prelude::*;

use crate::api::Client;
use crate::chrome::{self, Alarm};
use crate::queue;
use crate::settings::{self, Settings};
use crate::verify;

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

/// Counts the questions for the signed-in person and sets the badge. Without settings
/// the badge is cleared; on a failure it is left as it was (the next poll tries again).
pub async fn refresh() -> Result<u32, String> {
    let settings = chrome::storage_get::<Settings>(settings::STORAGE_KEY).await.map_err(|e| e.0)?;
    let Some(settings) = settings.filter(Settings::is_complete) else {
        set(0, 0).await?;
        return Ok(0);
    };
    let client = Client::new(&settings);
    let session = client.call::<GetSession>(GetSessionInput {}).await.map_err(|e| e.to_string())?;
    let (mut questions, mut checks) = (0, 0);
    for project in &session.projects {
        let input = ListChangesInput {
            project_id: project.project_id.clone(),
            status: Some(vec![ChangeStatus::NeedsAnswer, ChangeStatus::Done]),
            include_done: true,
            limit: Some(redline_protocol::LIST_LIMIT_MAX),
            ..ListChangesInput::default()
        };
        let list = client.call::<ListChanges>(input).await.map_err(|e| e.to_string())?;
        questions += list.changes.iter().filter(|c| queue::needs_my_answer(c, &session.name)).count();
        checks += list.changes.iter().filter(|c| verify::waits_for_my_check(c, &session.name)).count();
    }
    set(questions, checks).await?;
    Ok((questions + checks) as u32)
}

/// Sets the badge (one total) and the tooltip (both numbers).
pub async fn set(questions: usize, checks: usize) -> Result<(), String> {
    let (text, title) = verify::badge(questions, checks);
    chrome::set_badge(&text).await.map_err(|e| e.0)?;
    chrome::set_action_title(&title).await.map_err(|e| e.0)
}

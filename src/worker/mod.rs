//! The background service worker's Rust side. `static/worker.js` registers the listeners
//! synchronously (Chrome requires it) and calls these exports once the module is ready.

use serde::Serialize;
use wasm_bindgen::prelude::*;

use crate::chrome::{self, ChromeError, Tab};
use crate::messages::{CONTENT_SCRIPT_FILE, START_CIRCLE_COMMAND, WorkerReply, WorkerRequest};

/// `chrome.runtime.onMessage`: answers a [`WorkerRequest`] with a [`WorkerReply`].
#[wasm_bindgen]
pub async fn on_message(message: JsValue, _sender: JsValue) -> Result<JsValue, JsValue> {
    let reply = match serde_wasm_bindgen::from_value::<WorkerRequest>(message) {
        Ok(request) => handle(request).await,
        Err(error) => WorkerReply::Error { message: format!("not a Redline message: {error}") },
    };
    Ok(reply.serialize(&serde_wasm_bindgen::Serializer::json_compatible())?)
}

async fn handle(request: WorkerRequest) -> WorkerReply {
    match request {
        WorkerRequest::Ping => WorkerReply::Pong { version: env!("CARGO_PKG_VERSION").to_owned() },
        WorkerRequest::StartCircle => match chrome::active_tab().await {
            Ok(Some(tab)) => match start_circle(&tab).await {
                Ok(()) => WorkerReply::CircleStarted,
                Err(error) => WorkerReply::Error { message: error.to_string() },
            },
            Ok(None) => WorkerReply::Error { message: "There is no active tab to circle on.".into() },
            Err(error) => WorkerReply::Error { message: error.to_string() },
        },
    }
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

//! The messages the extension's contexts send each other. Pure serde types: the worker,
//! panel, overlay and content script all agree on them through this one module.

use serde::{Deserialize, Serialize};

/// A request to the background worker (`chrome.runtime.sendMessage`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum WorkerRequest {
    /// Is the worker alive, and which build is it?
    Ping,
    /// Start circling in the active tab (the panel's "Circle" button).
    StartCircle,
}

/// The worker's answer to a [`WorkerRequest`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "camelCase")]
pub enum WorkerReply {
    Pong { version: String },
    CircleStarted,
    Error { message: String },
}

/// What the overlay iframe tells the content script in the page (`window.postMessage`).
/// The content script accepts these only from its own iframe and the extension's origin.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type")]
pub enum OverlayEvent {
    /// The overlay's app is mounted and taking input.
    #[serde(rename = "redline:ready")]
    Ready,
    /// The person cancelled (Esc) or finished; remove the overlay.
    #[serde(rename = "redline:close")]
    Close,
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
    fn overlay_events_are_namespaced() {
        assert_eq!(serde_json::to_value(OverlayEvent::Close).unwrap(), json!({"type": "redline:close"}));
        assert!(serde_json::from_value::<OverlayEvent>(json!({"type": "close"})).is_err());
    }
}

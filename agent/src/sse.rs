//! The task that follows a project's change events (parsed by the protocol crate's
//! [`SseParser`]), waking `next` when something that may be work happens.

use std::sync::Arc;
use std::time::Duration;

use redline_protocol::sse::{SseEvent, SseParser};
use redline_protocol::{ChangeEvent, ChangeEventType, EVENT_RESET};
use tokio::sync::{Notify, watch};

use super::client::Api;
use super::rules::backoff;

/// Whether a change event may mean new work for `next`: an item filed, released,
/// answered, edited, reopened, verified (a `still_wrong` verdict sends it back) or
/// regressed (`redline guard` sends it back).
/// Claims, questions, replies, shots and completions do not make work.
pub fn wakes(event_type: ChangeEventType) -> bool {
    use ChangeEventType::*;
    matches!(event_type, Filed | Updated | Released | Answered | Status | Verified | Regressed)
}

/// Whether one stream event should wake `next`.
pub fn event_wakes(e: &SseEvent) -> bool {
    if e.event == EVENT_RESET {
        return true;
    }
    match serde_json::from_str::<ChangeEvent>(&e.data) {
        Ok(change) => wakes(change.event_type),
        // Not ours to judge: re-reading the list is always safe.
        Err(_) => true,
    }
}

/// How the stream is doing, for `next` to decide whether to poll.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StreamState {
    /// Not connected yet, or reconnecting after a failure.
    Down,
    /// Connected: events arrive as they happen.
    Up,
    /// The server has no stream for us (401/403/404/405/501): poll instead.
    Unavailable,
}

/// What to do after the stream answered `status`: the statuses that mean "no stream
/// here" make the client poll; anything else is retried with backoff.
pub fn unavailable_status(status: u16) -> bool {
    matches!(status, 401 | 403 | 404 | 405 | 501)
}

/// Silence longer than this means the connection is dead (the server pings idle
/// streams every 15 s).
const IDLE_LIMIT: Duration = Duration::from_secs(45);

/// Follows `project_id`'s change events until the stream is unavailable, waking `wake`
/// for events that may be work (and after every connection that could not resume, as
/// events may have been missed), and reporting its state on `state`.
pub async fn follow(
    api: Api,
    project_id: String,
    claimed_by: Option<String>,
    wake: Arc<Notify>,
    state: watch::Sender<StreamState>,
) {
    let mut last_event_id: Option<String> = None;
    let mut failures = 0u32;
    loop {
        match api.events(&project_id, claimed_by.as_deref(), last_event_id.as_deref()).await {
            Ok(mut res) if res.status().as_u16() == 200 => {
                tracing::debug!(resumed = last_event_id.is_some(), "event stream connected");
                let _ = state.send(StreamState::Up);
                if last_event_id.is_none() {
                    // Whatever happened before this connection is not replayed.
                    wake.notify_one();
                }
                let mut parser = SseParser::resuming(last_event_id.clone());
                loop {
                    match tokio::time::timeout(IDLE_LIMIT, res.chunk()).await {
                        Ok(Ok(Some(bytes))) => {
                            failures = 0;
                            for item in parser.feed(&bytes) {
                                if event_wakes(&item) {
                                    tracing::debug!(?item, "event wakes next");
                                    wake.notify_one();
                                }
                            }
                            last_event_id = parser.last_event_id().map(str::to_owned);
                        }
                        Ok(Ok(None)) => break,
                        Ok(Err(e)) => {
                            tracing::debug!(error = %e, "event stream failed");
                            break;
                        }
                        Err(_) => {
                            tracing::debug!("event stream idle too long");
                            break;
                        }
                    }
                }
            }
            Ok(res) if unavailable_status(res.status().as_u16()) => {
                tracing::debug!(status = res.status().as_u16(), "no event stream; polling");
                let _ = state.send(StreamState::Unavailable);
                return;
            }
            Ok(res) => tracing::debug!(status = res.status().as_u16(), "event stream refused"),
            Err(e) => tracing::debug!(error = %e, "event stream unreachable"),
        }
        let _ = state.send(StreamState::Down);
        let delay = backoff(failures);
        failures = failures.saturating_add(1);
        tracing::debug!(?delay, "event stream reconnecting");
        tokio::time::sleep(delay).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(event: &str, data: &str, id: Option<&str>) -> SseEvent {
        SseEvent { event: event.into(), data: data.into(), id: id.map(Into::into) }
    }

    #[test]
    fn which_events_wake_next() {
        let data = |t: &str| format!(r#"{{"type":"{t}","changeId":"c","shortId":"1","seq":3}}"#);
        for t in ["filed", "released", "answered", "status", "updated", "verified"] {
            assert!(event_wakes(&event("message", &data(t), Some("3"))), "{t}");
        }
        for t in ["claimed", "asked", "replied", "shot", "done"] {
            assert!(!event_wakes(&event("message", &data(t), Some("3"))), "{t}");
        }
        assert!(event_wakes(&event("reset", "{\"seq\":9}", Some("9"))));
    }

    #[test]
    fn unavailable_streams_fall_back_to_polling() {
        for s in [401, 403, 404, 405, 501] {
            assert!(unavailable_status(s), "{s}");
        }
        for s in [400, 408, 429, 500, 502, 503] {
            assert!(!unavailable_status(s), "{s}");
        }
    }
}

//! Server-sent events: a small pure parser (the WHATWG event-stream format, enough of
//! it for the protocol's change events) and the task that follows a project's stream,
//! waking `next` when something that may be work happens.

use std::sync::Arc;
use std::time::Duration;

use redline_protocol::{ChangeEvent, ChangeEventType, EVENT_RESET};
use tokio::sync::{Notify, watch};

use super::client::Api;
use super::rules::backoff;

/// One thing read from a stream.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SseItem {
    /// A `:` comment line (`: connected`, `: ping`), without the colon and one space.
    Comment(String),
    /// A dispatched event. `event` is `message` when the stream named none.
    Event { event: String, data: String, id: Option<String> },
}

/// Parses an event stream fed in chunks of any size.
#[derive(Debug, Default)]
pub struct SseParser {
    buf: Vec<u8>,
    event: String,
    data: Vec<String>,
    id: Option<String>,
    /// The last event id seen (the stream's `Last-Event-ID`).
    pub last_event_id: Option<String>,
}

impl SseParser {
    /// Feeds bytes; returns the items they complete.
    pub fn push(&mut self, chunk: &[u8]) -> Vec<SseItem> {
        self.buf.extend_from_slice(chunk);
        let mut items = Vec::new();
        let mut start = 0;
        let mut i = 0;
        while i < self.buf.len() {
            match self.buf[i] {
                b'\n' => {
                    let line = String::from_utf8_lossy(&self.buf[start..i]).into_owned();
                    self.line(&line, &mut items);
                    i += 1;
                    start = i;
                }
                b'\r' => {
                    // `\r\n` is one line ending; wait for the next byte to know.
                    if i + 1 == self.buf.len() {
                        break;
                    }
                    let line = String::from_utf8_lossy(&self.buf[start..i]).into_owned();
                    self.line(&line, &mut items);
                    i += if self.buf[i + 1] == b'\n' { 2 } else { 1 };
                    start = i;
                }
                _ => i += 1,
            }
        }
        self.buf.drain(..start);
        items
    }

    fn line(&mut self, line: &str, items: &mut Vec<SseItem>) {
        if line.is_empty() {
            if !self.data.is_empty() {
                let event = if self.event.is_empty() { "message".to_owned() } else { self.event.clone() };
                items.push(SseItem::Event { event, data: self.data.join("\n"), id: self.id.clone() });
            }
            self.event.clear();
            self.data.clear();
            self.id = None;
            return;
        }
        if let Some(comment) = line.strip_prefix(':') {
            items.push(SseItem::Comment(comment.strip_prefix(' ').unwrap_or(comment).to_owned()));
            return;
        }
        let (field, value) = match line.split_once(':') {
            Some((f, v)) => (f, v.strip_prefix(' ').unwrap_or(v)),
            None => (line, ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => self.data.push(value.to_owned()),
            "id" if !value.contains('\0') => {
                self.id = Some(value.to_owned());
                self.last_event_id = Some(value.to_owned());
            }
            _ => {} // `retry` and unknown fields: ignored
        }
    }
}

/// Whether a change event may mean new work for `next`: an item filed, released,
/// answered, edited or reopened. Claims, questions, replies, shots and completions do
/// not make work.
pub fn wakes(event_type: ChangeEventType) -> bool {
    use ChangeEventType::*;
    matches!(event_type, Filed | Updated | Released | Answered | Status)
}

/// Whether one stream item should wake `next`.
pub fn item_wakes(item: &SseItem) -> bool {
    match item {
        SseItem::Comment(_) => false,
        SseItem::Event { event, .. } if event == EVENT_RESET => true,
        SseItem::Event { data, .. } => match serde_json::from_str::<ChangeEvent>(data) {
            Ok(e) => wakes(e.event_type),
            // Not ours to judge: re-reading the list is always safe.
            Err(_) => true,
        },
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
pub async fn follow(api: Api, project_id: String, wake: Arc<Notify>, state: watch::Sender<StreamState>) {
    let mut last_event_id: Option<String> = None;
    let mut failures = 0u32;
    loop {
        match api.events(&project_id, last_event_id.as_deref()).await {
            Ok(mut res) if res.status().as_u16() == 200 => {
                tracing::debug!(resumed = last_event_id.is_some(), "event stream connected");
                let _ = state.send(StreamState::Up);
                if last_event_id.is_none() {
                    // Whatever happened before this connection is not replayed.
                    wake.notify_one();
                }
                let mut parser = SseParser { last_event_id: last_event_id.clone(), ..Default::default() };
                loop {
                    match tokio::time::timeout(IDLE_LIMIT, res.chunk()).await {
                        Ok(Ok(Some(bytes))) => {
                            failures = 0;
                            for item in parser.push(&bytes) {
                                if item_wakes(&item) {
                                    tracing::debug!(?item, "event wakes next");
                                    wake.notify_one();
                                }
                            }
                            last_event_id.clone_from(&parser.last_event_id);
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

    fn event(event: &str, data: &str, id: Option<&str>) -> SseItem {
        SseItem::Event { event: event.into(), data: data.into(), id: id.map(Into::into) }
    }

    #[test]
    fn parses_comments_events_and_ids() {
        let mut p = SseParser::default();
        let items = p.push(b": connected\n\nid: 4\ndata: {\"a\":1}\n\n: ping\n\n");
        assert_eq!(
            items,
            [
                SseItem::Comment("connected".into()),
                event("message", "{\"a\":1}", Some("4")),
                SseItem::Comment("ping".into())
            ]
        );
        assert_eq!(p.last_event_id.as_deref(), Some("4"));
        let items = p.push(b"event: reset\nid: 9\ndata: {\"seq\":9}\n\n");
        assert_eq!(items, [event("reset", "{\"seq\":9}", Some("9"))]);
    }

    #[test]
    fn handles_any_chunking_and_line_endings() {
        let stream = b": connected\r\n\r\nid: 1\r\ndata: one\r\ndata: two\r\n\r\nid:2\rdata:x\r\r\n";
        let whole = SseParser::default().push(stream);
        assert_eq!(whole.len(), 3);
        assert_eq!(whole[1], event("message", "one\ntwo", Some("1")));
        assert_eq!(whole[2], event("message", "x", Some("2")));
        // Byte by byte gives the same items (a `\r` at a chunk's end waits for the next
        // byte, which may be the `\n` of a `\r\n`).
        let mut p = SseParser::default();
        let bytewise: Vec<SseItem> = stream.iter().flat_map(|b| p.push(&[*b])).collect();
        assert_eq!(bytewise, whole);
        // A multi-byte character split across chunks survives.
        let mut p = SseParser::default();
        let text = "data: café\n\n".as_bytes();
        let mut items = p.push(&text[..9]);
        items.extend(p.push(&text[9..]));
        assert_eq!(items, [event("message", "café", None)]);
    }

    #[test]
    fn ignores_empty_events_and_unknown_fields() {
        let mut p = SseParser::default();
        assert_eq!(p.push(b"retry: 1000\nfoo: bar\n\nevent: x\n\n"), []);
        assert_eq!(p.push(b"data\n\n"), [event("message", "", None)]);
    }

    #[test]
    fn which_events_wake_next() {
        let data = |t: &str| format!(r#"{{"type":"{t}","changeId":"c","shortId":"1","seq":3}}"#);
        for t in ["filed", "released", "answered", "status", "updated"] {
            assert!(item_wakes(&event("message", &data(t), Some("3"))), "{t}");
        }
        for t in ["claimed", "asked", "replied", "shot", "done"] {
            assert!(!item_wakes(&event("message", &data(t), Some("3"))), "{t}");
        }
        assert!(item_wakes(&event("reset", "{\"seq\":9}", Some("9"))));
        assert!(!item_wakes(&SseItem::Comment("ping".into())));
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

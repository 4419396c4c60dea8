//! A server-sent events parser for a body read in chunks, for both clients: the panel
//! streams a `fetch` body itself (`EventSource` cannot send an `Authorization` header)
//! and the agent reads a streamed HTTP response. Pure; follows the HTML standard's parsing rules (lines end in LF, CRLF
//! or CR; `:` starts a comment; an empty line dispatches; `id` persists).

/// One dispatched event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SseEvent {
    /// `event:`, or `message` when none was given.
    pub event: String,
    /// The `data:` lines joined with `\n`.
    pub data: String,
    /// The last event id in force when this event was dispatched.
    pub id: Option<String>,
}

#[derive(Debug, Default)]
pub struct SseParser {
    pending: Vec<u8>,
    /// A CR ended the last chunk: an LF starting the next one belongs to it.
    after_cr: bool,
    event: String,
    data: String,
    has_data: bool,
    last_event_id: Option<String>,
    retry_ms: Option<u32>,
    started: bool,
}

impl SseParser {
    pub fn new() -> SseParser {
        SseParser::default()
    }

    /// Continues after a reconnect that sent `Last-Event-ID: id`.
    pub fn resuming(id: Option<String>) -> SseParser {
        SseParser { last_event_id: id, ..SseParser::default() }
    }

    /// The id to send as `Last-Event-ID` on reconnect.
    pub fn last_event_id(&self) -> Option<&str> {
        self.last_event_id.as_deref()
    }

    /// The server's `retry:` advice, in ms.
    pub fn retry_ms(&self) -> Option<u32> {
        self.retry_ms
    }

    /// Feeds the next bytes of the body; returns the events they completed.
    pub fn feed(&mut self, chunk: &[u8]) -> Vec<SseEvent> {
        let mut events = Vec::new();
        let mut bytes = chunk;
        if self.after_cr {
            self.after_cr = false;
            if bytes.first() == Some(&b'\n') {
                bytes = &bytes[1..];
            }
        }
        let mut start = 0;
        let mut i = 0;
        while i < bytes.len() {
            let b = bytes[i];
            if b == b'\n' || b == b'\r' {
                self.pending.extend_from_slice(&bytes[start..i]);
                let line = std::mem::take(&mut self.pending);
                if let Some(event) = self.line(&line) {
                    events.push(event);
                }
                if b == b'\r' {
                    if i + 1 < bytes.len() {
                        if bytes[i + 1] == b'\n' {
                            i += 1;
                        }
                    } else {
                        self.after_cr = true;
                    }
                }
                start = i + 1;
            }
            i += 1;
        }
        self.pending.extend_from_slice(&bytes[start..]);
        events
    }

    fn line(&mut self, raw: &[u8]) -> Option<SseEvent> {
        let mut line = String::from_utf8_lossy(raw).into_owned();
        if !self.started {
            self.started = true;
            if let Some(rest) = line.strip_prefix('\u{feff}') {
                line = rest.to_owned();
            }
        }
        if line.is_empty() {
            return self.dispatch();
        }
        if line.starts_with(':') {
            return None;
        }
        let (field, value) = match line.split_once(':') {
            Some((field, value)) => (field, value.strip_prefix(' ').unwrap_or(value)),
            None => (line.as_str(), ""),
        };
        match field {
            "event" => self.event = value.to_owned(),
            "data" => {
                if self.has_data {
                    self.data.push('\n');
                }
                self.data.push_str(value);
                self.has_data = true;
            }
            "id" if !value.contains('\0') => {
                self.last_event_id = Some(value.to_owned()).filter(|v| !v.is_empty())
            }
            "retry" => {
                if let Ok(ms) = value.parse() {
                    self.retry_ms = Some(ms);
                }
            }
            _ => {}
        }
        None
    }

    fn dispatch(&mut self) -> Option<SseEvent> {
        let event = std::mem::take(&mut self.event);
        let data = std::mem::take(&mut self.data);
        if !std::mem::take(&mut self.has_data) {
            return None;
        }
        let event = if event.is_empty() { "message".to_owned() } else { event };
        Some(SseEvent { event, data, id: self.last_event_id.clone() })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_servers_stream() {
        let mut parser = SseParser::new();
        let body = ": connected\n\nid: 4\ndata: {\"type\":\"filed\",\"seq\":4}\n\n: ping\n\nid: 5\ndata: {\"type\":\"asked\"}\n\n";
        let events = parser.feed(body.as_bytes());
        assert_eq!(
            events,
            vec![
                SseEvent {
                    event: "message".into(),
                    data: "{\"type\":\"filed\",\"seq\":4}".into(),
                    id: Some("4".into())
                },
                SseEvent {
                    event: "message".into(),
                    data: "{\"type\":\"asked\"}".into(),
                    id: Some("5".into())
                },
            ]
        );
        assert_eq!(parser.last_event_id(), Some("5"));
    }

    #[test]
    fn chunks_may_split_anywhere_including_utf8_and_crlf() {
        let body = "event: reset\r\ndata: caf\u{e9}\r\ndata: two\r\n\r\nid: 9\rdata: x\r\r";
        let bytes = body.as_bytes();
        for split in 0..bytes.len() {
            let mut parser = SseParser::new();
            let mut events = parser.feed(&bytes[..split]);
            events.extend(parser.feed(&bytes[split..]));
            assert_eq!(events.len(), 2, "split at {split}");
            assert_eq!(
                events[0],
                SseEvent { event: "reset".into(), data: "caf\u{e9}\ntwo".into(), id: None }
            );
            assert_eq!(events[1].id.as_deref(), Some("9"));
            assert_eq!(events[1].event, "message");
        }
    }

    #[test]
    fn one_byte_at_a_time() {
        let body = "\u{feff}data:a\n\ndata\n\nretry: 2500\nid: 3\n: no data here\n\n";
        let mut parser = SseParser::resuming(Some("1".into()));
        let events: Vec<SseEvent> = body.as_bytes().iter().flat_map(|b| parser.feed(&[*b])).collect();
        assert_eq!(events.len(), 2);
        assert_eq!(events[0].data, "a");
        assert_eq!(events[0].id.as_deref(), Some("1"));
        assert_eq!(events[1].data, "", "a bare `data` field is an empty data line");
        assert_eq!(parser.retry_ms(), Some(2500));
        assert_eq!(parser.last_event_id(), Some("3"), "id persists without an event");
    }
}

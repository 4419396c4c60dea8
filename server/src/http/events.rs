//! Change events: `GET /events/changes:{projectId}` as server-sent events, read from
//! the event log (`crate::store::event_log`).
//!
//! A connection reads the log after the last id it sent, and waits on the project's
//! feed (a `watch` of its latest sequence, [`crate::store::event_log::EventHub::notify`]d) for more. A reconnect
//! with `Last-Event-ID` replays what was missed, or gets `event: reset` when that is
//! older than what is kept (or from another database).
//!
//! A new event is read from the store once per project, not once per stream: each
//! project's [`Feed`] keeps its latest events, read by whichever stream wakes first
//! while the others wait for that read, and every stream takes its events from there.
//! Only a stream further behind than the feed keeps (a replay) reads for itself.
//!
//! A token holds at most `max_streams_per_token` streams at once (429 beyond), and its
//! streams end when it is revoked or expires: one task per token with open streams
//! re-checks it every [`TOKEN_RECHECK`] through `auth`'s reused checks, so a revocation
//! by another process ends them at most [`crate::auth::CHECK_REUSE_MS`] (plus that
//! interval) later, an expiry within that interval.

use std::collections::{HashMap, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use axum::response::sse::{Event, KeepAlive, Sse};
use redline_protocol::bounded::within_chars;
use redline_protocol::{EVENT_RESET, NAME_MAX_CHARS, Scope};
use sqlx::Row;
use tokio::sync::watch;

use crate::AppState;
use crate::auth::{Principal, token_hash};
use crate::error::ApiError;
use crate::ops::presence::Waiting;
use crate::store::event_log::{Feed, read_events};

/// How often a token with open streams is checked again (each check reuses the last
/// read of the token for up to [`crate::auth::CHECK_REUSE_MS`]).
pub const TOKEN_RECHECK: Duration = Duration::from_millis(250);

/// How many of a project's latest events its feed keeps for its streams.
const FEED_KEPT: usize = 200;

/// The most events one read takes.
const READ_LIMIT: i64 = 200;

/// How many event streams a token may hold open at once by default.
pub const MAX_STREAMS_PER_TOKEN: usize = 20;

/// Who holds the open event streams, by token.
#[derive(Debug, Default)]
pub struct Streams {
    /// Open streams by token id.
    tokens: Mutex<HashMap<String, TokenStreams>>,
    /// Numbers the entries of `tokens`, so a stream ends only its own token's entry.
    generations: AtomicU64,
}

/// A token's open streams.
#[derive(Debug)]
struct TokenStreams {
    open: usize,
    generation: u64,
    /// Becomes true when the token is refused (revoked, expired): its streams end.
    refused: watch::Sender<bool>,
}

impl Streams {
    /// How many event streams are open.
    pub fn open_streams(&self) -> usize {
        self.tokens.lock().expect("event streams lock").values().map(|t| t.open).sum()
    }

    /// Takes one of `who`'s `max` stream slots, or answers 429. The first stream of a
    /// token starts the task that ends them all when the token is refused.
    fn open_stream(
        self: &Arc<Self>,
        state: &AppState,
        who: &Principal,
        hash: String,
        max: usize,
    ) -> Result<StreamSlot, ApiError> {
        let mut tokens = self.tokens.lock().expect("event streams lock");
        let entry = match tokens.get_mut(&who.token_id) {
            Some(entry) => entry,
            None => {
                let generation = self.generations.fetch_add(1, Ordering::Relaxed);
                spawn_token_watch(
                    state.clone(),
                    Arc::downgrade(self),
                    who.token_id.clone(),
                    generation,
                    hash,
                );
                let refused = watch::channel(false).0;
                tokens.entry(who.token_id.clone()).or_insert(TokenStreams { open: 0, generation, refused })
            }
        };
        if entry.open >= max {
            // The watch task ends by itself if this left the entry empty.
            return Err(ApiError::rate_limited(STREAM_RETRY_SECS));
        }
        entry.open += 1;
        Ok(StreamSlot {
            streams: self.clone(),
            token_id: who.token_id.clone(),
            generation: entry.generation,
            refused: entry.refused.subscribe(),
        })
    }

    /// Whether `token_id`'s entry of `generation` has no open stream (or is gone).
    fn unused(&self, token_id: &str, generation: u64) -> bool {
        let tokens = self.tokens.lock().expect("event streams lock");
        tokens.get(token_id).is_none_or(|t| t.generation != generation || t.open == 0)
    }

    /// Ends the streams of `token_id`'s entry of `generation` (the token was refused).
    fn refuse(&self, token_id: &str, generation: u64) {
        let mut tokens = self.tokens.lock().expect("event streams lock");
        if tokens.get(token_id).is_some_and(|t| t.generation == generation)
            && let Some(entry) = tokens.remove(token_id)
        {
            entry.refused.send_replace(true);
        }
    }
}

/// What a client over its streams is told to wait, in seconds.
const STREAM_RETRY_SECS: u64 = 5;

/// One open stream's slot among its token's; given back when the stream ends.
struct StreamSlot {
    streams: Arc<Streams>,
    token_id: String,
    generation: u64,
    refused: watch::Receiver<bool>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut tokens = self.streams.tokens.lock().expect("event streams lock");
        if let Some(entry) = tokens.get_mut(&self.token_id)
            && entry.generation == self.generation
        {
            entry.open -= 1;
            if entry.open == 0 {
                tokens.remove(&self.token_id);
            }
        }
    }
}

/// While `token_id` has open streams, checks its token every [`TOKEN_RECHECK`]; once
/// the token is refused (revoked, expired, gone), ends them.
fn spawn_token_watch(
    state: AppState,
    streams: Weak<Streams>,
    token_id: String,
    generation: u64,
    hash: String,
) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(TOKEN_RECHECK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        let stopping = state.services.events.stopping();
        loop {
            tick.tick().await;
            let Some(streams) = streams.upgrade() else { return };
            if streams.unused(&token_id, generation) || *stopping.borrow() {
                return;
            }
            match state
                .tokens
                .check_hash(&state.services.store, hash.clone(), state.services.clock.now())
                .await
            {
                Ok(_) => {}
                Err(e) if e.status() == 401 => {
                    streams.refuse(&token_id, generation);
                    return;
                }
                // The store failed to answer: try again at the next tick.
                Err(_) => {}
            }
        }
    });
}

/// `GET /events/{stream}` where the stream is `changes:{projectId}`.
/// The event stream's query: **(ours)** `claimedBy`, the agent whose wait this is (its
/// presence, [`crate::ops::presence`]).
#[derive(Debug, Default, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StreamQuery {
    claimed_by: Option<String>,
}

pub async fn handle(
    State(state): State<AppState>,
    Path(stream): Path<String>,
    Query(query): Query<StreamQuery>,
    client: crate::limit::ClientAddr,
    headers: HeaderMap,
) -> Result<impl IntoResponse, ApiError> {
    let project_id =
        stream.strip_prefix("changes:").ok_or_else(|| ApiError::not_found("unknown event stream"))?;
    let who = state.authenticate(&headers, client).await?;
    state.limiter.check(&who.token_id, state.rate_limit, state.services.clock.now())?;
    who.require(Scope::Read)?;
    who.require_project(project_id)?;
    let agent = query.claimed_by.map(|name| name.trim().to_owned()).filter(|name| !name.is_empty());
    if agent.as_ref().is_some_and(|name| !within_chars(name, NAME_MAX_CHARS) || name.contains('\0')) {
        return Err(ApiError::bad_input(
            "claimedBy",
            format!("at most {NAME_MAX_CHARS} characters, no U+0000"),
        ));
    }
    let slot = state.streams.open_stream(&state, &who, token_hash(&headers)?, state.max_streams_per_token)?;
    let waiting = match agent {
        Some(name) => Some(Waiting::start(&state.services, &who, &name).await?),
        None => None,
    };
    let (current, oldest): (i64, Option<i64>) = {
        let row = sqlx::query(
            "SELECT p.last_event_seq, (SELECT MIN(seq) FROM events e WHERE e.project_id = p.project_id) AS oldest \
             FROM projects p WHERE p.project_id = $1",
        )
        .bind(project_id)
        .fetch_one(state.services.store.pool())
        .await?;
        (row.try_get("last_event_seq")?, row.try_get("oldest")?)
    };
    let last_event_id = headers.get("last-event-id").map(|v| v.to_str().unwrap_or("").trim().parse::<i64>());
    let mut first = VecDeque::from([Event::default().comment("connected")]);
    let after = match last_event_id {
        None => current,
        // Everything after `last` is still kept (or nothing happened since).
        Some(Ok(last)) if last >= 0 && last <= current && last + 1 >= oldest.unwrap_or(current + 1) => last,
        Some(_) => {
            first.push_back(
                Event::default()
                    .event(EVENT_RESET)
                    .id(current.to_string())
                    .data(serde_json::json!({ "seq": current }).to_string()),
            );
            current
        }
    };
    let feed = state.services.events.feed(project_id);
    let rx = feed.latest.subscribe();
    let stopping = state.services.events.stopping();
    let cursor = Cursor {
        state: state.clone(),
        project_id: project_id.to_owned(),
        after,
        pending: first,
        feed,
        rx,
        stopping,
        _open: state.metrics.stream_opened(),
        slot,
        _waiting: waiting,
    };
    let keep_alive = KeepAlive::new().interval(state.keep_alive).text("ping");
    let stream = Sse::new(futures_util::stream::unfold(cursor, Cursor::next)).keep_alive(keep_alive);
    // `no-store`, not axum's `no-cache`: Firefox keeps an open stream in its HTTP cache
    // and holds a second request of the same URL (a sidebar beside a panel tab) about
    // 20 s behind that entry.
    Ok(([(header::CACHE_CONTROL, "no-store")], stream))
}

struct Cursor {
    state: AppState,
    project_id: String,
    /// The last event sent (or skipped: the stream starts at the present).
    after: i64,
    pending: VecDeque<Event>,
    feed: Arc<Feed>,
    rx: watch::Receiver<i64>,
    stopping: watch::Receiver<bool>,
    /// Counted in `/metrics` while the stream is open.
    _open: crate::http::metrics::OpenStream,
    slot: StreamSlot,
    /// The agent waiting on this stream, marked waiting while it is open.
    _waiting: Option<Waiting>,
}

impl Cursor {
    async fn next(mut self) -> Option<(Result<Event, Infallible>, Cursor)> {
        loop {
            if *self.slot.refused.borrow() {
                return None;
            }
            if let Some(event) = self.pending.pop_front() {
                return Some((Ok(event), self));
            }
            // Mark the current notification seen before reading, so a write that
            // commits after the read wakes us again.
            let latest = *self.rx.borrow_and_update();
            match self.read(latest).await {
                Ok(()) if !self.pending.is_empty() => {}
                Ok(()) => {
                    tokio::select! {
                        changed = self.rx.changed() => changed.ok()?,
                        _ = self.stopping.wait_for(|stop| *stop) => return None,
                        _ = self.slot.refused.wait_for(|refused| *refused) => return None,
                    }
                }
                Err(e) => {
                    tracing::error!(error = %e, "reading change events");
                    return None;
                }
            }
        }
    }

    /// Queues the events after `self.after` that are known, from the feed (reading
    /// the new ones into it first if no other stream has, `latest` being the last
    /// committed), or, when the stream is behind what the feed keeps, from the store.
    async fn read(&mut self, latest: i64) -> Result<(), sqlx::Error> {
        let mut kept = self.feed.kept.lock().await;
        let (base, last) = match kept.span {
            // Ahead of the feed (or the first stream): nothing it keeps is of use to
            // this stream, whose next events start the feed afresh.
            Some((_, last)) if self.after <= last => kept.span.expect("matched"),
            _ => {
                kept.events.clear();
                kept.span = Some((self.after, self.after));
                (self.after, self.after)
            }
        };
        if self.after < base {
            drop(kept);
            return self.replay(base).await;
        }
        if self.after == last && latest > last {
            self.state.services.events.feed_read();
            let events = read_events(&self.state.services.store, &self.project_id, last, READ_LIMIT).await?;
            let new_last = match events.last() {
                Some((seq, _)) => *seq,
                // Pruned before anyone read them: nothing to send up to `latest`.
                None => latest,
            };
            kept.events.extend(events);
            let mut base = base;
            while kept.events.len() > FEED_KEPT {
                base = kept.events.pop_front().expect("not empty").0;
            }
            kept.span = Some((base, new_last));
        }
        let from = kept.events.partition_point(|(seq, _)| *seq <= self.after);
        for (seq, json) in kept.events.range(from..) {
            self.pending.push_back(Event::default().id(seq.to_string()).data(&**json));
            self.after = *seq;
        }
        if let Some((_, last)) = kept.span {
            self.after = self.after.max(last);
        }
        Ok(())
    }

    /// Reads this stream's events after `self.after` from the store, up to the feed's
    /// `base`: a stream that reconnected further back than the feed keeps.
    async fn replay(&mut self, base: i64) -> Result<(), sqlx::Error> {
        let events =
            read_events(&self.state.services.store, &self.project_id, self.after, READ_LIMIT).await?;
        for (seq, json) in events.into_iter().take_while(|(seq, _)| *seq <= base) {
            self.pending.push_back(Event::default().id(seq.to_string()).data(&*json));
            self.after = seq;
        }
        if self.pending.is_empty() {
            // Pruned meanwhile: carry on from what the feed keeps.
            self.after = base;
        }
        Ok(())
    }
}

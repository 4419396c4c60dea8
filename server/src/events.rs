//! Change events: `GET /events/changes:{projectId}` as server-sent events.
//!
//! Events are rows of the `events` table, numbered per project in the same transaction
//! as the write they describe, so the stream can always be rebuilt from the store: a
//! connection reads rows after the last id it sent, and waits on an in-process
//! notification (a `watch` of the project's latest sequence) for more. A reconnect
//! with `Last-Event-ID` replays what was missed, or gets `event: reset` when that is
//! older than what is kept (or from another database).
//!
//! Writes made by another process (`redline stage deploy`, a second server) wake the
//! streams too: on Postgres through `LISTEN/NOTIFY`, on SQLite by a watch of the
//! projects' latest sequence numbers while anyone is subscribed (see
//! [`spawn_store_watch`]).
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
use axum::http::HeaderMap;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use redline_protocol::bounded::within_chars;
use redline_protocol::{Change, ChangeEvent, ChangeEventType, EVENT_RESET, NAME_MAX_CHARS, Scope, Timestamp};
use sqlx::any::AnyRow;
use sqlx::postgres::PgListener;
use sqlx::{AnyConnection, Row};
use tokio::sync::watch;

use crate::AppState;
use crate::auth::{Principal, token_hash};
use crate::db::{Backend, Store};
use crate::error::ApiError;
use crate::filter::{Bind, Filter};
use crate::presence::Waiting;

/// How many events per project are kept for replay.
pub const EVENTS_KEPT: i64 = 1000;

/// The Postgres channel on which a committed write names its project and last event,
/// `"{projectId} {seq}"`, so the streams of every server process on the database wake.
pub const PG_CHANNEL: &str = "redline_events";

/// How often a server on SQLite looks for events written by another process, while a
/// stream is open. Such writes are rare (a deploy), so a second of delay is fine and the
/// check (one small read) costs nothing measurable.
pub const STORE_WATCH_INTERVAL: Duration = Duration::from_secs(1);

/// How often a token with open streams is checked again (each check reuses the last
/// read of the token for up to [`crate::auth::CHECK_REUSE_MS`]).
pub const TOKEN_RECHECK: Duration = Duration::from_millis(250);

/// How many of a project's latest events its feed keeps for its streams.
const FEED_KEPT: usize = 200;

/// The most events one read takes.
const READ_LIMIT: i64 = 200;

/// How many event streams a token may hold open at once by default.
pub const MAX_STREAMS_PER_TOKEN: usize = 20;

/// What an event names of a change.
pub struct ChangeKey<'a> {
    pub change_id: &'a str,
    pub short_id: i64,
}

impl<'a> ChangeKey<'a> {
    pub fn of<C>(change: &'a Change<C>) -> Result<Self, ApiError> {
        let short_id = change.short_id.parse().map_err(ApiError::internal)?;
        Ok(ChangeKey { change_id: &change.change_id, short_id })
    }

    /// The key of a row with `change_id` and `short_id` (e.g. of `RETURNING`).
    pub fn from_row(row: &'a AnyRow) -> Result<Self, sqlx::Error> {
        Ok(ChangeKey { change_id: row.try_get("change_id")?, short_id: row.try_get("short_id")? })
    }
}

/// Reserves the project's next `n` event sequence numbers inside a write's transaction
/// (which holds the project, see [`crate::db::touch_project`]); `set` and `returning`
/// add further columns to the same update. Returns the first number reserved and the
/// updated row.
pub async fn reserve(
    conn: &mut AnyConnection,
    project_id: &str,
    n: usize,
    set: &str,
    returning: &str,
) -> Result<(i64, AnyRow), sqlx::Error> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE projects SET last_event_seq = last_event_seq + $2{set} WHERE project_id = $1 \
         RETURNING last_event_seq{returning}"
    )))
    .bind(project_id)
    .bind(n as i64)
    .fetch_one(conn)
    .await?;
    let last: i64 = row.try_get("last_event_seq")?;
    Ok((last - n as i64 + 1, row))
}

/// One numbered event, ready to be stored.
#[derive(Debug)]
pub struct EventRow {
    project_id: String,
    seq: i64,
    event_type: ChangeEventType,
    change_id: String,
    short_id: i64,
    at: Timestamp,
}

/// One event of `event_type` for each of `changes`, numbered from `first_seq`
/// (reserved with [`reserve`]).
pub fn rows(
    project_id: &str,
    first_seq: i64,
    event_type: ChangeEventType,
    changes: &[ChangeKey<'_>],
    at: Timestamp,
) -> Vec<EventRow> {
    (first_seq..)
        .zip(changes)
        .map(|(seq, change)| EventRow {
            project_id: project_id.to_owned(),
            seq,
            event_type,
            change_id: change.change_id.to_owned(),
            short_id: change.short_id,
            at,
        })
        .collect()
}

/// The most rows one statement inserts: at 6 parameters each, far below both engines'
/// limits on parameters per statement.
const ROWS_PER_INSERT: usize = 1000;

/// Stores `rows` in as few statements as possible (one, unless there are more than
/// [`ROWS_PER_INSERT`]). The streams are woken after the commit: [`announce`] before
/// it, [`EventHub::notify`] after it.
pub async fn insert(conn: &mut AnyConnection, rows: &[EventRow]) -> Result<(), sqlx::Error> {
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let mut insert = Filter::new(
            "INSERT INTO events (project_id, seq, event_type, change_id, short_id, created_at)".to_owned(),
        );
        insert.values(chunk.iter().map(|row| {
            vec![
                Bind::Text(row.project_id.clone()),
                Bind::Int(row.seq),
                Bind::Text(row.event_type.as_str().to_owned()),
                Bind::Text(row.change_id.clone()),
                Bind::Text(row.short_id.to_string()),
                Bind::Int(row.at.unix_millis()),
            ]
        }));
        insert.execute(&mut *conn).await?;
    }
    // Pruning when a project's sequence passes a multiple of 64 rather than at each
    // event spares writes a statement; the table keeps between EVENTS_KEPT and
    // EVENTS_KEPT + 63 events per project (plus those of one batch). A batch on SQLite
    // holds the writes of every project.
    let mut last_seqs: HashMap<&str, (i64, bool)> = HashMap::new();
    for row in rows {
        let (last, passed) = last_seqs.entry(&row.project_id).or_insert((row.seq, false));
        *last = (*last).max(row.seq);
        *passed |= row.seq % 64 == 0;
    }
    for (project_id, (last, _)) in last_seqs.into_iter().filter(|(_, (_, passed))| *passed) {
        sqlx::query("DELETE FROM events WHERE project_id = $1 AND seq <= $2")
            .bind(project_id)
            .bind(last - EVENTS_KEPT)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// Records `event_type` for each of `changes` in a write made outside the server (an
/// admin command on the store) and announces the last one. The servers' streams wake
/// by themselves: on SQLite through [`spawn_store_watch`].
pub async fn record_all(
    conn: &mut AnyConnection,
    backend: Backend,
    project_id: &str,
    event_type: ChangeEventType,
    changes: &[ChangeKey<'_>],
    at: Timestamp,
) -> Result<(), sqlx::Error> {
    if changes.is_empty() {
        return Ok(());
    }
    let (first, _) = reserve(&mut *conn, project_id, changes.len(), "", "").await?;
    insert(&mut *conn, &rows(project_id, first, event_type, changes, at)).await?;
    announce(conn, backend, project_id, first + changes.len() as i64 - 1).await
}

/// On Postgres, tells every server process on the database that `project_id`'s events
/// reach `seq`, delivered when the transaction commits. On SQLite servers find out by
/// themselves ([`spawn_store_watch`]).
pub async fn announce(
    conn: &mut AnyConnection,
    backend: Backend,
    project_id: &str,
    seq: i64,
) -> Result<(), sqlx::Error> {
    if backend == Backend::Postgres {
        sqlx::query("SELECT pg_notify($1, $2)")
            .bind(PG_CHANNEL)
            .bind(format!("{project_id} {seq}"))
            .execute(conn)
            .await?;
    }
    Ok(())
}

/// Wakes the event streams of a project after a write commits, and keeps what they
/// read and who holds them.
#[derive(Debug)]
pub struct EventHub {
    projects: Mutex<HashMap<String, Arc<Feed>>>,
    /// Open streams by token id.
    tokens: Mutex<HashMap<String, TokenStreams>>,
    /// Numbers the entries of `tokens`, so a stream ends only its own token's entry.
    generations: AtomicU64,
    /// Reads of new events by the feeds (not replays), for tests and metrics.
    feed_reads: AtomicU64,
    /// Becomes true when the server stops; every stream then ends.
    stopping: watch::Sender<bool>,
    /// Wakes the webhook sender (`webhooks::sender`) for each new event.
    pub deliveries: tokio::sync::Notify,
}

impl Default for EventHub {
    fn default() -> Self {
        EventHub {
            projects: Mutex::default(),
            tokens: Mutex::default(),
            generations: AtomicU64::new(0),
            feed_reads: AtomicU64::new(0),
            stopping: watch::channel(false).0,
            deliveries: tokio::sync::Notify::new(),
        }
    }
}

/// One project's events as its streams see them.
#[derive(Debug)]
struct Feed {
    /// The latest sequence number known committed.
    latest: watch::Sender<i64>,
    /// Its latest events, read once for all its streams.
    kept: tokio::sync::Mutex<Kept>,
}

/// Events `base + 1 ..= last` of a project (those of them still stored), in order.
#[derive(Debug, Default)]
struct Kept {
    /// `None` until a stream first uses the feed.
    span: Option<(i64, i64)>,
    events: VecDeque<(i64, Arc<str>)>,
}

/// A token's open streams.
#[derive(Debug)]
struct TokenStreams {
    open: usize,
    generation: u64,
    /// Becomes true when the token is refused (revoked, expired): its streams end.
    refused: watch::Sender<bool>,
}

impl EventHub {
    /// Ends every event stream (the server is stopping).
    pub fn shut_down(&self) {
        self.stopping.send_replace(true);
    }

    fn feed(&self, project_id: &str) -> Arc<Feed> {
        let mut projects = self.projects.lock().expect("event hub lock");
        projects
            .entry(project_id.to_owned())
            .or_insert_with(|| {
                Arc::new(Feed { latest: watch::channel(0).0, kept: tokio::sync::Mutex::default() })
            })
            .clone()
    }

    /// Records that `project_id`'s events now reach `seq`.
    pub fn notify(&self, project_id: &str, seq: i64) {
        self.deliveries.notify_one();
        self.feed(project_id).latest.send_if_modified(|last| {
            let newer = seq > *last;
            if newer {
                *last = seq;
            }
            newer
        });
    }

    /// The projects with an open event stream.
    fn watched(&self) -> Vec<String> {
        let projects = self.projects.lock().expect("event hub lock");
        projects.iter().filter(|(_, f)| f.latest.receiver_count() > 0).map(|(p, _)| p.clone()).collect()
    }

    /// How many times the feeds have read new events from the store (each read serves
    /// every stream of its project).
    pub fn feed_reads(&self) -> u64 {
        self.feed_reads.load(Ordering::Relaxed)
    }

    /// How many event streams are open.
    pub fn open_streams(&self) -> usize {
        self.tokens.lock().expect("event hub lock").values().map(|t| t.open).sum()
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
        let mut tokens = self.tokens.lock().expect("event hub lock");
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
            hub: self.clone(),
            token_id: who.token_id.clone(),
            generation: entry.generation,
            refused: entry.refused.subscribe(),
        })
    }

    /// Whether `token_id`'s entry of `generation` has no open stream (or is gone).
    fn unused(&self, token_id: &str, generation: u64) -> bool {
        let tokens = self.tokens.lock().expect("event hub lock");
        tokens.get(token_id).is_none_or(|t| t.generation != generation || t.open == 0)
    }

    /// Ends the streams of `token_id`'s entry of `generation` (the token was refused).
    fn refuse(&self, token_id: &str, generation: u64) {
        let mut tokens = self.tokens.lock().expect("event hub lock");
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
    hub: Arc<EventHub>,
    token_id: String,
    generation: u64,
    refused: watch::Receiver<bool>,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        let mut tokens = self.hub.tokens.lock().expect("event hub lock");
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
fn spawn_token_watch(state: AppState, hub: Weak<EventHub>, token_id: String, generation: u64, hash: String) {
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(TOKEN_RECHECK);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        tick.tick().await;
        loop {
            tick.tick().await;
            let Some(hub) = hub.upgrade() else { return };
            if hub.unused(&token_id, generation) || *hub.stopping.borrow() {
                return;
            }
            match state.tokens.check_hash(&state.store, hash.clone(), state.clock.now()).await {
                Ok(_) => {}
                Err(e) if e.status() == 401 => {
                    hub.refuse(&token_id, generation);
                    return;
                }
                // The store failed to answer: try again at the next tick.
                Err(_) => {}
            }
        }
    });
}

/// On SQLite, wakes this process's streams for events that other processes wrote to the
/// same file (SQLite has no notifications across processes): while a stream is open,
/// reads every project's latest sequence number each [`STORE_WATCH_INTERVAL`]. A
/// project whose number moved past what this process last announced wakes its streams,
/// which then read the new rows as usual. Ends when the server stops.
pub fn spawn_store_watch(store: Store, hub: &Arc<EventHub>) {
    let hub = Arc::downgrade(hub);
    tokio::spawn(async move {
        let mut tick = tokio::time::interval(STORE_WATCH_INTERVAL);
        tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        loop {
            tick.tick().await;
            let Some(hub) = hub.upgrade() else { return };
            if *hub.stopping.borrow() {
                return;
            }
            let watched = hub.watched();
            if watched.is_empty() {
                continue;
            }
            match sqlx::query("SELECT project_id, last_event_seq FROM projects").fetch_all(store.pool()).await
            {
                Ok(rows) => {
                    for row in rows {
                        if let (Ok(project_id), Ok(seq)) =
                            (row.try_get::<String, _>("project_id"), row.try_get::<i64, _>("last_event_seq"))
                            && watched.contains(&project_id)
                        {
                            hub.notify(&project_id, seq);
                        }
                    }
                }
                Err(e) => tracing::warn!(error = %e, "watching the store for change events"),
            }
        }
    });
}

/// Wakes this process's streams for writes committed by other processes on the same
/// Postgres database. A notification lost while reconnecting only delays those streams
/// until the project's next write: the events table stays the source of truth.
pub fn spawn_pg_listener(url: String, hub: Arc<EventHub>) {
    tokio::spawn(async move {
        loop {
            let Err(e) = listen(&url, &hub).await;
            tracing::warn!(error = %e, "listening for Postgres change events; retrying");
            tokio::time::sleep(Duration::from_secs(2)).await;
        }
    });
}

async fn listen(url: &str, hub: &EventHub) -> Result<Infallible, sqlx::Error> {
    let mut listener = PgListener::connect(url).await?;
    listener.listen(PG_CHANNEL).await?;
    loop {
        let note = listener.recv().await?;
        if let Some((project_id, seq)) = note.payload().split_once(' ')
            && let Ok(seq) = seq.parse()
        {
            hub.notify(project_id, seq);
        }
    }
}

/// `GET /events/{stream}` where the stream is `changes:{projectId}`.
/// The event stream's query: **(ours)** `claimedBy`, the agent whose wait this is (its
/// presence, [`crate::presence`]).
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
) -> Result<Sse<impl Stream<Item = Result<Event, Infallible>>>, ApiError> {
    let project_id =
        stream.strip_prefix("changes:").ok_or_else(|| ApiError::not_found("unknown event stream"))?;
    let who = state.authenticate(&headers, client).await?;
    state.limiter.check(&who.token_id, state.rate_limit, state.clock.now())?;
    who.require(Scope::Read)?;
    who.require_project(project_id)?;
    let agent = query.claimed_by.map(|name| name.trim().to_owned()).filter(|name| !name.is_empty());
    if agent.as_ref().is_some_and(|name| !within_chars(name, NAME_MAX_CHARS) || name.contains('\0')) {
        return Err(ApiError::bad_input(
            "claimedBy",
            format!("at most {NAME_MAX_CHARS} characters, no U+0000"),
        ));
    }
    let slot = state.events.open_stream(&state, &who, token_hash(&headers)?, state.max_streams_per_token)?;
    let waiting = match agent {
        Some(name) => Some(Waiting::start(&state, project_id, &name).await?),
        None => None,
    };
    let (current, oldest): (i64, Option<i64>) = {
        let row = sqlx::query(
            "SELECT p.last_event_seq, (SELECT MIN(seq) FROM events e WHERE e.project_id = p.project_id) AS oldest \
             FROM projects p WHERE p.project_id = $1",
        )
        .bind(project_id)
        .fetch_one(state.store.pool())
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
    let feed = state.events.feed(project_id);
    let rx = feed.latest.subscribe();
    let stopping = state.events.stopping.subscribe();
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
    Ok(Sse::new(futures_util::stream::unfold(cursor, Cursor::next)).keep_alive(keep_alive))
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
    _open: crate::metrics::OpenStream,
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
            self.state.events.feed_reads.fetch_add(1, Ordering::Relaxed);
            let events = read_events(&self.state.store, &self.project_id, last, READ_LIMIT).await?;
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
        let events = read_events(&self.state.store, &self.project_id, self.after, READ_LIMIT).await?;
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

/// Up to `limit` of `project_id`'s stored events after `after`, in order, as
/// `(seq, JSON)`.
async fn read_events(
    store: &Store,
    project_id: &str,
    after: i64,
    limit: i64,
) -> Result<Vec<(i64, Arc<str>)>, sqlx::Error> {
    let rows = sqlx::query(
        "SELECT seq, event_type, change_id, short_id FROM events WHERE project_id = $1 AND seq > $2 \
         ORDER BY seq LIMIT $3",
    )
    .bind(project_id)
    .bind(after)
    .bind(limit)
    .fetch_all(store.pool())
    .await?;
    let mut events = Vec::with_capacity(rows.len());
    for row in rows {
        let seq: i64 = row.try_get("seq")?;
        let event_type: String = row.try_get("event_type")?;
        let data = ChangeEvent {
            event_type: ChangeEventType::from_wire(&event_type)
                .ok_or_else(|| sqlx::Error::Decode(format!("event type {event_type:?}").into()))?,
            change_id: row.try_get("change_id")?,
            short_id: row.try_get("short_id")?,
            seq: seq as u64,
        };
        events.push((seq, Arc::from(serde_json::to_string(&data).expect("events serialise"))));
    }
    Ok(events)
}

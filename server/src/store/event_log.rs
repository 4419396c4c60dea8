//! The event log: change events are rows of the `events` table, numbered per project in
//! the same transaction as the write they describe ([`reserve`], [`rows`], stored by
//! [`insert`] with the batch of the group committer, or by [`record_all`] in an admin
//! command's write), so what happened can always be read back from the store
//! ([`read_events`]); the latest [`EVENTS_KEPT`] of each project are kept.
//!
//! Readers (the event streams, the webhook sender) learn that a project's log grew from
//! the [`EventHub`]: told in-process after a write commits ([`EventHub::notify`]), and
//! of writes made by another process (`redline stage deploy`, a second server) on
//! Postgres through `LISTEN/NOTIFY` ([`announce`], [`spawn_pg_listener`]), on SQLite by a
//! watch of the projects' latest sequence numbers while anyone reads
//! ([`spawn_store_watch`]). Each project's [`Feed`] keeps its latest events, read once
//! for every stream of the project.

use std::collections::{HashMap, HashSet, VecDeque};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use redline_protocol::{Change, ChangeEvent, ChangeEventType, Timestamp};
use sqlx::any::AnyRow;
use sqlx::postgres::PgListener;
use sqlx::{AnyConnection, Row};
use tokio::sync::watch;

use crate::error::ApiError;
use crate::filter::{Bind, Filter};
use crate::store::{Backend, Store};

/// How many events per project are kept for replay.
pub const EVENTS_KEPT: i64 = 1000;

/// The Postgres channel on which a committed write names its project and last event,
/// `"{projectId} {seq}"`, so the streams of every server process on the database wake.
pub const PG_CHANNEL: &str = "redline_events";

/// How often a server on SQLite looks for events written by another process, while a
/// stream is open. Such writes are rare (a deploy), so a second of delay is fine and the
/// check (one small read) costs nothing measurable.
pub const STORE_WATCH_INTERVAL: Duration = Duration::from_secs(1);

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
/// (which holds the project, see [`crate::store::touch_project`]); `set` and `returning`
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

/// Wakes the readers of a project's events after a write commits, and keeps what the
/// streams read.
#[derive(Debug)]
pub struct EventHub {
    projects: Mutex<HashMap<String, Arc<Feed>>>,
    /// Reads of new events by the feeds (not replays), for tests and metrics.
    feed_reads: AtomicU64,
    /// Becomes true when the server stops; every stream then ends.
    stopping: watch::Sender<bool>,
    /// Wakes the webhook sender (`webhooks::sender`) for the projects with new events.
    pub deliveries: Deliveries,
}

/// The projects whose new events the webhook sender has yet to look at, and its
/// wake-up: an event wakes only the senders of its own project's webhooks.
#[derive(Debug, Default)]
pub struct Deliveries {
    woken: Mutex<HashSet<String>>,
    wake: tokio::sync::Notify,
}

impl Deliveries {
    fn wake(&self, project_id: &str) {
        self.woken.lock().expect("deliveries lock").insert(project_id.to_owned());
        self.wake.notify_one();
    }

    /// Returns once a project had new events since the last [`Deliveries::take`].
    pub async fn woken(&self) {
        self.wake.notified().await
    }

    /// The projects with new events since the last call.
    pub fn take(&self) -> Vec<String> {
        self.woken.lock().expect("deliveries lock").drain().collect()
    }
}

impl Default for EventHub {
    fn default() -> Self {
        EventHub {
            projects: Mutex::default(),
            feed_reads: AtomicU64::new(0),
            stopping: watch::channel(false).0,
            deliveries: Deliveries::default(),
        }
    }
}

/// One project's events as its streams see them.
#[derive(Debug)]
pub struct Feed {
    /// The latest sequence number known committed.
    pub latest: watch::Sender<i64>,
    /// Its latest events, read once for all its streams.
    pub kept: tokio::sync::Mutex<Kept>,
}

/// Events `base + 1 ..= last` of a project (those of them still stored), in order.
#[derive(Debug, Default)]
pub struct Kept {
    /// `None` until a stream first uses the feed.
    pub span: Option<(i64, i64)>,
    pub events: VecDeque<(i64, Arc<str>)>,
}

impl EventHub {
    /// Ends every event stream (the server is stopping).
    pub fn shut_down(&self) {
        self.stopping.send_replace(true);
    }

    /// Whether the server is stopping (see [`EventHub::shut_down`]).
    pub fn stopping(&self) -> watch::Receiver<bool> {
        self.stopping.subscribe()
    }

    /// `project_id`'s feed, made on first use.
    pub fn feed(&self, project_id: &str) -> Arc<Feed> {
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
        self.deliveries.wake(project_id);
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

    /// Counts a read of new events into a feed (see [`EventHub::feed_reads`]).
    pub fn feed_read(&self) {
        self.feed_reads.fetch_add(1, Ordering::Relaxed);
    }

    /// How many times the feeds have read new events from the store (each read serves
    /// every stream of its project).
    pub fn feed_reads(&self) -> u64 {
        self.feed_reads.load(Ordering::Relaxed)
    }
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

/// Up to `limit` of `project_id`'s stored events after `after`, in order, as
/// `(seq, JSON)`.
pub async fn read_events(
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_webhook_sender_is_told_only_the_projects_with_new_events() {
        let hub = EventHub::default();
        hub.notify("a", 1);
        hub.notify("a", 2);
        hub.notify("b", 1);
        let mut woken = hub.deliveries.take();
        woken.sort();
        assert_eq!(woken, ["a", "b"]);
        assert!(hub.deliveries.take().is_empty(), "each project once, until its next event");
    }
}

//! Group commit. One writer task per [`Committer`] owns the open write transaction
//! and lends it to the queued queue writes one after another, each inside its own
//! savepoint (so a write that fails or is abandoned undoes only itself). When no write
//! is waiting, or the batch is full, the task commits once and only then acknowledges
//! every write of the batch: an acknowledged write is as durable as the engine's
//! commit, and concurrent writes share one fsync instead of paying one each.
//!
//! Writes arriving while a batch commits queue up and form the next batch, so batches
//! grow with load and a lone write is committed at once.
//!
//! The change events a batch's writes record are stored together, in one statement
//! just before the commit: every statement in a write's turn is a round trip while all
//! other writes wait, and nothing in a write reads its events back.

use sqlx::{AnyConnection, AnyPool, Executor};
use tokio::sync::{mpsc, oneshot};

use crate::db::Tx;
use crate::error::ApiError;
use crate::events::{self, EventRow};

/// The most writes one batch takes; later ones wait for the next batch, so a long
/// queue cannot hold the first write's acknowledgement back without bound.
const MAX_BATCH: usize = 128;

/// A request for the transaction, answered when it is this write's turn.
type Turn = oneshot::Sender<Lent>;

/// Where a finished write learns whether its batch committed.
type Ack = oneshot::Sender<Result<(), String>>;

/// The queue of one writer task.
#[derive(Clone, Debug)]
pub struct Committer {
    queue: mpsc::UnboundedSender<Turn>,
}

/// How a lent transaction came back: the write is done (store its events, and
/// acknowledge it after the commit) or was dropped without finishing (undo it).
enum Outcome {
    Done(Ack, Vec<EventRow>),
    Abandoned,
}

/// The batch's transaction, lent to one write. Dropping it unfinished (an error, a
/// cancelled request) gives it back to be undone.
pub struct Lent {
    /// True while no write of this batch has finished: this write must take the
    /// batch's locks (see [`crate::queue::ProjectWrite::begin`]).
    first: bool,
    tx: Option<Tx>,
    back: Option<oneshot::Sender<(Tx, Outcome)>>,
    /// The events this write records, stored with the batch's if the write finishes.
    events: Vec<EventRow>,
}

impl Lent {
    pub fn first(&self) -> bool {
        self.first
    }

    pub fn conn(&mut self) -> &mut AnyConnection {
        self.tx.as_mut().expect("a lent transaction is held until it is given back")
    }

    /// Records `rows` with this write: stored just before the batch commits, and only
    /// if this write finishes.
    pub fn defer_events(&mut self, rows: Vec<EventRow>) {
        self.events.extend(rows);
    }

    /// Finishes this write; returns once the batch holding it has committed.
    pub async fn commit(mut self) -> Result<(), ApiError> {
        let (ack, acked) = oneshot::channel();
        let events = std::mem::take(&mut self.events);
        self.give_back(Outcome::Done(ack, events));
        match acked.await {
            Ok(result) => result.map_err(ApiError::internal),
            Err(_) => Err(ApiError::internal("the writer task ended before committing")),
        }
    }

    fn give_back(&mut self, outcome: Outcome) {
        if let (Some(tx), Some(back)) = (self.tx.take(), self.back.take()) {
            // The writer task waits for this; it only ends with the runtime.
            let _ = back.send((tx, outcome));
        }
    }
}

impl Drop for Lent {
    fn drop(&mut self) {
        self.give_back(Outcome::Abandoned);
    }
}

impl Committer {
    /// Starts the writer task for `pool`.
    pub fn spawn(pool: AnyPool) -> Committer {
        let (queue, waiting) = mpsc::unbounded_channel();
        tokio::spawn(run(pool, waiting));
        Committer { queue }
    }

    /// Waits for this write's turn and borrows the batch's transaction.
    pub async fn lend(&self) -> Result<Lent, ApiError> {
        let (turn, lent) = oneshot::channel();
        self.queue.send(turn).map_err(|_| ApiError::internal("the writer task has ended"))?;
        lent.await.map_err(|_| ApiError::internal("could not begin a write transaction"))
    }
}

async fn run(pool: AnyPool, mut waiting: mpsc::UnboundedReceiver<Turn>) {
    while let Some(first) = waiting.recv().await {
        match pool.begin().await {
            Ok(tx) => batch(tx, first, &mut waiting).await,
            // Dropping `first` answers that write with an error; the next one retries.
            Err(e) => tracing::error!(error = %e, "beginning a write transaction"),
        }
    }
}

/// Lends `tx` to `first` and to every write queued meanwhile, then commits once and
/// acknowledges them all with the commit's result. Each write runs inside the
/// savepoint `queue_write`; moving from one write to the next costs one round trip to
/// the database (the writes' statements are the bottleneck, not the fsync).
async fn batch(mut tx: Tx, first: Turn, waiting: &mut mpsc::UnboundedReceiver<Turn>) {
    let (mut acks, mut events) = (Vec::new(), Vec::new());
    if let Err(e) = exec(&mut tx, "SAVEPOINT queue_write").await {
        return acknowledge(acks, Err(e));
    }
    let mut next = Some(first);
    while let Some(turn) = next.take() {
        let (returned, outcome) = match lend(tx, turn, acks.is_empty()).await {
            Ok(returned) => returned,
            Err(e) => return acknowledge(acks, Err(e)),
        };
        tx = returned;
        if acks.len() < MAX_BATCH {
            next = waiting.try_recv().ok();
        }
        // After a rollback the savepoint is still open, ready for the next write; after
        // a finished write a new one is opened. The commit ends either.
        let step = match outcome {
            Some(Outcome::Done(ack, recorded)) => {
                acks.push(ack);
                events.extend(recorded);
                next.is_some().then_some("RELEASE SAVEPOINT queue_write; SAVEPOINT queue_write")
            }
            Some(Outcome::Abandoned) => Some("ROLLBACK TO SAVEPOINT queue_write"),
            None => None,
        };
        if let Some(sql) = step
            && let Err(e) = exec(&mut tx, sql).await
        {
            return acknowledge(acks, Err(e));
        }
    }
    if let Err(e) = events::insert(&mut tx, &events).await {
        return acknowledge(acks, Err(e.to_string()));
    }
    let committed = tx.commit().await.map_err(|e| e.to_string());
    acknowledge(acks, committed);
}

/// Lends `tx` to one write and waits for it back with the write's outcome; `None` if
/// the write was cancelled while it waited for its turn (the transaction is unused).
async fn lend(tx: Tx, turn: Turn, first: bool) -> Result<(Tx, Option<Outcome>), String> {
    let (back, returned) = oneshot::channel();
    match turn.send(Lent { first, tx: Some(tx), back: Some(back), events: Vec::new() }) {
        Ok(()) => {
            let (tx, outcome) = returned.await.map_err(|_| "a lent transaction was lost".to_owned())?;
            Ok((tx, Some(outcome)))
        }
        Err(mut unused) => {
            unused.back = None;
            Ok((unused.tx.take().expect("an unsent lent transaction still holds it"), None))
        }
    }
}

async fn exec(tx: &mut Tx, sql: &'static str) -> Result<(), String> {
    (&mut **tx).execute(sql).await.map(drop).map_err(|e| e.to_string())
}

fn acknowledge(acks: Vec<Ack>, result: Result<(), String>) {
    if let Err(e) = &result {
        tracing::error!(error = %e, writes = acks.len(), "a write batch failed");
    }
    for ack in acks {
        // A write whose request was cancelled meanwhile no longer listens.
        let _ = ack.send(result.clone());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_batch_commits_finished_writes_and_undoes_abandoned_ones() {
        sqlx::any::install_default_drivers();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
        let pool = AnyPool::connect(&url).await.unwrap();
        (&pool).execute("CREATE TABLE t (v TEXT NOT NULL)").await.unwrap();
        (&pool)
            .execute(
                "CREATE TABLE events (project_id TEXT NOT NULL, seq INTEGER NOT NULL, event_type TEXT NOT NULL, \
                 change_id TEXT NOT NULL, short_id TEXT NOT NULL, created_at INTEGER NOT NULL)",
            )
            .await
            .unwrap();
        let committer = Committer::spawn(pool.clone());
        let write = |v: &'static str, seq: i64, finish: bool| {
            let committer = committer.clone();
            async move {
                let mut lent = committer.lend().await.unwrap();
                sqlx::query("INSERT INTO t (v) VALUES ($1)").bind(v).execute(lent.conn()).await.unwrap();
                let key = events::ChangeKey { change_id: v, short_id: seq };
                let at = redline_protocol::Timestamp::from_unix_millis(0);
                lent.defer_events(events::rows(
                    "p",
                    seq,
                    redline_protocol::ChangeEventType::Filed,
                    &[key],
                    at,
                ));
                if finish {
                    lent.commit().await.unwrap();
                }
            }
        };
        // Queued together, so (at least partly) one batch.
        tokio::join!(write("a", 1, true), write("b", 2, false), write("c", 3, true));
        let kept: Vec<String> =
            sqlx::query_scalar("SELECT v FROM t ORDER BY v").fetch_all(&pool).await.unwrap();
        assert_eq!(kept, ["a", "c"]);
        // An abandoned write's events go with it; the finished writes' are stored.
        let events: Vec<String> =
            sqlx::query_scalar("SELECT change_id FROM events ORDER BY seq").fetch_all(&pool).await.unwrap();
        assert_eq!(events, ["a", "c"]);
    }
}

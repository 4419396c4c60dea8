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
//!
//! On SQLite the writer task also copies the WAL back into the database file (a
//! checkpoint), once a batch's writes are acknowledged and before the next batch
//! begins ([`WalCheckpoints`]).

use std::fs::File;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use sqlx::{AnyConnection, AnyPool, Executor};
use tokio::sync::{mpsc, oneshot};

use crate::error::ApiError;
use crate::store::event_log::{self, EventRow};
use crate::store::{Backend, Tx};

/// The most writes one batch takes; later ones wait for the next batch, so a long
/// queue cannot hold the first write's acknowledgement back without bound.
const MAX_BATCH: usize = 128;

/// A request for the transaction, answered when it is this write's turn.
type Turn = oneshot::Sender<Lent>;

/// Where a finished write learns whether its batch committed.
type Ack = oneshot::Sender<Result<(), String>>;

/// A checkpoint once this many WAL frames (pages) wait to be copied back. SQLite's own
/// automatic checkpoint (at 1,000) stays on behind it, for writes that do not go
/// through a committer.
pub const CHECKPOINT_FRAMES: u32 = 250;

/// SQLite's automatic checkpoint runs inside the commit that crosses its threshold, so
/// every write of that batch waited for a copy and an fsync of the database file: one
/// batch in several answered 3-5 ms late. The writer task checkpoints after answering
/// instead, when [`CHECKPOINT_FRAMES`] frames wait, so the cost falls on the time the
/// next writes take to arrive; it is small enough to end in that time, mostly. On the
/// writer task, not beside it: a checkpoint's fsync running beside a commit's delays
/// that commit (docs/benchmarks-history.md, "Checkpoints after the answers").
#[derive(Clone, Debug)]
pub struct WalCheckpoints {
    /// The WAL index (`DB-shm`), whose header counts the frames.
    wal_index: PathBuf,
    /// The WAL index, held open. Closing any descriptor of a file drops every POSIX lock
    /// this process holds on it, SQLite's included: opened and closed at each check, it
    /// let another process (`redline backup`, an admin command) take SQLite's lock on
    /// the index as if no one used it, reset it, and crash this one with SIGBUS.
    held: Arc<Mutex<Option<File>>>,
}

impl WalCheckpoints {
    /// For the SQLite database file `db`.
    pub fn for_database(db: &str) -> WalCheckpoints {
        WalCheckpoints { wal_index: PathBuf::from(format!("{db}-shm")), held: Arc::default() }
    }

    /// The frames written to the WAL and not yet copied back: `mxFrame` of the WAL
    /// index header minus `nBackfill` of its checkpoint info, both native-endian `u32`s
    /// (SQLite's `wal.c`). SQLite tells a WAL's length only to a WAL hook, which sqlx's
    /// `Any` driver does not reach; a torn read only moves a checkpoint by a batch.
    /// When the pool's last connection closes SQLite deletes the file and a later
    /// connection makes a new one: the file is looked up by name (`stat`, which opens
    /// nothing) and opened again when it is another file; only the descriptor of a
    /// deleted copy, on which SQLite holds no lock, is ever closed.
    fn waiting_frames(&self) -> std::io::Result<u32> {
        let current = std::fs::metadata(&self.wal_index)?;
        let same =
            |f: &File| f.metadata().is_ok_and(|m| (m.dev(), m.ino()) == (current.dev(), current.ino()));
        let mut held = self.held.lock().expect("WAL index lock");
        let file = match held.take() {
            Some(f) if same(&f) => held.insert(f),
            _ => held.insert(File::open(&self.wal_index)?),
        };
        let mut header = [0u8; 100];
        file.read_exact_at(&mut header, 0)?;
        let word =
            |at: usize| u32::from_ne_bytes([header[at], header[at + 1], header[at + 2], header[at + 3]]);
        Ok(word(16).saturating_sub(word(96)))
    }

    /// Checkpoints if [`CHECKPOINT_FRAMES`] frames wait. `PASSIVE`: readers and a
    /// writer of another process are not waited for; frames they still need are copied
    /// by a later checkpoint.
    async fn run_if_due(&self, pool: &AnyPool) {
        match self.waiting_frames() {
            Ok(frames) if frames < CHECKPOINT_FRAMES => {}
            waiting => {
                if let Err(e) = waiting {
                    tracing::debug!(error = %e, "reading the WAL index; checkpointing anyway");
                }
                if let Err(e) = pool.execute("PRAGMA wal_checkpoint(PASSIVE)").await {
                    tracing::warn!(error = %e, "checkpointing the WAL");
                }
            }
        }
    }
}

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
    /// Starts the writer task for `pool`, checkpointing its WAL if given.
    pub fn spawn(pool: AnyPool, backend: Backend, checkpoints: Option<WalCheckpoints>) -> Committer {
        let (queue, waiting) = mpsc::unbounded_channel();
        tokio::spawn(run(pool, backend, checkpoints, waiting));
        Committer { queue }
    }

    /// Waits for this write's turn and borrows the batch's transaction.
    pub async fn lend(&self) -> Result<Lent, ApiError> {
        let (turn, lent) = oneshot::channel();
        self.queue.send(turn).map_err(|_| ApiError::internal("the writer task has ended"))?;
        lent.await.map_err(|_| ApiError::internal("could not begin a write transaction"))
    }
}

async fn run(
    pool: AnyPool,
    backend: Backend,
    checkpoints: Option<WalCheckpoints>,
    mut waiting: mpsc::UnboundedReceiver<Turn>,
) {
    while let Some(first) = waiting.recv().await {
        match backend.begin_write(&pool).await {
            Ok(tx) => {
                batch(tx, first, &mut waiting).await;
                if let Some(checkpoints) = &checkpoints {
                    checkpoints.run_if_due(&pool).await;
                }
            }
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
    if let Err(e) = event_log::insert(&mut tx, &events).await {
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
        let committer = Committer::spawn(pool.clone(), Backend::Sqlite, None);
        let write = |v: &'static str, seq: i64, finish: bool| {
            let committer = committer.clone();
            async move {
                let mut lent = committer.lend().await.unwrap();
                sqlx::query("INSERT INTO t (v) VALUES ($1)").bind(v).execute(lent.conn()).await.unwrap();
                let key = event_log::ChangeKey { change_id: v, short_id: seq };
                let at = redline_protocol::Timestamp::from_unix_millis(0);
                lent.defer_events(event_log::rows(
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

    /// A pool on a fresh SQLite file in WAL mode whose connections never checkpoint on
    /// their own, and that file's checkpoints.
    async fn wal_pool(dir: &tempfile::TempDir) -> (AnyPool, WalCheckpoints) {
        sqlx::any::install_default_drivers();
        let file = dir.path().join("t.db").display().to_string();
        let pool = sqlx::any::AnyPoolOptions::new()
            .after_connect(|conn, _| {
                Box::pin(async move {
                    conn.execute("PRAGMA journal_mode = WAL").await?;
                    conn.execute("PRAGMA wal_autocheckpoint = 0").await.map(drop)
                })
            })
            .connect(&format!("sqlite://{file}?mode=rwc"))
            .await
            .unwrap();
        (&pool).execute("CREATE TABLE t (v TEXT NOT NULL)").await.unwrap();
        (pool, WalCheckpoints::for_database(&file))
    }

    #[tokio::test]
    async fn the_wal_index_counts_the_frames_sqlite_counts() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, checkpoints) = wal_pool(&dir).await;
        for _ in 0..20 {
            sqlx::query("INSERT INTO t (v) VALUES ($1)").bind("x".repeat(3000)).execute(&pool).await.unwrap();
        }
        let waiting = checkpoints.waiting_frames().unwrap();
        // (busy, frames in the WAL, frames copied back)
        let (_, log, copied): (i32, i32, i32) =
            sqlx::query_as("PRAGMA wal_checkpoint(PASSIVE)").fetch_one(&pool).await.unwrap();
        assert!(waiting >= 20, "{waiting}");
        assert_eq!((waiting, copied), (log as u32, log));
        assert_eq!(checkpoints.waiting_frames().unwrap(), 0);
    }

    /// SQLite's POSIX locks on the WAL index outlive the writer task's reads of it:
    /// closing a descriptor of the file would drop them all, and another process opening
    /// the store would then reset the index under this one. Read from `/proc/locks`.
    #[cfg(target_os = "linux")]
    #[tokio::test]
    async fn reading_the_wal_index_keeps_sqlites_locks_on_it() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, checkpoints) = wal_pool(&dir).await;
        sqlx::query("INSERT INTO t (v) VALUES ('x')").execute(&pool).await.unwrap();
        let pid = std::process::id().to_string();
        // `1: POSIX  ADVISORY  READ 1234 fe:00:5751261 128 128`
        let ours_on = |inode: &str| {
            let locks = std::fs::read_to_string("/proc/locks").unwrap();
            locks
                .lines()
                .map(|line| line.split_whitespace().collect::<Vec<_>>())
                .filter(|f| f.get(1) == Some(&"POSIX") && f.get(4) == Some(&pid.as_str()))
                .filter(|f| f.get(5).and_then(|file| file.rsplit(':').next()) == Some(inode))
                .count()
        };
        let inode = std::fs::metadata(&checkpoints.wal_index).unwrap().ino().to_string();
        let ours = || ours_on(&inode);
        // Seen once in many runs under load: no lock of ours listed right after the
        // insert. The lock SQLite holds while connected is what this test starts from,
        // not what it tests, so it is waited for (a second at most), and the listing is
        // printed if it never shows.
        for _ in 0..100 {
            if ours() > 0 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(
            ours() > 0,
            "SQLite holds a lock on the WAL index (inode {inode}) while connected; pid {pid}, /proc/locks:\n{}",
            std::fs::read_to_string("/proc/locks").unwrap()
        );
        for _ in 0..3 {
            checkpoints.waiting_frames().unwrap();
        }
        assert!(ours() > 0, "reading the WAL index dropped SQLite's locks on it");

        // The pool's last connection closing deletes the index; the next one makes a new
        // one, which is read (not the deleted copy) and keeps its locks too.
        pool.close().await;
        assert!(!checkpoints.wal_index.exists(), "SQLite deleted the index");
        let file = dir.path().join("t.db").display().to_string();
        let pool = AnyPool::connect(&format!("sqlite://{file}")).await.unwrap();
        sqlx::query("INSERT INTO t (v) VALUES ('y')").execute(&pool).await.unwrap();
        let first = inode;
        let inode = std::fs::metadata(&checkpoints.wal_index).unwrap().ino().to_string();
        assert_ne!(inode, first, "a new index");
        assert!(checkpoints.waiting_frames().unwrap() >= 1, "the new index is read");
        assert!(ours_on(&inode) > 0);
        pool.close().await;
    }

    #[tokio::test]
    async fn the_writer_task_checkpoints_once_enough_frames_wait() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, checkpoints) = wal_pool(&dir).await;
        let committer = Committer::spawn(pool.clone(), Backend::Sqlite, Some(checkpoints.clone()));
        let writes = CHECKPOINT_FRAMES + 50;
        let mut most_waiting = 0;
        // One commit each, of at least one frame.
        for _ in 0..writes {
            let mut lent = committer.lend().await.unwrap();
            sqlx::query("INSERT INTO t (v) VALUES ($1)")
                .bind("x".repeat(3000))
                .execute(lent.conn())
                .await
                .unwrap();
            lent.commit().await.unwrap();
            most_waiting = most_waiting.max(checkpoints.waiting_frames().unwrap());
        }
        // A write is acknowledged before the checkpoint its commit made due: the frames
        // of a write or two (here 1-2 each) may be read on top of the threshold.
        assert!(most_waiting <= CHECKPOINT_FRAMES + 4, "{most_waiting} frames waited");
        let rows: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t").fetch_one(&pool).await.unwrap();
        assert_eq!(rows, i64::from(writes));
    }
}

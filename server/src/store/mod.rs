//! The store layer: the database and the files, and nothing of requests. The database
//! is one sqlx `Any` pool, so the same statements serve SQLite (the default,
//! `DIR/redline.db`) and Postgres; `migrations` brings it up to date at each open.
//! Beside it: how rows become records ([`rows`], `captured`), group commit (`commit`),
//! the event log ([`event_log`]), images ([`blobs`]) and files only the server's user
//! may read (`private`).

pub mod blobs;
pub(crate) mod captured;
pub(crate) mod commit;
pub mod event_log;
mod migrations;
pub(crate) mod private;
pub mod rows;

use std::collections::HashMap;
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, bail};
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::{Any, AnyConnection, AnyPool, Executor, Transaction};

use self::commit::{Committer, WalCheckpoints};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

impl Backend {
    /// Begins a transaction that writes. On SQLite it takes the write lock at once
    /// (`BEGIN IMMEDIATE`): a transaction that reads first and writes later cannot wait
    /// for the lock once another connection (or process, such as an admin command beside
    /// the server) has written since its read, so SQLite fails it at once with "database
    /// is locked"; taken at the start, the wait is the busy timeout's, as for any writer.
    pub async fn begin_write(self, pool: &AnyPool) -> Result<Tx, sqlx::Error> {
        match self {
            Backend::Sqlite => pool.begin_with("BEGIN IMMEDIATE").await,
            Backend::Postgres => pool.begin().await,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    /// The committers' connections (see [`Store::open_url`]).
    writes: AnyPool,
    backend: Backend,
    /// The group committers of this process's queue writes (see [`crate::store::commit`]):
    /// one for the whole database on SQLite (one writer at a time anyway), one per
    /// project on Postgres (whose project row lock serialises a project's writers, so
    /// projects need not wait for each other). Queued writes hold no connection, and
    /// never meet SQLite's busy handler, which sleeps and retries and so gives long tails.
    committers: Arc<Mutex<HashMap<String, Committer>>>,
    /// SQLite with a database file: the committer's checkpoints.
    checkpoints: Option<WalCheckpoints>,
    /// The Postgres URL, for the connection that listens for other processes' events.
    /// Never logged: it may hold a password.
    postgres_url: Option<Arc<str>>,
}

pub type Tx = Transaction<'static, Any>;

impl Store {
    /// Opens (creating if needed) `DIR/redline.db` and applies migrations.
    pub async fn open_dir(dir: &Path) -> anyhow::Result<Store> {
        private::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("redline.db");
        private::create_file(&path).with_context(|| format!("creating {}", path.display()))?;
        let path = path.to_str().context("the data directory must be valid UTF-8")?;
        // The SQLite URL is percent-decoded, so these must be encoded to survive.
        let encoded = path.replace('%', "%25").replace('?', "%3F").replace('#', "%23");
        Store::open_url(&format!("sqlite://{encoded}?mode=rwc")).await
    }

    /// Opens a `sqlite://` or `postgres://` database and applies migrations.
    pub async fn open_url(url: &str) -> anyhow::Result<Store> {
        let backend = if url.starts_with("sqlite:") {
            Backend::Sqlite
        } else if url.starts_with("postgres:") || url.starts_with("postgresql:") {
            Backend::Postgres
        } else {
            bail!("unsupported database URL scheme (expected sqlite: or postgres:)");
        };
        install_default_drivers();
        let pool = pool_options(backend).connect(url).await.context("opening the database")?;
        let file = match backend {
            Backend::Sqlite => database_file(&pool).await?,
            Backend::Postgres => None,
        };
        // On SQLite, which has one writer at a time anyway, the committer writes through
        // a connection of its own: it keeps its prepared statements and its page cache
        // from batch to batch, instead of meeting whichever connection of the pool was
        // idle longest. (A database in memory is the pool's own: another pool would open
        // another.)
        let writes = match file {
            Some(_) => {
                pool_options(backend).max_connections(1).connect(url).await.context("opening the database")?
            }
            None => pool.clone(),
        };
        let postgres_url = (backend == Backend::Postgres).then(|| Arc::from(url));
        let checkpoints = file.map(|file| WalCheckpoints::for_database(&file));
        let store = Store { pool, writes, backend, committers: Arc::default(), checkpoints, postgres_url };
        migrations::run(&store.pool, backend).await?;
        Ok(store)
    }

    pub fn pool(&self) -> &AnyPool {
        &self.pool
    }

    /// Closes every connection; on SQLite the last one to close checkpoints the WAL
    /// into the database file.
    pub async fn close(&self) {
        self.writes.close().await;
        self.pool.close().await;
    }

    pub fn backend(&self) -> Backend {
        self.backend
    }

    /// Begins a transaction that writes, on the pool ([`Backend::begin_write`]).
    pub async fn begin_write(&self) -> Result<Tx, sqlx::Error> {
        self.backend.begin_write(&self.pool).await
    }

    pub fn postgres_url(&self) -> Option<&str> {
        self.postgres_url.as_deref()
    }

    /// The group committer of `project_id`'s queue writes (started on first use).
    pub fn committer(&self, project_id: &str) -> Committer {
        let key = match self.backend {
            Backend::Sqlite => "",
            Backend::Postgres => project_id,
        };
        let mut committers = self.committers.lock().expect("committers lock");
        committers
            .entry(key.to_owned())
            .or_insert_with(|| Committer::spawn(self.writes.clone(), self.backend, self.checkpoints.clone()))
            .clone()
    }

    /// Begins a write transaction on `project_id`'s queue outside the group
    /// committer (admin commands). Returns `None` if the project does not exist.
    pub async fn write(&self, project_id: &str) -> Result<Option<Tx>, sqlx::Error> {
        let mut tx = self.begin_write().await?;
        Ok(touch_project(&mut tx, project_id).await?.then_some(tx))
    }
}

/// How each connection of either pool is set up. A SQLite connection lives in this
/// process and cannot go stale, so it is not pinged each time it is taken from a pool
/// (a round trip to its thread before every batch and every read).
fn pool_options(backend: Backend) -> AnyPoolOptions {
    let options = AnyPoolOptions::new().test_before_acquire(backend == Backend::Postgres);
    options.after_connect(move |conn, _meta| {
        Box::pin(async move {
            if backend == Backend::Sqlite {
                // WAL lets readers (lists, event streams) run beside the one writer.
                conn.execute("PRAGMA journal_mode = WAL").await?;
                // Every commit waits for the WAL's fsync: an acknowledged
                // write survives power loss, not only a crash of the process.
                // Group commit (`crate::store::commit`) shares that fsync among the
                // writes of a batch.
                conn.execute("PRAGMA synchronous = FULL").await?;
                // Each queue write runs in a savepoint (`crate::store::commit`), so SQLite
                // copies every page the write changes to a sub-journal first; kept
                // in memory, a claim write of 50 items does not spill ≈ 250 KB to
                // a temporary file (claims p99 lower in 4 of 4 alternated runs).
                conn.execute("PRAGMA temp_store = MEMORY").await?;
            }
            Ok(())
        })
    })
}

/// The file of a SQLite database (`None` in memory).
async fn database_file(pool: &AnyPool) -> anyhow::Result<Option<String>> {
    let file: String = sqlx::query_scalar("SELECT file FROM pragma_database_list WHERE name = 'main'")
        .fetch_one(pool)
        .await
        .context("reading the database's file name")?;
    Ok(Some(file).filter(|f| !f.is_empty()))
}

/// The first statement of a write on `project_id`'s queue: it touches the project
/// row, so writers of one project are serialised on both engines (Postgres: a row
/// lock that later statements, at read committed, look past; SQLite: the database
/// write lock, taken before anything is read, so no transaction has to be retried for
/// upgrading its lock). A non-key column is touched so Postgres foreign-key checks of
/// other writers are not blocked. False if the project does not exist.
pub async fn touch_project(conn: &mut AnyConnection, project_id: &str) -> Result<bool, sqlx::Error> {
    let touched = sqlx::query("UPDATE projects SET last_event_seq = last_event_seq WHERE project_id = $1")
        .bind(project_id)
        .execute(conn)
        .await?
        .rows_affected();
    Ok(touched == 1)
}

/// A new id: a UUID v7, random but ordered by creation time, so the rows and index
/// entries a write adds (claim groups, messages) go next to the newest ones instead of
/// onto a random page each, which the commit would then write too.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

/// Lower-case hex of `bytes`: how the store writes hashes, keys and signatures as text.
pub fn hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut hex = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        hex.push(char::from(DIGITS[usize::from(b >> 4)]));
        hex.push(char::from(DIGITS[usize::from(b & 0xf)]));
    }
    hex
}

#[cfg(all(test, unix))]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::Store;

    fn mode(path: &std::path::Path) -> u32 {
        std::fs::metadata(path).unwrap().permissions().mode() & 0o777
    }

    #[tokio::test]
    async fn a_new_store_and_its_images_are_its_owners_only() {
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("data");
        let store = Store::open_dir(&dir).await.unwrap();
        let folder = super::blobs::Folder::open(dir.join("blobs")).await.unwrap();
        super::blobs::BlobStore::put(&folder, "k.png", bytes::Bytes::from_static(b"png")).await.unwrap();
        sqlx::query("SELECT 1").execute(store.pool()).await.unwrap();
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&dir.join("blobs")), 0o700);
        assert_eq!(mode(&dir.join("blobs/k.png")), 0o600);
        for file in ["redline.db", "redline.db-wal", "redline.db-shm"] {
            assert_eq!(mode(&dir.join(file)), 0o600, "{file}");
        }
    }
}

//! The store: one sqlx `Any` pool, so the same statements serve SQLite (the default,
//! `DIR/redline.db`) and Postgres. Migrations are embedded, numbered and forward-only;
//! an applied migration whose text changed stops the server with its file name.

use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::{Arc, Mutex};

use anyhow::{Context, bail};
use sqlx::any::{AnyPoolOptions, install_default_drivers};
use sqlx::migrate::{MigrateError, Migration, MigrationType, Migrator};
use sqlx::{Any, AnyConnection, AnyPool, Executor, Row, SqlSafeStr, Transaction};

use crate::commit::{Committer, WalCheckpoints};

/// `(version, file name, sql)` of each migration, in order, per engine.
const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "0001_init.sql", include_str!("../migrations/sqlite/0001_init.sql")),
    (2, "0002_cli_auth.sql", include_str!("../migrations/sqlite/0002_cli_auth.sql")),
    (3, "0003_blob_attached.sql", include_str!("../migrations/sqlite/0003_blob_attached.sql")),
    (4, "0004_change_captures.sql", include_str!("../migrations/sqlite/0004_change_captures.sql")),
    (5, "0005_token_lifetimes.sql", include_str!("../migrations/sqlite/0005_token_lifetimes.sql")),
    (6, "0006_group_index.sql", include_str!("../migrations/sqlite/0006_group_index.sql")),
    (7, "0007_message_types.sql", include_str!("../migrations/sqlite/0007_message_types.sql")),
    (8, "0008_unique_option_keys.sql", include_str!("../migrations/sqlite/0008_unique_option_keys.sql")),
    (9, "0009_verified.sql", include_str!("../migrations/sqlite/0009_verified.sql")),
    (10, "0010_sign_in_secrets.sql", include_str!("../migrations/sqlite/0010_sign_in_secrets.sql")),
    (11, "0011_project_storage.sql", include_str!("../migrations/sqlite/0011_project_storage.sql")),
    (12, "0012_holds.sql", include_str!("../migrations/sqlite/0012_holds.sql")),
    (13, "0013_blob_chunks.sql", include_str!("../migrations/sqlite/0013_blob_chunks.sql")),
    (14, "0014_shown_messages.sql", include_str!("../migrations/sqlite/0014_shown_messages.sql")),
    (15, "0015_agent_presence.sql", include_str!("../migrations/sqlite/0015_agent_presence.sql")),
    (16, "0016_change_links.sql", include_str!("../migrations/sqlite/0016_change_links.sql")),
    (17, "0017_webhooks.sql", include_str!("../migrations/sqlite/0017_webhooks.sql")),
    (18, "0018_sign_in_origin.sql", include_str!("../migrations/sqlite/0018_sign_in_origin.sql")),
    (19, "0019_list_summaries.sql", include_str!("../migrations/sqlite/0019_list_summaries.sql")),
];
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "0001_init.sql", include_str!("../migrations/postgres/0001_init.sql")),
    (2, "0002_cli_auth.sql", include_str!("../migrations/postgres/0002_cli_auth.sql")),
    (3, "0003_blob_attached.sql", include_str!("../migrations/postgres/0003_blob_attached.sql")),
    (4, "0004_change_captures.sql", include_str!("../migrations/postgres/0004_change_captures.sql")),
    (5, "0005_token_lifetimes.sql", include_str!("../migrations/postgres/0005_token_lifetimes.sql")),
    (6, "0006_group_index.sql", include_str!("../migrations/postgres/0006_group_index.sql")),
    (7, "0007_message_types.sql", include_str!("../migrations/postgres/0007_message_types.sql")),
    (8, "0008_unique_option_keys.sql", include_str!("../migrations/postgres/0008_unique_option_keys.sql")),
    (9, "0009_verified.sql", include_str!("../migrations/postgres/0009_verified.sql")),
    (10, "0010_sign_in_secrets.sql", include_str!("../migrations/postgres/0010_sign_in_secrets.sql")),
    (11, "0011_project_storage.sql", include_str!("../migrations/postgres/0011_project_storage.sql")),
    (12, "0012_holds.sql", include_str!("../migrations/postgres/0012_holds.sql")),
    (13, "0013_blob_chunks.sql", include_str!("../migrations/postgres/0013_blob_chunks.sql")),
    (14, "0014_shown_messages.sql", include_str!("../migrations/postgres/0014_shown_messages.sql")),
    (15, "0015_agent_presence.sql", include_str!("../migrations/postgres/0015_agent_presence.sql")),
    (16, "0016_change_links.sql", include_str!("../migrations/postgres/0016_change_links.sql")),
    (17, "0017_webhooks.sql", include_str!("../migrations/postgres/0017_webhooks.sql")),
    (18, "0018_sign_in_origin.sql", include_str!("../migrations/postgres/0018_sign_in_origin.sql")),
    (19, "0019_list_summaries.sql", include_str!("../migrations/postgres/0019_list_summaries.sql")),
];

/// What a migration needs done in Rust, as `(version, step)`: each runs once, right after
/// SQL migration `version` (before any later one, whose schema it was not written for),
/// and is recorded in `data_steps`.
const DATA_STEPS: &[(i64, DataStep)] = &[(8, DataStep::UniqueOptionKeys)];

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Backend {
    Sqlite,
    Postgres,
}

#[derive(Clone, Debug)]
pub struct Store {
    pool: AnyPool,
    /// The committers' connections (see [`Store::open_url`]).
    writes: AnyPool,
    backend: Backend,
    /// The group committers of this process's queue writes (see [`crate::commit`]):
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
        crate::private::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
        let path = dir.join("redline.db");
        crate::private::create_file(&path).with_context(|| format!("creating {}", path.display()))?;
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
        store.migrate().await?;
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

    pub fn postgres_url(&self) -> Option<&str> {
        self.postgres_url.as_deref()
    }

    async fn migrate(&self) -> anyhow::Result<()> {
        let files = match self.backend {
            Backend::Sqlite => SQLITE_MIGRATIONS,
            Backend::Postgres => POSTGRES_MIGRATIONS,
        };
        let file_name =
            |v: i64| files.iter().find(|m| m.0 == v).map_or(format!("version {v}"), |m| m.1.to_owned());
        let explain = |e: MigrateError| match e {
            MigrateError::VersionMismatch(v) => anyhow::anyhow!(
                "migration {} was applied to this database but its text has changed since; \
                 refusing to start (restore the file and add a new migration instead)",
                file_name(v)
            ),
            MigrateError::VersionMissing(v) => anyhow::anyhow!(
                "this database has migration {v}, which this server does not know; refusing to start \
                 (is it from a newer server?)"
            ),
            e => anyhow::Error::new(e).context("applying migrations"),
        };
        let migrator = migrator(files);
        for &(version, step) in DATA_STEPS {
            migrator.run_to(version, &self.pool).await.map_err(explain)?;
            step.run_once(&self.pool).await.with_context(|| format!("data step {}", step.name()))?;
        }
        migrator.run(&self.pool).await.map_err(explain)
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
            .or_insert_with(|| Committer::spawn(self.writes.clone(), self.checkpoints.clone()))
            .clone()
    }

    /// Begins a write transaction on `project_id`'s queue outside the group
    /// committer (admin commands). Returns `None` if the project does not exist.
    pub async fn write(&self, project_id: &str) -> Result<Option<Tx>, sqlx::Error> {
        let mut tx = self.pool.begin().await?;
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
                // Group commit (`crate::commit`) shares that fsync among the
                // writes of a batch.
                conn.execute("PRAGMA synchronous = FULL").await?;
                // Each queue write runs in a savepoint (`crate::commit`), so SQLite
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

fn migrator(files: &[(i64, &str, &'static str)]) -> Migrator {
    Migrator::with_migrations(
        files
            .iter()
            .map(|&(version, name, sql)| {
                Migration::new(
                    version,
                    name.to_owned().into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
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

/// A step of a migration done in Rust (see [`DATA_STEPS`]).
#[derive(Clone, Copy, Debug)]
enum DataStep {
    /// Every option key of a thread is unique: a key seen earlier in the item's thread
    /// (by `seq`, then position) gets a new one, so the first keeps it, and with it any
    /// answer's `chosenOption` that named it.
    UniqueOptionKeys,
}

impl DataStep {
    fn name(self) -> &'static str {
        match self {
            DataStep::UniqueOptionKeys => "unique_option_keys",
        }
    }

    /// Runs the step unless `data_steps` records it, and records it, in one
    /// transaction: a server starting at the same time waits on the record's key, then
    /// finds it.
    async fn run_once(self, pool: &AnyPool) -> anyhow::Result<()> {
        let mut tx = pool.begin().await?;
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)?.as_millis() as i64;
        let recorded = sqlx::query(
            "INSERT INTO data_steps (name, applied_at) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
        )
        .bind(self.name())
        .bind(now)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        if recorded == 1 {
            match self {
                DataStep::UniqueOptionKeys => unique_option_keys(&mut tx).await?,
            }
            tx.commit().await?;
        }
        Ok(())
    }
}

/// [`DataStep::UniqueOptionKeys`]. Only text options are re-keyed: an image's key is its
/// file's name, and those were always unique. It runs on databases that had not run it
/// yet, whichever server they meet, so it uses only what [`at_0008`] froze.
async fn unique_option_keys(conn: &mut AnyConnection) -> anyhow::Result<()> {
    use at_0008::{Attachment, AttachmentKind, is_blob_key, new_option_key};
    let rows = sqlx::query(
        "SELECT message_id, change_id, attachments FROM messages \
         WHERE attachments LIKE '%\"kind\":\"option\"%' ORDER BY change_id, seq",
    )
    .fetch_all(&mut *conn)
    .await?;
    let mut thread = String::new();
    let mut seen = HashSet::new();
    let mut rewritten = Vec::new();
    for row in &rows {
        let change_id: String = row.try_get("change_id")?;
        if change_id != thread {
            (thread, seen) = (change_id, HashSet::new());
        }
        let mut attachments: Vec<Attachment> =
            serde_json::from_str(&row.try_get::<String, _>("attachments")?)?;
        let mut changed = false;
        for a in &mut attachments {
            if !seen.insert(a.key.clone()) && a.kind == AttachmentKind::Option && !is_blob_key(&a.key) {
                a.key = new_option_key();
                seen.insert(a.key.clone());
                changed = true;
            }
        }
        if changed {
            rewritten.push((row.try_get::<String, _>("message_id")?, serde_json::to_string(&attachments)?));
        }
    }
    for (message_id, attachments) in rewritten {
        sqlx::query("UPDATE messages SET attachments = $1 WHERE message_id = $2")
            .bind(attachments)
            .bind(message_id)
            .execute(&mut *conn)
            .await?;
    }
    Ok(())
}

/// What [`unique_option_keys`] needs of the server's code, copied as it was when 0008
/// was written (the protocol's `Attachment`, `blobs::is_blob_key`, `new_option_key`):
/// changing those later must not change what the step does to a database it has not
/// run on yet.
mod at_0008 {
    use serde::{Deserialize, Serialize};

    #[derive(Serialize, Deserialize)]
    #[serde(rename_all = "camelCase")]
    pub struct Attachment {
        pub key: String,
        pub label: String,
        pub kind: AttachmentKind,
        #[serde(default)]
        pub url: Option<String>,
    }

    #[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
    #[serde(rename_all = "snake_case")]
    pub enum AttachmentKind {
        Option,
        Evidence,
    }

    /// Keys of uploaded images: 32 hex digits and an image extension.
    pub fn is_blob_key(key: &str) -> bool {
        match key.split_once('.') {
            Some((id, ext)) => {
                id.len() == 32
                    && id.bytes().all(|b| b.is_ascii_hexdigit())
                    && matches!(ext, "png" | "jpg" | "webp")
            }
            None => false,
        }
    }

    pub fn new_option_key() -> String {
        format!("opt-{}", uuid::Uuid::new_v4().simple())
    }
}

/// A new id: a UUID v7, random but ordered by creation time, so the rows and index
/// entries a write adds (claim groups, messages) go next to the newest ones instead of
/// onto a random page each, which the commit would then write too.
pub fn new_id() -> String {
    uuid::Uuid::now_v7().to_string()
}

#[cfg(test)]
mod tests {
    use redline_protocol::Timestamp;

    use super::*;
    use crate::queue::item_select;
    use crate::rows::change_from_row;

    /// Opens the store at `url`, applying the migrations it lacks, and reads every item
    /// as of `now`, oldest first.
    async fn open_and_read(url: &str, now: Timestamp) -> (Store, Vec<crate::rows::StoredChange>) {
        let store = Store::open_url(url).await.unwrap();
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!("{} ORDER BY c.short_id", item_select())))
            .fetch_all(store.pool())
            .await
            .unwrap();
        let changes = rows.iter().map(|r| change_from_row(r, now).unwrap()).collect();
        (store, changes)
    }

    #[tokio::test]
    async fn captures_stored_before_0004_move_to_their_own_table() {
        install_default_drivers();
        let dir = tempfile::tempdir().unwrap();
        let url = format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display());
        let pool = AnyPool::connect(&url).await.unwrap();
        migrator(&SQLITE_MIGRATIONS[..3]).run(&pool).await.unwrap();
        (&pool)
            .execute(
                "INSERT INTO projects (project_id, name, grace_seconds, created_at) VALUES ('p', 'demo', 60, 0); \
                 INSERT INTO stages (stage_id, project_id, branch, stage_type, created_at) VALUES ('s', 'p', 'main', 'preview', 0); \
                 INSERT INTO changes (change_id, project_id, short_id, stage_id, title, status, capture, \
                     console_errors, source, created_at, payload_hash) VALUES \
                 ('a', 'p', 1, 's', 'with', 'open', '{\"stroke\":[{\"x\":1,\"y\":2}],\"elements\":[]}', '[\"boom\"]', 'extension', 0, 'h'), \
                 ('b', 'p', 2, 's', 'without', 'open', NULL, '[]', 'cli', 0, 'h')",
            )
            .await
            .unwrap();
        pool.close().await;

        let (store, changes) = open_and_read(&url, Timestamp::from_unix_millis(0)).await;
        let capture = changes[0].capture.as_ref().expect("the capture moved");
        assert_eq!(
            (capture.get(), changes[0].console_errors.as_slice()),
            (r#"{"stroke":[{"x":1,"y":2}],"elements":[]}"#, ["boom".to_owned()].as_slice())
        );
        assert_eq!((changes[1].capture.is_none(), changes[1].console_errors.len()), (true, 0));
        let moved: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM change_captures").fetch_one(store.pool()).await.unwrap();
        assert_eq!(moved, 1, "an item with nothing captured has no row");
    }

    /// A pool on a fresh database, migrated up to `version`: SQLite in `dir`, or a new
    /// database on the Postgres server `REDLINE_TEST_DATABASE_URL` names, when set.
    async fn migrated_to(dir: &tempfile::TempDir, version: usize) -> (AnyPool, String) {
        install_default_drivers();
        let (url, files) = match std::env::var("REDLINE_TEST_DATABASE_URL") {
            Ok(url) if !url.is_empty() => {
                let name = format!("redline_test_{}", uuid::Uuid::new_v4().simple());
                let admin = AnyPool::connect(&url).await.unwrap();
                (&admin).execute(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}"))).await.unwrap();
                admin.close().await;
                (format!("{}/{name}", url.rsplit_once('/').unwrap().0), POSTGRES_MIGRATIONS)
            }
            _ => (format!("sqlite://{}?mode=rwc", dir.path().join("t.db").display()), SQLITE_MIGRATIONS),
        };
        let pool = AnyPool::connect(&url).await.unwrap();
        migrator(&files[..version]).run(&pool).await.unwrap();
        (pool, url)
    }

    /// Migration 0012 carries the holds over: the items a filer still holds on a stage
    /// become one hold, held until the same moment; items whose hold ended keep showing
    /// when it did; withdrawn items (no `held_until`) are in none.
    #[tokio::test]
    async fn held_items_before_0012_keep_their_hold_one_per_filer_and_stage() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, url) = migrated_to(&dir, 11).await;
        // At 1,000,000: Ann holds 1 and 2 on stage s until 1,060,000 and 3 on stage t
        // until 1,030,000; Bob holds 4 on s until 1,020,000; Ann's 5 was released at
        // 990,000; her 6 was withdrawn.
        sqlx::raw_sql(
            "INSERT INTO projects (project_id, name, grace_seconds, created_at) VALUES ('p', 'demo', 60, 0); \
             INSERT INTO users (user_id, name, created_at) VALUES ('ann', 'Ann', 0), ('bob', 'Bob', 0); \
             INSERT INTO stages (stage_id, project_id, branch, stage_type, created_at) VALUES \
                 ('s', 'p', 'main', 'production', 0), ('t', 'p', 'next', 'preview', 0); \
             INSERT INTO changes (change_id, project_id, short_id, stage_id, title, status, source, \
                 filer_user_id, created_at, held_until, payload_hash) VALUES \
             ('c1', 'p', 1, 's', 'a', 'open', 'extension', 'ann', 0, 1060000, 'h'), \
             ('c2', 'p', 2, 's', 'b', 'open', 'extension', 'ann', 0, 1060000, 'h'), \
             ('c3', 'p', 3, 't', 'c', 'open', 'extension', 'ann', 0, 1030000, 'h'), \
             ('c4', 'p', 4, 's', 'd', 'open', 'extension', 'bob', 0, 1020000, 'h'), \
             ('c5', 'p', 5, 's', 'e', 'open', 'extension', 'ann', 0, 990000, 'h'), \
             ('c6', 'p', 6, 's', 'f', 'dismissed', 'extension', 'ann', 0, NULL, 'h')",
        )
        .execute(&pool)
        .await
        .unwrap();
        pool.close().await;

        let (store, changes) = open_and_read(&url, Timestamp::from_unix_millis(1_000_000)).await;
        let holds: Vec<(bool, Option<i64>)> =
            changes.iter().map(|c| (c.held, c.held_until.map(Timestamp::unix_millis))).collect();
        assert_eq!(
            holds,
            [
                (true, Some(1_060_000)),
                (true, Some(1_060_000)),
                (true, Some(1_030_000)),
                (true, Some(1_020_000)),
                (false, Some(990_000)),
                (false, None)
            ]
        );
        let shared: i64 =
            sqlx::query_scalar("SELECT COUNT(DISTINCT hold_id) FROM changes WHERE change_id IN ('c1', 'c2')")
                .fetch_one(store.pool())
                .await
                .unwrap();
        let holds: i64 =
            sqlx::query_scalar("SELECT COUNT(*) FROM holds").fetch_one(store.pool()).await.unwrap();
        assert_eq!((shared, holds), (1, 4), "Ann's batch on s is one hold of four");
        store.close().await;
    }

    /// Migration 0019 counts what the items filed before it captured, for the lists'
    /// summaries: elements (none without a capture or its `elements`) and console errors.
    #[tokio::test]
    async fn items_filed_before_0019_get_their_counts() {
        let dir = tempfile::tempdir().unwrap();
        let (pool, url) = migrated_to(&dir, 18).await;
        (&pool)
            .execute(
                "INSERT INTO projects (project_id, name, grace_seconds, created_at) VALUES ('p', 'demo', 60, 0); \
                 INSERT INTO stages (stage_id, project_id, branch, stage_type, created_at) VALUES ('s', 'p', 'main', 'preview', 0); \
                 INSERT INTO changes (change_id, project_id, short_id, stage_id, title, status, source, created_at, \
                     payload_hash) VALUES ('a', 'p', 1, 's', 't', 'open', 'cli', 0, 'h'), \
                     ('b', 'p', 2, 's', 't', 'open', 'cli', 0, 'h'), ('c', 'p', 3, 's', 't', 'open', 'cli', 0, 'h'), \
                     ('d', 'p', 4, 's', 't', 'open', 'cli', 0, 'h'); \
                 INSERT INTO change_captures (change_id, capture, console_errors) VALUES \
                     ('a', '{\"elements\":[{\"tag\":\"a\"},{\"tag\":\"b\"}]}', '[\"x\",\"y\",\"z\"]'), \
                     ('b', NULL, '[\"x\"]'), ('c', '{\"stroke\":[],\"elements\":null}', '[]')",
            )
            .await
            .unwrap();
        pool.close().await;
        let store = Store::open_url(&url).await.unwrap();
        let counts: Vec<(i64, i64)> =
            sqlx::query("SELECT element_count, console_error_count FROM changes ORDER BY short_id")
                .fetch_all(store.pool())
                .await
                .unwrap()
                .iter()
                .map(|r| (r.get("element_count"), r.get("console_error_count")))
                .collect();
        assert_eq!(counts, [(2, 3), (0, 1), (0, 0), (0, 0)]);
        store.close().await;
    }
}

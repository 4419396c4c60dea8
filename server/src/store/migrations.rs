//! The migrations (`migrations/sqlite/` and `migrations/postgres/`), embedded, numbered
//! and forward-only: an applied migration whose text changed stops the server with its
//! file name. What a migration cannot say in SQL on both engines is a data step in Rust,
//! run once right after its migration and recorded in `data_steps`; a data step is
//! frozen once written (it calls no code the server may change later).

use std::collections::HashSet;

use anyhow::Context;
use sqlx::migrate::{MigrateError, Migration, MigrationType, Migrator};
use sqlx::{AnyConnection, AnyPool, Row, SqlSafeStr};

use super::Backend;

/// `(version, file name, sql)` of each migration, in order, per engine.
const SQLITE_MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "0001_init.sql", include_str!("../../migrations/sqlite/0001_init.sql")),
    (2, "0002_cli_auth.sql", include_str!("../../migrations/sqlite/0002_cli_auth.sql")),
    (3, "0003_blob_attached.sql", include_str!("../../migrations/sqlite/0003_blob_attached.sql")),
    (4, "0004_change_captures.sql", include_str!("../../migrations/sqlite/0004_change_captures.sql")),
    (5, "0005_token_lifetimes.sql", include_str!("../../migrations/sqlite/0005_token_lifetimes.sql")),
    (6, "0006_group_index.sql", include_str!("../../migrations/sqlite/0006_group_index.sql")),
    (7, "0007_message_types.sql", include_str!("../../migrations/sqlite/0007_message_types.sql")),
    (8, "0008_unique_option_keys.sql", include_str!("../../migrations/sqlite/0008_unique_option_keys.sql")),
    (9, "0009_verified.sql", include_str!("../../migrations/sqlite/0009_verified.sql")),
    (10, "0010_sign_in_secrets.sql", include_str!("../../migrations/sqlite/0010_sign_in_secrets.sql")),
    (11, "0011_project_storage.sql", include_str!("../../migrations/sqlite/0011_project_storage.sql")),
    (12, "0012_holds.sql", include_str!("../../migrations/sqlite/0012_holds.sql")),
    (13, "0013_blob_chunks.sql", include_str!("../../migrations/sqlite/0013_blob_chunks.sql")),
    (14, "0014_shown_messages.sql", include_str!("../../migrations/sqlite/0014_shown_messages.sql")),
    (15, "0015_agent_presence.sql", include_str!("../../migrations/sqlite/0015_agent_presence.sql")),
    (16, "0016_change_links.sql", include_str!("../../migrations/sqlite/0016_change_links.sql")),
    (17, "0017_webhooks.sql", include_str!("../../migrations/sqlite/0017_webhooks.sql")),
    (18, "0018_sign_in_origin.sql", include_str!("../../migrations/sqlite/0018_sign_in_origin.sql")),
    (19, "0019_list_summaries.sql", include_str!("../../migrations/sqlite/0019_list_summaries.sql")),
    (20, "0020_bounds_and_owners.sql", include_str!("../../migrations/sqlite/0020_bounds_and_owners.sql")),
    (21, "0021_group_tokens.sql", include_str!("../../migrations/sqlite/0021_group_tokens.sql")),
    (22, "0022_refinds.sql", include_str!("../../migrations/sqlite/0022_refinds.sql")),
];
const POSTGRES_MIGRATIONS: &[(i64, &str, &str)] = &[
    (1, "0001_init.sql", include_str!("../../migrations/postgres/0001_init.sql")),
    (2, "0002_cli_auth.sql", include_str!("../../migrations/postgres/0002_cli_auth.sql")),
    (3, "0003_blob_attached.sql", include_str!("../../migrations/postgres/0003_blob_attached.sql")),
    (4, "0004_change_captures.sql", include_str!("../../migrations/postgres/0004_change_captures.sql")),
    (5, "0005_token_lifetimes.sql", include_str!("../../migrations/postgres/0005_token_lifetimes.sql")),
    (6, "0006_group_index.sql", include_str!("../../migrations/postgres/0006_group_index.sql")),
    (7, "0007_message_types.sql", include_str!("../../migrations/postgres/0007_message_types.sql")),
    (8, "0008_unique_option_keys.sql", include_str!("../../migrations/postgres/0008_unique_option_keys.sql")),
    (9, "0009_verified.sql", include_str!("../../migrations/postgres/0009_verified.sql")),
    (10, "0010_sign_in_secrets.sql", include_str!("../../migrations/postgres/0010_sign_in_secrets.sql")),
    (11, "0011_project_storage.sql", include_str!("../../migrations/postgres/0011_project_storage.sql")),
    (12, "0012_holds.sql", include_str!("../../migrations/postgres/0012_holds.sql")),
    (13, "0013_blob_chunks.sql", include_str!("../../migrations/postgres/0013_blob_chunks.sql")),
    (14, "0014_shown_messages.sql", include_str!("../../migrations/postgres/0014_shown_messages.sql")),
    (15, "0015_agent_presence.sql", include_str!("../../migrations/postgres/0015_agent_presence.sql")),
    (16, "0016_change_links.sql", include_str!("../../migrations/postgres/0016_change_links.sql")),
    (17, "0017_webhooks.sql", include_str!("../../migrations/postgres/0017_webhooks.sql")),
    (18, "0018_sign_in_origin.sql", include_str!("../../migrations/postgres/0018_sign_in_origin.sql")),
    (19, "0019_list_summaries.sql", include_str!("../../migrations/postgres/0019_list_summaries.sql")),
    (20, "0020_bounds_and_owners.sql", include_str!("../../migrations/postgres/0020_bounds_and_owners.sql")),
    (21, "0021_group_tokens.sql", include_str!("../../migrations/postgres/0021_group_tokens.sql")),
    (22, "0022_refinds.sql", include_str!("../../migrations/postgres/0022_refinds.sql")),
];

/// What a migration needs done in Rust, as `(version, step)`: each runs once, right after
/// SQL migration `version` (before any later one, whose schema it was not written for),
/// and is recorded in `data_steps`.
const DATA_STEPS: &[(i64, DataStep)] = &[(8, DataStep::UniqueOptionKeys)];

/// Applies the migrations `pool` lacks, and each data step right after its migration.
pub async fn run(pool: &AnyPool, backend: Backend) -> anyhow::Result<()> {
    let files = match backend {
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
        migrator.run_to(version, pool).await.map_err(explain)?;
        step.run_once(pool).await.with_context(|| format!("data step {}", step.name()))?;
    }
    migrator.run(pool).await.map_err(explain)
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

#[cfg(test)]
mod tests {
    use redline_protocol::Timestamp;

    use sqlx::Executor;
    use sqlx::any::install_default_drivers;

    use super::*;
    use crate::queue::item_select;
    use crate::store::Store;
    use crate::store::rows::change_from_row;

    /// Opens the store at `url`, applying the migrations it lacks, and reads every item
    /// as of `now`, oldest first.
    async fn open_and_read(url: &str, now: Timestamp) -> (Store, Vec<crate::store::rows::StoredChange>) {
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

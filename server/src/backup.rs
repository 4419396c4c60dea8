//! `redline backup --to FILE`: a consistent copy of a SQLite store, taken while a
//! server may be serving from it.
//!
//! SQLite's `VACUUM INTO` reads the whole database inside one read transaction (in WAL
//! mode that does not hold up the server's writes) and writes a compact copy of that
//! snapshot: every write committed before the backup began is in it, and no write is in
//! it in part. The copy is written to a new file beside FILE (created `0600`: the store
//! holds token hashes and the key that signs image links), flushed to disk (SQLite does
//! not sync it), and only then linked as FILE, so FILE is never a partial copy and is
//! never written over. Postgres stores are refused: `pg_dump` does this for them.

use std::path::{Path, PathBuf};
use std::str::FromStr;

use anyhow::{Context, bail};
use serde::Serialize;
use sqlx::sqlite::{SqliteConnectOptions, SqliteConnection};
use sqlx::{Connection, Row};

/// Where the store to copy is.
pub enum Source<'a> {
    /// `DIR/redline.db`.
    Dir(&'a Path),
    /// A `--database-url`.
    Url(&'a str),
}

/// What a backup wrote.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Backup {
    pub file: PathBuf,
    pub bytes: u64,
    /// Items in the copy.
    pub changes: i64,
}

/// Copies the store at `source` to `to`, which must not exist.
pub async fn run(source: Source<'_>, to: &Path) -> anyhow::Result<Backup> {
    let options = match source {
        Source::Url(url) if url.starts_with("postgres:") || url.starts_with("postgresql:") => bail!(
            "redline backup copies a SQLite store; for a Postgres database use pg_dump \
             (e.g. `pg_dump --format=custom --file FILE URL`, restored with pg_restore)"
        ),
        Source::Url(url) if url.starts_with("sqlite:") => {
            SqliteConnectOptions::from_str(url).context("reading the database URL")?.create_if_missing(false)
        }
        Source::Url(_) => bail!("unsupported database URL scheme (expected sqlite: or postgres:)"),
        Source::Dir(dir) => {
            let file = dir.join("redline.db");
            if !file.exists() {
                bail!("there is no store at {} (is --data right?)", file.display());
            }
            SqliteConnectOptions::new().filename(file).create_if_missing(false)
        }
    };
    if to.exists() {
        bail!("{} already exists; a backup never overwrites a file (choose a new name)", to.display());
    }
    let dir = match to.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
        _ => PathBuf::from("."),
    };
    if !dir.is_dir() {
        bail!("{} is not a folder; make it first", dir.display());
    }
    let name = to.file_name().context("--to must name a file")?.to_string_lossy().into_owned();
    let partial = dir.join(format!(".{name}.partial-{}", std::process::id()));
    let result = copy(options, &partial, to).await;
    // Gone once linked as FILE; left over only if the copy failed.
    let _ = std::fs::remove_file(&partial);
    let changes = result?;
    sync_dir(&dir)?;
    let bytes = std::fs::metadata(to).with_context(|| format!("reading {}", to.display()))?.len();
    Ok(Backup { file: to.to_path_buf(), bytes, changes })
}

async fn copy(options: SqliteConnectOptions, partial: &Path, to: &Path) -> anyhow::Result<i64> {
    // `VACUUM INTO` accepts an empty file, so the copy gets this file's permissions.
    new_private_file(partial)?;
    let mut conn = SqliteConnection::connect_with(&options).await.context("opening the store")?;
    let into = partial.to_str().context("the backup's path must be valid UTF-8")?;
    sqlx::query("VACUUM INTO $1").bind(into).execute(&mut conn).await.context("copying the store")?;
    conn.close().await?;
    std::fs::File::open(partial)
        .and_then(|f| f.sync_all())
        .with_context(|| format!("flushing {}", partial.display()))?;
    let changes = check(partial).await?;
    // A hard link, unlike a rename, fails when FILE has appeared meanwhile.
    std::fs::hard_link(partial, to).with_context(|| match to.exists() {
        true => format!("{} already exists; a backup never overwrites a file", to.display()),
        false => format!("creating {}", to.display()),
    })?;
    Ok(changes)
}

/// Opens the copy on its own and checks it is a sound database; returns its item count.
async fn check(file: &Path) -> anyhow::Result<i64> {
    // Read-write, so a copy in WAL mode gets its `-wal` and `-shm` files, which closing
    // the connection removes again.
    let options = SqliteConnectOptions::new().filename(file);
    let mut conn = SqliteConnection::connect_with(&options).await.context("opening the copy")?;
    let verdict: String = sqlx::query("PRAGMA integrity_check")
        .fetch_one(&mut conn)
        .await
        .context("checking the copy")?
        .try_get(0)?;
    if verdict != "ok" {
        bail!("the copy failed SQLite's integrity check: {verdict}");
    }
    let changes: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM changes")
        .fetch_one(&mut conn)
        .await
        .context("counting the copy's items")?;
    conn.close().await?;
    Ok(changes)
}

fn new_private_file(path: &Path) -> anyhow::Result<()> {
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    options.open(path).with_context(|| format!("creating {}", path.display()))?;
    Ok(())
}

/// Makes the new directory entry durable (Unix; elsewhere a no-op).
fn sync_dir(dir: &Path) -> anyhow::Result<()> {
    #[cfg(unix)]
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .with_context(|| format!("flushing {}", dir.display()))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

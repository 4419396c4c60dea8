//! The data a server keeps, and the commands that work on it directly: where the store
//! and the images are (`--data`, `--database-url`, `--blob-store`), `blobs gc`,
//! `blobs copy` and `backup`.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use clap::{Args, Subcommand};
use redline_server::store::blobs::{BlobStore, BlobStoreSpec, Blobs, copy_missing};
use redline_server::{Clock, Store, backup};

use crate::output::print;

#[derive(Args)]
pub struct StoreArgs {
    /// The data directory: SQLite database `redline.db` and uploaded images.
    #[arg(long, global = true, default_value = ".redline", env = "REDLINE_DATA")]
    pub data: PathBuf,
    /// A database URL instead of `DIR/redline.db` (`sqlite://…`).
    #[arg(long, global = true, env = "REDLINE_DATABASE_URL")]
    database_url: Option<String>,
}

impl StoreArgs {
    pub async fn open(&self) -> anyhow::Result<Store> {
        match &self.database_url {
            Some(url) => Store::open_url(url).await,
            None => Store::open_dir(&self.data).await,
        }
    }
}

#[derive(Args)]
pub struct BlobArgs {
    /// Where uploaded images are kept: `folder` (DIR/blobs), `database` (in the
    /// database itself) or `s3://bucket/prefix` (S3-compatible storage, configured by the
    /// usual AWS_* variables: AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, …).
    /// Default: database on Postgres, folder on SQLite. Every server process of one
    /// database must name the same.
    #[arg(long, global = true, env = "REDLINE_BLOB_STORE", value_name = "STORE",
          value_parser = |s: &str| BlobStoreSpec::parse(s).map_err(|e| e.to_string()))]
    blob_store: Option<BlobStoreSpec>,
}

impl BlobArgs {
    pub async fn open(&self, store: &Store, data: &Path) -> anyhow::Result<Arc<dyn BlobStore>> {
        BlobStoreSpec::open(self.blob_store.as_ref(), store, data.join("blobs")).await
    }
}

#[derive(Subcommand)]
pub enum BlobsCommand {
    /// Delete the images nothing refers to (uploaded but never filed or attached, or
    /// stored by a write that failed) once they are older than --older-than. A running
    /// server does the same every hour for images a day old.
    Gc {
        /// How old an image nothing refers to must be to go (`36h`, `2days`, `90m`).
        #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
        older_than: std::time::Duration,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        blobs: BlobArgs,
    },
    /// Copy every image of another store that this one lacks: before moving a
    /// deployment's images (e.g. a Postgres deployment from before images were kept in
    /// the database: `--from folder`, into the default store).
    Copy {
        /// The store to copy from: folder, database or s3://bucket/prefix.
        #[arg(long, value_name = "STORE",
              value_parser = |s: &str| BlobStoreSpec::parse(s).map_err(|e| e.to_string()))]
        from: BlobStoreSpec,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        blobs: BlobArgs,
    },
}

impl BlobsCommand {
    pub async fn run(self, json: bool) -> anyhow::Result<()> {
        match self {
            BlobsCommand::Gc { older_than, store, blobs } => collect(older_than, store, blobs, json).await,
            BlobsCommand::Copy { from, store, blobs } => copy(from, store, blobs, json).await,
        }
    }
}

async fn collect(
    older_than: std::time::Duration,
    args: StoreArgs,
    blobs: BlobArgs,
    json: bool,
) -> anyhow::Result<()> {
    let store = args.open().await?;
    let images = blobs.open(&store, &args.data).await?;
    let place = images.describe();
    let gone = Blobs::open(&store, images).await?.collect(&store, Clock::System.now(), older_than).await?;
    print(json, &gone, || {
        format!(
            "deleted {} images nothing referred to and {} stored without a record, from {place}",
            gone.unreferenced, gone.orphans
        )
    });
    Ok(())
}

async fn copy(from: BlobStoreSpec, args: StoreArgs, blobs: BlobArgs, json: bool) -> anyhow::Result<()> {
    let store = args.open().await?;
    let source = BlobStoreSpec::open(Some(&from), &store, args.data.join("blobs")).await?;
    let target = blobs.open(&store, &args.data).await?;
    let copied = copy_missing(&*source, &*target).await?;
    print(json, &serde_json::json!({ "copied": copied }), || {
        format!("copied {copied} images from {} to {}", source.describe(), target.describe())
    });
    Ok(())
}

/// `redline backup --to FILE`.
pub async fn back_up(to: &Path, store: &StoreArgs, json: bool) -> anyhow::Result<()> {
    let source = match &store.database_url {
        Some(url) => backup::Source::Url(url),
        None => backup::Source::Dir(&store.data),
    };
    let b = backup::run(source, to).await?;
    print(json, &b, || format!("backed up {} items to {} ({} bytes)", b.changes, b.file.display(), b.bytes));
    Ok(())
}

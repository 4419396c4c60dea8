//! Where an image's bytes live, behind one trait: a folder (`DIR/blobs`, the default on
//! SQLite), the database (table `blob_chunks`, the default on Postgres, so every server
//! process on it reads every image) or S3-compatible object storage. The `blobs` table
//! records which keys exist, whose they are and what they count against the quota;
//! a store only holds bytes.
//!
//! Reads are streams of chunks, never a whole image in memory.

use std::fmt;
use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use anyhow::{Context, bail};
use async_trait::async_trait;
use bytes::Bytes;
use futures_util::stream::{self, BoxStream};
use futures_util::{StreamExt, TryStreamExt};
use object_store::aws::{AmazonS3, AmazonS3Builder};
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use redline_protocol::Timestamp;
use sqlx::Row;
use tokio_util::io::ReaderStream;

use super::is_blob_key;
use crate::store::Store;

/// An image's bytes as they are read.
pub type Chunks = BoxStream<'static, io::Result<Bytes>>;

/// The size of the chunks a read sends, and of the database's rows.
pub const CHUNK_BYTES: usize = 256 * 1024;

/// The bytes of images, by key. Keys are [`is_blob_key`] names, each written once.
#[async_trait]
pub trait BlobStore: Send + Sync + fmt::Debug {
    /// Stores a new key's bytes; once this returns they are durable.
    async fn put(&self, key: &str, bytes: Bytes) -> io::Result<()>;

    /// The bytes of `key` as they are read, or `None` when there are none.
    async fn get(&self, key: &str) -> io::Result<Option<Chunks>>;

    /// Removes `key`'s bytes; a key with none is not an error.
    async fn delete(&self, key: &str) -> io::Result<()>;

    /// Every key stored, with when it was stored.
    async fn list(&self) -> io::Result<Vec<(String, Timestamp)>>;

    /// Where the bytes are, for logs (no secrets).
    fn describe(&self) -> String;
}

/// Which store `redline serve --blob-store` names.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BlobStoreSpec {
    /// `folder`: `DIR/blobs`.
    Folder,
    /// `database`: the store's own database.
    Database,
    /// `s3://bucket/prefix`.
    S3 { bucket: String, prefix: String },
}

impl BlobStoreSpec {
    pub fn parse(spec: &str) -> anyhow::Result<BlobStoreSpec> {
        match spec.trim() {
            "folder" => Ok(BlobStoreSpec::Folder),
            "database" => Ok(BlobStoreSpec::Database),
            other => {
                let Some(rest) = other.strip_prefix("s3://") else {
                    bail!("--blob-store {other:?}: expected folder, database or s3://bucket/prefix");
                };
                let (bucket, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                if bucket.is_empty() {
                    bail!("--blob-store {other:?}: the bucket is missing (s3://bucket/prefix)");
                }
                Ok(BlobStoreSpec::S3 {
                    bucket: bucket.to_owned(),
                    prefix: prefix.trim_matches('/').to_owned(),
                })
            }
        }
    }

    /// The store named, or with none named the database's default: Postgres keeps
    /// images in the database (a deployment of several processes needs nothing else),
    /// SQLite in `folder`.
    pub async fn open(
        spec: Option<&BlobStoreSpec>,
        store: &Store,
        folder: PathBuf,
    ) -> anyhow::Result<Arc<dyn BlobStore>> {
        let spec = spec.cloned().unwrap_or(match store.postgres_url() {
            Some(_) => BlobStoreSpec::Database,
            None => BlobStoreSpec::Folder,
        });
        Ok(match spec {
            BlobStoreSpec::Folder => Arc::new(Folder::open(folder).await?),
            BlobStoreSpec::Database => Arc::new(Database { store: store.clone() }),
            BlobStoreSpec::S3 { bucket, prefix } => Arc::new(S3::open(&bucket, &prefix)?),
        })
    }
}

/// Copies every image `from` holds that `to` lacks (moving a deployment's images to
/// another store); returns how many. One image at a time is in memory.
pub async fn copy_missing(from: &dyn BlobStore, to: &dyn BlobStore) -> io::Result<usize> {
    let mut copied = 0;
    for (key, _) in from.list().await? {
        if to.get(&key).await?.is_some() {
            continue;
        }
        // Gone meanwhile: a collection deleted it.
        let Some(chunks) = from.get(&key).await? else { continue };
        let bytes: Vec<Bytes> = chunks.try_collect().await?;
        to.put(&key, bytes.concat().into()).await?;
        copied += 1;
    }
    Ok(copied)
}

fn system_now() -> Timestamp {
    let millis = SystemTime::now().duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis());
    Timestamp::from_unix_millis(millis as i64)
}

/// Images as files in a folder of this machine.
#[derive(Debug)]
pub struct Folder {
    dir: PathBuf,
}

impl Folder {
    pub async fn open(dir: PathBuf) -> anyhow::Result<Folder> {
        crate::store::private::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
        Ok(Folder { dir })
    }
}

#[async_trait]
impl BlobStore for Folder {
    async fn put(&self, key: &str, bytes: Bytes) -> io::Result<()> {
        // Written aside and renamed: a reader never sees half an image.
        let tmp = self.dir.join(format!(".{key}.tmp"));
        let mut file = crate::store::private::file_options().open(&tmp).await?;
        tokio::io::AsyncWriteExt::write_all(&mut file, &bytes).await?;
        file.sync_data().await?;
        drop(file);
        let renamed = tokio::fs::rename(&tmp, self.dir.join(key)).await;
        if renamed.is_err() {
            let _ = tokio::fs::remove_file(&tmp).await;
        }
        renamed
    }

    async fn get(&self, key: &str) -> io::Result<Option<Chunks>> {
        match tokio::fs::File::open(self.dir.join(key)).await {
            Ok(file) => Ok(Some(ReaderStream::with_capacity(file, CHUNK_BYTES).boxed())),
            Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    }

    async fn delete(&self, key: &str) -> io::Result<()> {
        match tokio::fs::remove_file(self.dir.join(key)).await {
            Err(e) if e.kind() != io::ErrorKind::NotFound => Err(e),
            _ => Ok(()),
        }
    }

    async fn list(&self) -> io::Result<Vec<(String, Timestamp)>> {
        let mut entries = tokio::fs::read_dir(&self.dir).await?;
        let mut keys = Vec::new();
        while let Some(entry) = entries.next_entry().await? {
            let Some(key) = entry.file_name().to_str().filter(|k| is_blob_key(k)).map(str::to_owned) else {
                continue;
            };
            // Deleted since the folder was read (a refused write's image, a collection):
            // not stored any more, so not listed.
            let metadata = match entry.metadata().await {
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                metadata => metadata?,
            };
            let modified = metadata.modified()?;
            let millis = modified.duration_since(SystemTime::UNIX_EPOCH).map_or(0, |d| d.as_millis());
            keys.push((key, Timestamp::from_unix_millis(millis as i64)));
        }
        Ok(keys)
    }

    fn describe(&self) -> String {
        format!("folder {}", self.dir.display())
    }
}

/// Images in the database, in rows of [`CHUNK_BYTES`]: a read takes one row at a time.
#[derive(Debug)]
pub struct Database {
    store: Store,
}

fn db_error(e: sqlx::Error) -> io::Error {
    io::Error::other(e)
}

impl Database {
    async fn chunk(store: &Store, key: &str, seq: i64) -> io::Result<Option<Bytes>> {
        let row = sqlx::query("SELECT bytes FROM blob_chunks WHERE blob_key = $1 AND seq = $2")
            .bind(key)
            .bind(seq)
            .fetch_optional(store.pool())
            .await
            .map_err(db_error)?;
        row.map(|r| r.try_get::<Vec<u8>, _>("bytes").map(Bytes::from)).transpose().map_err(db_error)
    }
}

#[async_trait]
impl BlobStore for Database {
    async fn put(&self, key: &str, bytes: Bytes) -> io::Result<()> {
        // On the pool, not in a queue write: an image is written before a write's turn.
        let created_at = system_now().unix_millis();
        let mut tx = self.store.begin_write().await.map_err(db_error)?;
        // An empty image still has its first row, which is what says it exists.
        for (seq, chunk) in bytes.chunks(CHUNK_BYTES).chain(bytes.is_empty().then_some(&[][..])).enumerate() {
            sqlx::query("INSERT INTO blob_chunks (blob_key, seq, created_at, bytes) VALUES ($1, $2, $3, $4)")
                .bind(key)
                .bind(seq as i64)
                .bind(created_at)
                .bind(chunk.to_vec())
                .execute(&mut *tx)
                .await
                .map_err(db_error)?;
        }
        tx.commit().await.map_err(db_error)
    }

    async fn get(&self, key: &str) -> io::Result<Option<Chunks>> {
        let Some(first) = Database::chunk(&self.store, key, 0).await? else { return Ok(None) };
        let (store, key) = (self.store.clone(), key.to_owned());
        let rest = stream::try_unfold(1, move |seq| {
            let (store, key) = (store.clone(), key.clone());
            async move { Ok(Database::chunk(&store, &key, seq).await?.map(|chunk| (chunk, seq + 1))) }
        });
        Ok(Some(stream::once(async { Ok(first) }).chain(rest).boxed()))
    }

    async fn delete(&self, key: &str) -> io::Result<()> {
        sqlx::query("DELETE FROM blob_chunks WHERE blob_key = $1")
            .bind(key)
            .execute(self.store.pool())
            .await
            .map_err(db_error)?;
        Ok(())
    }

    async fn list(&self) -> io::Result<Vec<(String, Timestamp)>> {
        let rows = sqlx::query("SELECT blob_key, created_at FROM blob_chunks WHERE seq = 0")
            .fetch_all(self.store.pool())
            .await
            .map_err(db_error)?;
        rows.iter()
            .map(|r| Ok((r.try_get("blob_key")?, Timestamp::from_unix_millis(r.try_get("created_at")?))))
            .collect::<Result<_, sqlx::Error>>()
            .map_err(db_error)
    }

    fn describe(&self) -> String {
        "the database".to_owned()
    }
}

/// Images in an S3-compatible bucket, under a prefix. Credentials, region and endpoint
/// come from the usual `AWS_*` variables (`AWS_ENDPOINT_URL` for a store other than
/// AWS, `AWS_ALLOW_HTTP=true` for one without TLS).
#[derive(Debug)]
pub struct S3 {
    bucket: String,
    prefix: String,
    client: AmazonS3,
}

fn s3_error(e: object_store::Error) -> io::Error {
    io::Error::other(e)
}

impl S3 {
    pub fn open(bucket: &str, prefix: &str) -> anyhow::Result<S3> {
        let client = AmazonS3Builder::from_env()
            .with_bucket_name(bucket)
            .build()
            .with_context(|| format!("configuring the S3 store s3://{bucket}/{prefix}"))?;
        Ok(S3 { bucket: bucket.to_owned(), prefix: prefix.to_owned(), client })
    }

    fn path(&self, key: &str) -> ObjectPath {
        ObjectPath::from(self.prefix.as_str()).join(key)
    }
}

#[async_trait]
impl BlobStore for S3 {
    async fn put(&self, key: &str, bytes: Bytes) -> io::Result<()> {
        self.client.put(&self.path(key), PutPayload::from_bytes(bytes)).await.map_err(s3_error)?;
        Ok(())
    }

    async fn get(&self, key: &str) -> io::Result<Option<Chunks>> {
        match self.client.get(&self.path(key)).await {
            Ok(got) => Ok(Some(got.into_stream().map_err(s3_error).boxed())),
            Err(object_store::Error::NotFound { .. }) => Ok(None),
            Err(e) => Err(s3_error(e)),
        }
    }

    async fn delete(&self, key: &str) -> io::Result<()> {
        match self.client.delete(&self.path(key)).await {
            Ok(()) | Err(object_store::Error::NotFound { .. }) => Ok(()),
            Err(e) => Err(s3_error(e)),
        }
    }

    async fn list(&self) -> io::Result<Vec<(String, Timestamp)>> {
        let prefix = ObjectPath::from(self.prefix.as_str());
        let objects: Vec<_> = self.client.list(Some(&prefix)).try_collect().await.map_err(s3_error)?;
        Ok(objects
            .into_iter()
            .filter_map(|o| {
                // Only images right under the prefix: what else the bucket holds is not ours.
                let key = o.location.filename().filter(|k| is_blob_key(k))?.to_owned();
                (o.location == self.path(&key))
                    .then(|| (key, Timestamp::from_unix_millis(o.last_modified.timestamp_millis())))
            })
            .collect())
    }

    fn describe(&self) -> String {
        format!("s3://{}/{}", self.bucket, self.prefix)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blob_store_specs_parse() {
        assert_eq!(BlobStoreSpec::parse("folder").unwrap(), BlobStoreSpec::Folder);
        assert_eq!(BlobStoreSpec::parse(" database ").unwrap(), BlobStoreSpec::Database);
        let s3 =
            |bucket: &str, prefix: &str| BlobStoreSpec::S3 { bucket: bucket.into(), prefix: prefix.into() };
        assert_eq!(BlobStoreSpec::parse("s3://shots/redline/prod/").unwrap(), s3("shots", "redline/prod"));
        assert_eq!(BlobStoreSpec::parse("s3://shots").unwrap(), s3("shots", ""));
        let refused = |spec: &str| BlobStoreSpec::parse(spec).unwrap_err().to_string();
        assert!(refused("s3:///prefix").contains("the bucket is missing"));
        assert!(refused("/var/redline/blobs").contains("expected folder, database or s3://bucket/prefix"));
    }
}

//! Images: uploaded screenshots and thread attachments. Their bytes live in a
//! [`BlobStore`] (a folder, the database or S3-compatible storage, see `backends`), the
//! `blobs` table records them; read outputs link them as signed, expiring URLs
//! `GET /blobs/{key}?exp=..&sig=..` (the URL is the capability, so `<img>` works
//! without a bearer header; `crate::http::blobs` serves them). The signing secret is
//! kept in the database, so a link one server process made works on every process of
//! the same database.
//!
//! A folder or a bucket may be shared by deployments of different databases, each of
//! which knows only its own images. So every key this deployment makes starts with its
//! tag (made at its database's first start and kept in `settings`), and collecting
//! deletes stored bytes no row records only when they carry that tag: another
//! deployment's images, and those stored before keys were tagged, are never deleted as
//! orphans.

pub(crate) mod backends;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit, Mac};
use redline_protocol::{IMAGE_MAX_BYTES, ImageType, Timestamp};
use serde::Serialize;
use sha2::Sha256;
use sqlx::{AnyConnection, Row};

pub use self::backends::{BlobStore, BlobStoreSpec, CHUNK_BYTES, Chunks, Database, Folder, S3, copy_missing};
use crate::clock::Clock;
use crate::error::ApiError;
use crate::store::{Store, hex};

/// How long a signed link works.
pub const URL_LIFETIME: Duration = Duration::from_secs(3600);

/// How long an uploaded image waits to be referred to (filed, attached) before it is
/// deleted, by default.
pub const UNATTACHED_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// An image as an input carries it: the input field (for error messages), the declared
/// content type, and the base64 bytes.
pub struct ImageInput {
    pub field: &'static str,
    pub content_type: String,
    pub base64: String,
}

/// A checked image, decoded.
pub struct Image {
    bytes: Vec<u8>,
    kind: ImageType,
}

/// A `screenshotKey` that names no upload of the project: 404 naming the field, as for
/// any other name of something that is not there. (A 400 would refuse what the OpenAPI
/// document allows: no schema can say which keys exist.)
pub fn unknown_screenshot_key() -> ApiError {
    ApiError::not_found("screenshotKey: no uploaded image has this key (use uploadShot)")
}

/// Checks and decodes an image, on a blocking thread (an 8 MiB image is milliseconds of
/// work): every write calls it before its turn, never in it. 415 for a type other than
/// png/jpeg/webp or bytes that are not what `contentType` says, 413 over 8 MiB, 400
/// (naming the field) for bad base64. A `data:` URL is accepted as well.
pub async fn decode(image: ImageInput) -> Result<Image, ApiError> {
    tokio::task::spawn_blocking(move || decode_now(&image)).await.map_err(ApiError::internal)?
}

pub(crate) fn decode_now(image: &ImageInput) -> Result<Image, ApiError> {
    let ImageInput { field, content_type, base64: image_base64 } = image;
    let declared = ImageType::from_content_type(content_type).ok_or_else(|| {
        ApiError::unsupported_media(format!("contentType {content_type:?}: expected png, jpeg or webp"))
    })?;
    // A `data:` URL's base64 follows its first comma (the pattern `/openapi.json` states).
    let data = match image_base64.strip_prefix("data:") {
        Some(url) => match url.split_once(',') {
            Some((meta, b64)) if meta.ends_with(";base64") => b64,
            _ => return Err(ApiError::bad_input(field, "a data: URL must be `data:…;base64,…`")),
        },
        None => image_base64.as_str(),
    }
    .trim();
    // Base64 is 4/3 of the bytes: refuse an oversize image before decoding it.
    if data.len() / 4 * 3 > IMAGE_MAX_BYTES + 3 {
        return Err(ApiError::too_large(format!("{field}: images are limited to {IMAGE_MAX_BYTES} bytes")));
    }
    let bytes = STANDARD.decode(data).map_err(|e| ApiError::bad_input(field, format!("not base64 ({e})")))?;
    if bytes.len() > IMAGE_MAX_BYTES {
        return Err(ApiError::too_large(format!("{field}: images are limited to {IMAGE_MAX_BYTES} bytes")));
    }
    if ImageType::sniff(&bytes) != Some(declared) {
        return Err(ApiError::unsupported_media(format!(
            "{field}: the bytes are not a {} image",
            declared.content_type()
        )));
    }
    Ok(Image { bytes, kind: declared })
}

/// An image's bytes, stored and not yet recorded for good: dropped, they are removed
/// (a write that failed after storing them leaves nothing behind; a process that died
/// meanwhile leaves them to [`Blobs::collect`]). [`Written::keep`] once the row that
/// records them is committed.
#[derive(Debug)]
pub struct Written {
    store: Arc<dyn BlobStore>,
    key: String,
    size: i64,
    kind: ImageType,
    kept: bool,
}

impl Written {
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The row recording it is committed: keep the file. Returns its key.
    pub fn keep(mut self) -> String {
        self.kept = true;
        std::mem::take(&mut self.key)
    }
}

impl Drop for Written {
    fn drop(&mut self) {
        if self.kept {
            return;
        }
        let (store, key) = (self.store.clone(), std::mem::take(&mut self.key));
        // Removed in the background: a drop cannot wait, and the write's answer need not.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                if let Err(e) = store.delete(&key).await {
                    tracing::warn!(error = %e, key, "removing an image no write recorded");
                }
            });
        }
    }
}

/// The 413 of a write that would take a project over its storage quota.
fn over_quota(quota_bytes: i64, adding: i64) -> ApiError {
    ApiError::too_large(format!(
        "this project's storage quota of {} MB is full: {adding} more bytes do not fit (ask the server's \
         operator for a larger --project-quota-mb, or delete items)",
        quota_bytes / (1024 * 1024)
    ))
}

/// Adds `bytes` to what `project_id` stores, unless that would take it over
/// `quota_bytes` (413, nothing added).
pub async fn charge(
    conn: &mut AnyConnection,
    project_id: &str,
    bytes: i64,
    quota_bytes: i64,
) -> Result<(), ApiError> {
    let charged = sqlx::query(
        "UPDATE projects SET stored_bytes = stored_bytes + $2 WHERE project_id = $1 AND stored_bytes + $2 <= $3",
    )
    .bind(project_id)
    .bind(bytes)
    .bind(quota_bytes)
    .execute(conn)
    .await?
    .rows_affected();
    if charged == 1 { Ok(()) } else { Err(over_quota(quota_bytes, bytes)) }
}

/// Checks what a write's statement returned as the project's stored bytes after adding
/// `added`: 413 if that took it over `quota_bytes` (the write is then undone).
pub fn check_quota(stored_bytes: i64, added: i64, quota_bytes: i64) -> Result<(), ApiError> {
    if added > 0 && stored_bytes > quota_bytes { Err(over_quota(quota_bytes, added)) } else { Ok(()) }
}

/// What [`Blobs::collect`] deleted.
#[derive(Debug, Default, PartialEq, Eq, Serialize)]
pub struct Collected {
    /// Recorded images nothing referred to.
    pub unreferenced: usize,
    /// Stored bytes no row records (their write failed, or its process died, after
    /// storing them).
    pub orphans: usize,
}

/// The hex digits of a key that are its deployment's tag; the rest of its 32 are random.
const TAG_DIGITS: usize = 12;

#[derive(Debug)]
pub struct Blobs {
    store: Arc<dyn BlobStore>,
    secret: Vec<u8>,
    /// What every key this deployment makes starts with ([`TAG_DIGITS`] hex digits).
    tag: String,
}

impl Blobs {
    /// Images in `blobs`, signed with the secret kept in the database (made on the
    /// first start of any process, so links survive restarts and work on every process),
    /// under keys tagged as this database's (see the module's documentation).
    pub async fn open(store: &Store, blobs: Arc<dyn BlobStore>) -> anyhow::Result<Blobs> {
        let secret = setting(store, "blob_secret", 32).await?;
        let tag = setting(store, "blob_tag", TAG_DIGITS / 2).await?;
        Ok(Blobs { store: blobs, secret: secret.into_bytes(), tag })
    }

    /// A new key for an image of `kind`: this deployment's tag, random hex digits, and
    /// the type's extension.
    pub fn new_key(&self, kind: ImageType) -> String {
        let ext = match kind {
            ImageType::Png => "png",
            ImageType::Jpeg => "jpg",
            ImageType::Webp => "webp",
        };
        let mut random = [0u8; (32 - TAG_DIGITS) / 2];
        getrandom::fill(&mut random).expect("the operating system's random source failed");
        format!("{}{}.{ext}", self.tag, hex(&random))
    }

    /// Where the bytes are.
    pub fn store(&self) -> &Arc<dyn BlobStore> {
        &self.store
    }

    /// Whether `sig` signs `key` until `exp` (it may have expired since).
    pub fn verify(&self, key: &str, exp: i64, sig: &[u8]) -> bool {
        self.mac(key, exp).verify_slice(sig).is_ok()
    }

    fn mac(&self, key: &str, exp: i64) -> Hmac<Sha256> {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.secret).expect("HMAC takes any key length");
        mac.update(format!("{key}\n{exp}").as_bytes());
        mac
    }

    /// A signed link to `key`, valid for [`URL_LIFETIME`] from `now`.
    pub fn url(&self, base_url: &str, key: &str, now: Timestamp) -> String {
        let exp = now.unix_millis() / 1000 + URL_LIFETIME.as_secs() as i64;
        let sig = hex(&self.mac(key, exp).finalize().into_bytes());
        format!("{base_url}/blobs/{key}?exp={exp}&sig={sig}")
    }

    /// Stores a decoded image's bytes (before any write's turn: storing never holds the
    /// others up). Nothing refers to them until [`Blobs::record`]ed.
    pub async fn write(&self, image: Image) -> Result<Written, ApiError> {
        let key = self.new_key(image.kind);
        let size = image.bytes.len() as i64;
        self.store.put(&key, image.bytes.into()).await.map_err(ApiError::internal)?;
        Ok(Written { store: self.store.clone(), key, size, kind: image.kind, kept: false })
    }

    /// Records a written image as `project_id`'s, charging its bytes to the project's
    /// quota (413 when it does not fit). An image not `attached` yet is deleted unless
    /// [`Blobs::attach`]ed within a day.
    pub async fn record(
        conn: &mut AnyConnection,
        project_id: &str,
        file: &Written,
        attached: bool,
        quota_bytes: i64,
        now: Timestamp,
    ) -> Result<(), ApiError> {
        charge(&mut *conn, project_id, file.size, quota_bytes).await?;
        sqlx::query(
            "INSERT INTO blobs (blob_key, project_id, content_type, size_bytes, created_at, attached) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&file.key)
        .bind(project_id)
        .bind(file.kind.content_type())
        .bind(file.size)
        .bind(now.unix_millis())
        .bind(i64::from(attached))
        .execute(&mut *conn)
        .await?;
        Ok(())
    }

    /// Marks `key`, an image of `project_id`, as referred to; false if there is no such
    /// image. Being an update, it locks the row against a concurrent [`Blobs::collect`].
    pub async fn attach(conn: &mut AnyConnection, project_id: &str, key: &str) -> Result<bool, ApiError> {
        let updated = sqlx::query("UPDATE blobs SET attached = 1 WHERE blob_key = $1 AND project_id = $2")
            .bind(key)
            .bind(project_id)
            .execute(conn)
            .await?
            .rows_affected();
        Ok(updated == 1)
    }

    /// Deletes the images stored more than `older_than` before `now` that nothing refers
    /// to: recorded ones never attached to an item or message, and bytes no row records
    /// under a key of this deployment's (never another's, in a shared store).
    pub async fn collect(
        &self,
        store: &Store,
        now: Timestamp,
        older_than: Duration,
    ) -> anyhow::Result<Collected> {
        let cutoff = now.unix_millis() - older_than.as_millis() as i64;
        let mut collected = Collected::default();
        let rows = sqlx::query("SELECT blob_key FROM blobs WHERE attached = 0 AND created_at < $1")
            .bind(cutoff)
            .fetch_all(store.pool())
            .await?;
        for row in rows {
            let key: String = row.try_get("blob_key")?;
            // Re-checked in the delete: an item may have attached it meanwhile. Its bytes
            // come off the project's count in the same transaction.
            let mut tx = store.begin_write().await?;
            let gone = sqlx::query(
                "DELETE FROM blobs WHERE blob_key = $1 AND attached = 0 RETURNING project_id, size_bytes",
            )
            .bind(&key)
            .fetch_optional(&mut *tx)
            .await?;
            if let Some(gone) = &gone {
                let (project_id, size): (String, i64) =
                    (gone.try_get("project_id")?, gone.try_get("size_bytes")?);
                sqlx::query("UPDATE projects SET stored_bytes = stored_bytes - $2 WHERE project_id = $1")
                    .bind(project_id)
                    .bind(size)
                    .execute(&mut *tx)
                    .await?;
            }
            tx.commit().await?;
            if gone.is_some() {
                self.store.delete(&key).await.with_context(|| format!("deleting image {key}"))?;
                collected.unreferenced += 1;
            }
        }
        // Bytes stored before their row is written: only old ones are orphans (a write
        // in progress stored its image moments ago), and only ours.
        let old: Vec<String> = self
            .store
            .list()
            .await?
            .into_iter()
            .filter(|(key, at)| key.starts_with(&self.tag) && at.unix_millis() < cutoff)
            .map(|(k, _)| k)
            .collect();
        let recorded: HashSet<String> = if old.is_empty() {
            HashSet::new()
        } else {
            sqlx::query("SELECT blob_key FROM blobs")
                .fetch_all(store.pool())
                .await?
                .iter()
                .map(|r| r.try_get("blob_key"))
                .collect::<Result<_, _>>()?
        };
        for key in old.iter().filter(|k| !recorded.contains(*k)) {
            self.store.delete(key).await.with_context(|| format!("deleting image {key}"))?;
            collected.orphans += 1;
        }
        Ok(collected)
    }
}

/// The setting `name`, made of `bytes` random bytes in hex by the first process of the
/// database to ask.
async fn setting(store: &Store, name: &str, bytes: usize) -> anyhow::Result<String> {
    let mut fresh = vec![0u8; bytes];
    getrandom::fill(&mut fresh).context("reading the random source")?;
    sqlx::query("INSERT INTO settings (name, value) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING")
        .bind(name)
        .bind(hex(&fresh))
        .execute(store.pool())
        .await?;
    let value = sqlx::query("SELECT value FROM settings WHERE name = $1").bind(name).fetch_one(store.pool());
    Ok(value.await?.try_get("value")?)
}

/// Runs [`Blobs::collect`] now and every hour, for images older than
/// [`UNATTACHED_LIFETIME`].
pub fn spawn_collector(blobs: Arc<Blobs>, store: Store, clock: Clock) {
    tokio::spawn(async move {
        let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
        loop {
            every_hour.tick().await;
            match blobs.collect(&store, clock.now(), UNATTACHED_LIFETIME).await {
                Ok(Collected { unreferenced: 0, orphans: 0 }) => {}
                Ok(c) => tracing::info!(c.unreferenced, c.orphans, "deleted images nothing refers to"),
                Err(e) => tracing::warn!(error = format!("{e:#}"), "deleting images nothing refers to"),
            }
        }
    });
}

/// Keys are made by [`Blobs::write`]: 32 hex digits and an image extension. Anything
/// else (an option without an image, a path) is not a blob.
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

//! Images: uploaded screenshots and thread attachments. Their bytes live in a
//! [`BlobStore`] (a folder, the database or S3-compatible storage, see `store`), the
//! `blobs` table records them; read outputs link them as signed, expiring URLs
//! `GET /blobs/{key}?exp=..&sig=..` (the URL is the capability, so `<img>` works
//! without a bearer header). The signing secret is kept in the database, so a link one
//! server process made works on every process of the same database.
//!
//! `/blobs` streams an image in chunks rather than reading it whole, and at most
//! [`ReadLimit::permits`] images are read at once: a request beyond waits up to
//! [`ReadLimit::wait`] for its turn, then gets 503 with `Retry-After`.
//!
//! A folder or a bucket may be shared by deployments of different databases, each of
//! which knows only its own images. So every key this deployment makes starts with its
//! tag (made at its database's first start and kept in `settings`), and collecting
//! deletes stored bytes no row records only when they carry that tag: another
//! deployment's images, and those stored before keys were tagged, are never deleted as
//! orphans.

pub(crate) mod store;

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use futures_util::StreamExt;
use hmac::{Hmac, KeyInit, Mac};
use redline_protocol::{IMAGE_MAX_BYTES, ImageType, Timestamp};
use serde::{Deserialize, Serialize};
use sha2::Sha256;
use sqlx::{AnyConnection, Row};
use tokio::sync::Semaphore;

pub use self::store::{BlobStore, BlobStoreSpec, CHUNK_BYTES, Chunks, Database, Folder, S3, copy_missing};
use crate::AppState;
use crate::auth::hex;
use crate::db::Store;
use crate::error::ApiError;

/// How long a signed link works.
pub const URL_LIFETIME: Duration = Duration::from_secs(3600);

/// How long an uploaded image waits to be referred to (filed, attached) before it is
/// deleted, by default.
pub const UNATTACHED_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// How many images `/blobs` reads at once by default.
pub const MAX_READS: usize = 32;

/// How `/blobs` limits the files it reads at once.
#[derive(Clone, Debug)]
pub struct ReadLimit {
    pub permits: Arc<Semaphore>,
    /// How long a request waits for a turn before it is answered 503.
    pub wait: Duration,
    /// How long a request keeps its turn: a client that stops reading (or a store that
    /// stops answering) loses it then, and its answer is cut off, so that a few stalled
    /// readers cannot keep every other image from being sent.
    pub turn: Duration,
}

impl ReadLimit {
    pub fn new(reads: usize) -> ReadLimit {
        ReadLimit {
            permits: Arc::new(Semaphore::new(reads)),
            wait: Duration::from_secs(5),
            turn: Duration::from_secs(60),
        }
    }
}

/// A request's turn at reading an image: given back when its answer is sent or dropped,
/// or when [`ReadLimit::turn`] has passed, whichever comes first.
struct Turn {
    permit: Arc<std::sync::Mutex<Option<tokio::sync::OwnedSemaphorePermit>>>,
    deadline: tokio::task::JoinHandle<()>,
}

impl Turn {
    fn new(permit: tokio::sync::OwnedSemaphorePermit, lasts: Duration) -> Turn {
        let permit = Arc::new(std::sync::Mutex::new(Some(permit)));
        let deadline = tokio::spawn({
            let permit = permit.clone();
            async move {
                tokio::time::sleep(lasts).await;
                permit.lock().expect("turn lock").take();
            }
        });
        Turn { permit, deadline }
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        self.deadline.abort();
        self.permit.lock().expect("turn lock").take();
    }
}

impl Default for ReadLimit {
    fn default() -> Self {
        ReadLimit::new(MAX_READS)
    }
}

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
            let mut tx = store.pool().begin().await?;
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
pub fn spawn_collector(state: AppState) {
    tokio::spawn(async move {
        let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
        loop {
            every_hour.tick().await;
            match state.blobs.collect(&state.store, state.clock.now(), UNATTACHED_LIFETIME).await {
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

#[derive(Deserialize)]
pub struct Signed {
    exp: i64,
    sig: String,
}

/// `GET /blobs/{key}?exp=..&sig=..`.
pub async fn get(
    State(state): State<AppState>,
    Path(key): Path<String>,
    Query(signed): Query<Signed>,
) -> Result<Response, ApiError> {
    if !is_blob_key(&key) {
        return Err(ApiError::not_found("no such image"));
    }
    let sig = (0..signed.sig.len())
        .step_by(2)
        .map(|i| signed.sig.get(i..i + 2).and_then(|h| u8::from_str_radix(h, 16).ok()))
        .collect::<Option<Vec<u8>>>()
        .unwrap_or_default();
    if state.blobs.mac(&key, signed.exp).verify_slice(&sig).is_err() {
        return Err(ApiError::forbidden("bad image link signature"));
    }
    if signed.exp * 1000 <= state.clock.now().unix_millis() {
        return Err(ApiError::forbidden("this image link has expired; read the item again for a fresh one"));
    }
    let row = sqlx::query("SELECT content_type, size_bytes FROM blobs WHERE blob_key = $1")
        .bind(&key)
        .fetch_optional(state.store.pool())
        .await?
        .ok_or_else(|| ApiError::not_found("no such image"))?;
    let content_type: String = row.try_get("content_type")?;
    let size: i64 = row.try_get("size_bytes")?;
    let limit = &state.blob_reads;
    let permit = match tokio::time::timeout(limit.wait, limit.permits.clone().acquire_owned()).await {
        Ok(Ok(permit)) => permit,
        _ => return Err(ApiError::unavailable("too many images are being read at once; try again", 1)),
    };
    let Some(chunks) = state.blobs.store.get(&key).await.map_err(ApiError::internal)? else {
        return Err(ApiError::not_found("no such image"));
    };
    // The turn is given back when the body is sent or the client goes away, or taken
    // when it runs out; then the answer ends there, cut off.
    let turn = Turn::new(permit, limit.turn);
    let chunks = chunks
        .map(move |chunk| {
            let _turn = &turn;
            chunk
        })
        .take_until(tokio::time::sleep(limit.turn));
    let headers = [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_LENGTH, size.to_string()),
        (header::CACHE_CONTROL, "private, max-age=3600".to_owned()),
        // The bytes were checked to be an image; never let a browser guess otherwise.
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
    ];
    Ok((headers, Body::from_stream(chunks)).into_response())
}

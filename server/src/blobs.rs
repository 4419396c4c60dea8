//! Images: uploaded screenshots and thread attachments. Bytes live in `DIR/blobs/`;
//! read outputs link them as signed, expiring URLs `GET /blobs/{key}?exp=..&sig=..`
//! (the URL is the capability, so `<img>` works without a bearer header).
//!
//! `/blobs` streams a file in chunks rather than reading it whole, and at most
//! [`ReadLimit::permits`] files are read at once: a request beyond waits up to
//! [`ReadLimit::wait`] for its turn, then gets 503 with `Retry-After`.

use std::path::PathBuf;
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
use serde::Deserialize;
use sha2::Sha256;
use sqlx::{AnyConnection, Row};
use tokio::sync::Semaphore;
use tokio_util::io::ReaderStream;

use crate::AppState;
use crate::auth::hex;
use crate::db::Store;
use crate::error::ApiError;

/// How long a signed link works.
pub const URL_LIFETIME: Duration = Duration::from_secs(3600);

/// How long an uploaded screenshot waits to be filed before it is deleted.
pub const UNATTACHED_LIFETIME: Duration = Duration::from_secs(24 * 3600);

/// How many images `/blobs` reads at once by default.
pub const MAX_READS: usize = 32;

/// How `/blobs` limits the files it reads at once.
#[derive(Clone, Debug)]
pub struct ReadLimit {
    pub permits: Arc<Semaphore>,
    /// How long a request waits for a turn before it is answered 503.
    pub wait: Duration,
}

impl ReadLimit {
    pub fn new(reads: usize) -> ReadLimit {
        ReadLimit { permits: Arc::new(Semaphore::new(reads)), wait: Duration::from_secs(5) }
    }
}

impl Default for ReadLimit {
    fn default() -> Self {
        ReadLimit::new(MAX_READS)
    }
}

/// The size of the chunks `/blobs` sends.
const CHUNK_BYTES: usize = 64 * 1024;

/// An image as an input carries it: the input field (for error messages), the declared
/// content type, and the base64 bytes.
pub struct ImageInput<'a> {
    pub field: &'a str,
    pub content_type: &'a str,
    pub base64: &'a str,
}

#[derive(Debug)]
pub struct Blobs {
    dir: PathBuf,
    secret: Vec<u8>,
}

impl Blobs {
    /// Opens `dir`, and the signing secret kept in the store (made on first start, so
    /// links survive restarts).
    pub async fn open(store: &Store, dir: PathBuf) -> anyhow::Result<Blobs> {
        tokio::fs::create_dir_all(&dir).await.with_context(|| format!("creating {}", dir.display()))?;
        let mut fresh = [0u8; 32];
        getrandom::fill(&mut fresh).context("reading the random source")?;
        sqlx::query(
            "INSERT INTO settings (name, value) VALUES ('blob_secret', $1) ON CONFLICT (name) DO NOTHING",
        )
        .bind(hex(&fresh))
        .execute(store.pool())
        .await?;
        let secret: String = sqlx::query("SELECT value FROM settings WHERE name = 'blob_secret'")
            .fetch_one(store.pool())
            .await?
            .try_get("value")?;
        Ok(Blobs { dir, secret: secret.into_bytes() })
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

    /// Checks an image and stores it for `project_id`; returns its key. 415 for a type
    /// other than png/jpeg/webp or bytes that are not what `content_type` says, 413 over
    /// 8 MiB, 400 (naming `field`) for bad base64. A `data:` URL is accepted as well.
    /// An image not `attached` yet is deleted unless [`Blobs::attach`]ed within a day.
    pub async fn save(
        &self,
        conn: &mut AnyConnection,
        project_id: &str,
        image: ImageInput<'_>,
        attached: bool,
        now: Timestamp,
    ) -> Result<String, ApiError> {
        let ImageInput { field, content_type, base64: image_base64 } = image;
        let declared = ImageType::from_content_type(content_type).ok_or_else(|| {
            ApiError::unsupported_media(format!("contentType {content_type:?}: expected png, jpeg or webp"))
        })?;
        let data = image_base64.split_once(";base64,").map_or(image_base64, |(_, b64)| b64).trim();
        // Base64 is 4/3 of the bytes: refuse an oversize image before decoding it.
        if data.len() / 4 * 3 > IMAGE_MAX_BYTES + 3 {
            return Err(ApiError::too_large(format!(
                "{field}: images are limited to {IMAGE_MAX_BYTES} bytes"
            )));
        }
        let bytes =
            STANDARD.decode(data).map_err(|e| ApiError::bad_input(field, format!("not base64 ({e})")))?;
        if bytes.len() > IMAGE_MAX_BYTES {
            return Err(ApiError::too_large(format!(
                "{field}: images are limited to {IMAGE_MAX_BYTES} bytes"
            )));
        }
        if ImageType::sniff(&bytes) != Some(declared) {
            return Err(ApiError::unsupported_media(format!(
                "{field}: the bytes are not a {} image",
                declared.content_type()
            )));
        }
        let ext = match declared {
            ImageType::Png => "png",
            ImageType::Jpeg => "jpg",
            ImageType::Webp => "webp",
        };
        let key = format!("{}.{ext}", uuid::Uuid::new_v4().simple());
        let tmp = self.dir.join(format!(".{key}.tmp"));
        tokio::fs::write(&tmp, &bytes).await.map_err(ApiError::internal)?;
        tokio::fs::rename(&tmp, self.dir.join(&key)).await.map_err(ApiError::internal)?;
        sqlx::query(
            "INSERT INTO blobs (blob_key, project_id, content_type, size_bytes, created_at, attached) \
             VALUES ($1, $2, $3, $4, $5, $6)",
        )
        .bind(&key)
        .bind(project_id)
        .bind(declared.content_type())
        .bind(bytes.len() as i64)
        .bind(now.unix_millis())
        .bind(i64::from(attached))
        .execute(&mut *conn)
        .await?;
        Ok(key)
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

    /// Deletes the images uploaded more than [`UNATTACHED_LIFETIME`] ago that nothing
    /// refers to; returns how many.
    pub async fn collect(&self, store: &Store, now: Timestamp) -> Result<usize, sqlx::Error> {
        let cutoff = now.unix_millis() - UNATTACHED_LIFETIME.as_millis() as i64;
        let rows = sqlx::query("SELECT blob_key FROM blobs WHERE attached = 0 AND created_at < $1")
            .bind(cutoff)
            .fetch_all(store.pool())
            .await?;
        let mut deleted = 0;
        for row in rows {
            let key: String = row.try_get("blob_key")?;
            // Re-checked in the delete: an item may have attached it meanwhile.
            let gone = sqlx::query("DELETE FROM blobs WHERE blob_key = $1 AND attached = 0")
                .bind(&key)
                .execute(store.pool())
                .await?
                .rows_affected();
            if gone == 1 {
                if let Err(e) = tokio::fs::remove_file(self.dir.join(&key)).await
                    && e.kind() != std::io::ErrorKind::NotFound
                {
                    tracing::warn!(error = %e, key, "deleting an unfiled screenshot");
                }
                deleted += 1;
            }
        }
        Ok(deleted)
    }
}

/// Runs [`Blobs::collect`] now and every hour.
pub fn spawn_collector(state: AppState) {
    tokio::spawn(async move {
        let mut every_hour = tokio::time::interval(Duration::from_secs(3600));
        loop {
            every_hour.tick().await;
            match state.blobs.collect(&state.store, state.clock.now()).await {
                Ok(0) => {}
                Ok(n) => tracing::info!(n, "deleted unfiled screenshots"),
                Err(e) => tracing::warn!(error = %e, "deleting unfiled screenshots"),
            }
        }
    });
}

/// Keys are made by [`Blobs::save`]: 32 hex digits and an image extension. Anything
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
    let file = match tokio::fs::File::open(state.blobs.dir.join(&key)).await {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(ApiError::not_found("no such image"));
        }
        Err(e) => return Err(ApiError::internal(e)),
    };
    // The turn is given back when the body is sent or the client goes away.
    let chunks = ReaderStream::with_capacity(file, CHUNK_BYTES).map(move |chunk| {
        let _turn = &permit;
        chunk
    });
    let headers = [
        (header::CONTENT_TYPE, content_type),
        (header::CONTENT_LENGTH, size.to_string()),
        (header::CACHE_CONTROL, "private, max-age=3600".to_owned()),
        // The bytes were checked to be an image; never let a browser guess otherwise.
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff".to_owned()),
    ];
    Ok((headers, Body::from_stream(chunks)).into_response())
}

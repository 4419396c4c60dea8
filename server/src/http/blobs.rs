//! `GET /blobs/{key}?exp=..&sig=..`: an image, by its signed link (see
//! `crate::store::blobs`). It is streamed in chunks rather than read whole, and at most
//! [`ReadLimit::permits`] images are read at once: a request beyond waits up to
//! [`ReadLimit::wait`] for its turn, then gets 503 with `Retry-After`.

use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{Path, Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::StreamExt;
use serde::Deserialize;
use sqlx::Row;
use tokio::sync::Semaphore;

use crate::AppState;
use crate::error::ApiError;
use crate::store::blobs::is_blob_key;

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
    if !state.services.blobs.verify(&key, signed.exp, &sig) {
        return Err(ApiError::forbidden("bad image link signature"));
    }
    if signed.exp * 1000 <= state.services.clock.now().unix_millis() {
        return Err(ApiError::forbidden("this image link has expired; read the item again for a fresh one"));
    }
    let row = sqlx::query("SELECT content_type, size_bytes FROM blobs WHERE blob_key = $1")
        .bind(&key)
        .fetch_optional(state.services.store.pool())
        .await?
        .ok_or_else(|| ApiError::not_found("no such image"))?;
    let content_type: String = row.try_get("content_type")?;
    let size: i64 = row.try_get("size_bytes")?;
    let limit = &state.blob_reads;
    let permit = match tokio::time::timeout(limit.wait, limit.permits.clone().acquire_owned()).await {
        Ok(Ok(permit)) => permit,
        _ => return Err(ApiError::unavailable("too many images are being read at once; try again", 1)),
    };
    let Some(chunks) = state.services.blobs.store().get(&key).await.map_err(ApiError::internal)? else {
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

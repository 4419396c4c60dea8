//! What every handler shares: the [`Services`] the operations take, and what only HTTP
//! needs (the event streams, metrics, rate limits, budgets and deadlines).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::http::{HeaderMap, HeaderName};

use crate::auth;
use crate::clock::Clock;
use crate::error::ApiError;
use crate::http::{blobs, events, metrics};
use crate::limit::{self, Limiter, RateLimit, SignInLimits};
use crate::ops;
use crate::services::Services;
use crate::store::Store;
use crate::store::blobs::BlobStore;

/// What every handler shares.
#[derive(Clone, Debug)]
pub struct AppState {
    /// What the operations and the write path take.
    pub services: Services,
    /// Who holds the open event streams (see `http::events`).
    pub streams: Arc<events::Streams>,
    /// The base of links in outputs (signed image URLs); `None` means the host the
    /// client called.
    pub public_url: Option<String>,
    /// How often an idle event stream gets a `: ping` comment.
    pub keep_alive: Duration,
    /// How many event streams one token may hold open at once (429 beyond).
    pub max_streams_per_token: usize,
    /// Calls per token (RPCs and event-stream connections).
    pub rate_limit: RateLimit,
    pub limiter: Arc<Limiter>,
    /// The sign-in calls' limits, per client address (see `limit`).
    pub sign_in_limits: SignInLimits,
    /// A header naming the client's address, set by a reverse proxy in front
    /// (`--client-ip-header`); `None`: the peer's address.
    pub client_ip_header: Option<HeaderName>,
    /// Claims waiting for their project's next claim write (see `ops::claim`).
    pub claims: Arc<ops::ClaimQueue>,
    /// Tokens checked a moment ago (see `auth`).
    pub tokens: Arc<auth::TokenChecks>,
    /// How many images `/blobs` reads at once (see `http::blobs`).
    pub blob_reads: blobs::ReadLimit,
    /// What `GET /metrics` reports.
    pub metrics: Arc<metrics::Metrics>,
    /// The bytes of request bodies all requests may hold at once, as they arrive (see
    /// `limit::Budget`).
    pub body_budget: limit::Budget,
    /// The bytes of answers all requests may hold at once, until sent.
    pub answer_budget: limit::Budget,
    /// How long the server waits on a client, and how many connections one may hold
    /// (see `http::transport`).
    pub deadlines: limit::Deadlines,
}

impl AppState {
    /// The state for `store`, keeping uploaded images where its engine does by default:
    /// in the database on Postgres, in `blob_dir` on SQLite.
    pub async fn new(store: Store, clock: Clock, blob_dir: PathBuf) -> anyhow::Result<AppState> {
        Ok(AppState::serving(Services::new(store, clock, blob_dir).await?))
    }

    /// The state for `store`, keeping uploaded images in `images`.
    pub async fn with_blob_store(
        store: Store,
        clock: Clock,
        images: Arc<dyn BlobStore>,
    ) -> anyhow::Result<AppState> {
        Ok(AppState::serving(Services::with_blob_store(store, clock, images).await?))
    }

    /// The state serving `services`, with the default limits.
    pub fn serving(services: Services) -> AppState {
        AppState {
            services,
            streams: Arc::default(),
            public_url: None,
            keep_alive: Duration::from_secs(15),
            max_streams_per_token: events::MAX_STREAMS_PER_TOKEN,
            rate_limit: RateLimit::default(),
            limiter: Arc::default(),
            sign_in_limits: SignInLimits::default(),
            client_ip_header: None,
            claims: Arc::default(),
            tokens: Arc::default(),
            metrics: Arc::default(),
            blob_reads: blobs::ReadLimit::default(),
            body_budget: limit::Budget::for_bodies(limit::BODY_BUDGET_BYTES),
            answer_budget: limit::Budget::for_answers(limit::ANSWER_BUDGET_BYTES),
            deadlines: limit::Deadlines::default(),
        }
    }

    /// The caller of a request, from its bearer token; `client` is where it came from
    /// (a client sending unknown tokens is limited, see `auth`).
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        client: limit::ClientAddr,
    ) -> Result<auth::Principal, ApiError> {
        let client = client.key(headers, self.client_ip_header.as_ref());
        self.tokens.authenticate(&self.services.store, headers, &client, self.services.clock.now()).await
    }
}

//! The Redline changes server: the HTTP API of `shared/protocol.md` over a SQL store,
//! and the admin commands that share the store. Its layers, each importing only those
//! before it: `store` (the database and files), `queue` (the write path), the
//! operations (`ops` for the RPCs; `admin`, `signin`, `deploy`, `webhooks`, `backup` for
//! the admin commands), and `http`. `auth` (tokens) sits on the store; `error`, `clock`,
//! `limit` and `filter` serve every layer. [`AppState`] and [`app`] wire them together.

pub mod admin;
pub mod auth;
pub mod backup;
pub mod clock;
pub mod deploy;
pub mod error;
mod filter;
pub mod http;
pub mod limit;
mod ops;
mod queue;
pub mod signin;
pub mod store;
pub mod webhooks;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use axum::Router;
use axum::http::{HeaderMap, HeaderName, Method, header};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tower_http::cors::{Any, CorsLayer};
use tower_http::trace::TraceLayer;

pub use crate::clock::Clock;
use crate::error::ApiError;
use crate::http::{blobs, events, metrics, openapi, rpc, transport};
use crate::limit::{Limiter, RateLimit, SignInLimits};
pub use crate::store::Store;
use crate::store::blobs::{BlobStore, BlobStoreSpec, Blobs};
use crate::store::event_log::{self, EventHub};

/// What every handler shares.
#[derive(Clone, Debug)]
pub struct AppState {
    pub store: Store,
    pub clock: Clock,
    pub blobs: Arc<Blobs>,
    pub events: Arc<EventHub>,
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
    /// The most bytes one project may store: its images, what its items say and
    /// captured, and its threads' messages (`redline serve --project-quota-mb`); a write
    /// past it is refused with 413.
    pub project_quota_bytes: i64,
    /// The bytes of request bodies all requests may hold at once, as they arrive (see
    /// `limit::Budget`).
    pub body_budget: limit::Budget,
    /// The bytes of answers all requests may hold at once, until sent.
    pub answer_budget: limit::Budget,
    /// How long the server waits on a client, and how many connections one may hold
    /// (see `http::transport`).
    pub deadlines: limit::Deadlines,
}

/// The default per-project storage quota, in MiB: five hundred images of the largest
/// size (8 MiB), or thousands of typical screenshots (0.2-1 MB) with their captures.
pub const DEFAULT_PROJECT_QUOTA_MB: u64 = 4 * 1024;

impl AppState {
    /// The state for `store`, keeping uploaded images where its engine does by default:
    /// in the database on Postgres, in `blob_dir` on SQLite.
    pub async fn new(store: Store, clock: Clock, blob_dir: PathBuf) -> anyhow::Result<AppState> {
        let images = BlobStoreSpec::open(None, &store, blob_dir).await?;
        AppState::with_blob_store(store, clock, images).await
    }

    /// The state for `store`, keeping uploaded images in `images`.
    pub async fn with_blob_store(
        store: Store,
        clock: Clock,
        images: Arc<dyn BlobStore>,
    ) -> anyhow::Result<AppState> {
        let blobs = Arc::new(Blobs::open(&store, images).await?);
        let events = Arc::<EventHub>::default();
        match store.postgres_url() {
            Some(url) => event_log::spawn_pg_listener(url.to_owned(), events.clone()),
            None => event_log::spawn_store_watch(store.clone(), &events),
        }
        Ok(AppState {
            store,
            clock,
            blobs,
            events,
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
            project_quota_bytes: (DEFAULT_PROJECT_QUOTA_MB * 1024 * 1024) as i64,
            body_budget: limit::Budget::for_bodies(limit::BODY_BUDGET_BYTES),
            answer_budget: limit::Budget::for_answers(limit::ANSWER_BUDGET_BYTES),
            deadlines: limit::Deadlines::default(),
        })
    }

    /// The caller of a request, from its bearer token; `client` is where it came from
    /// (a client sending unknown tokens is limited, see `auth`).
    pub async fn authenticate(
        &self,
        headers: &HeaderMap,
        client: limit::ClientAddr,
    ) -> Result<auth::Principal, ApiError> {
        let client = client.key(headers, self.client_ip_header.as_ref());
        self.tokens.authenticate(&self.store, headers, &client, self.clock.now()).await
    }
}

/// The whole HTTP API.
pub fn app(state: AppState) -> Router {
    // The extension's pages call from their own origin with a bearer token (never
    // cookies), so any origin may call; the token is the gate.
    let cors = CorsLayer::new()
        .allow_origin(Any)
        .allow_methods([Method::GET, Method::POST])
        .allow_headers([
            header::AUTHORIZATION,
            header::CONTENT_TYPE,
            HeaderName::from_static("last-event-id"),
        ])
        .expose_headers([header::RETRY_AFTER])
        .max_age(Duration::from_secs(3600));
    let track_rpcs = axum::middleware::from_fn_with_state(state.clone(), metrics::track_rpc);
    let api = Router::new()
        .route("/rpc/{name}", post(rpc::handle).route_layer(track_rpcs))
        .route("/openapi.json", get(openapi::handle))
        .route("/events/{stream}", get(events::handle))
        .route("/blobs/{key}", get(blobs::get))
        .layer(cors);
    Router::new()
        .route("/healthz", get(metrics::healthz))
        .route("/auth/verify", get(signin::verify_page))
        .merge(api)
        .layer(TraceLayer::new_for_http())
        .with_state(state)
}

/// What the operator's listener serves (`redline serve --metrics-addr`, loopback only):
/// `GET /metrics`.
pub fn metrics_app(state: AppState) -> Router {
    Router::new().route("/metrics", get(metrics::handle)).with_state(state)
}

/// Serves [`metrics_app`] on `listener` (for as long as the process runs).
pub async fn serve_metrics(listener: TcpListener, state: AppState) -> std::io::Result<()> {
    let deadlines = state.deadlines;
    transport::serve(listener, metrics_app(state), deadlines, true, std::future::pending()).await
}

/// Serves until Ctrl-C / SIGTERM.
pub async fn serve(listener: TcpListener, state: AppState) -> std::io::Result<()> {
    let events = state.events.clone();
    let stop = async move {
        shutdown_signal().await;
        // Event streams never end on their own; end them so the shutdown can finish.
        events.shut_down();
    };
    store::blobs::spawn_collector(state.blobs.clone(), state.store.clone(), state.clock.clone());
    let store = state.store.clone();
    let deadlines = state.deadlines;
    // Behind a reverse proxy every connection is the proxy's: the cap per client
    // address would cap them all together.
    let per_client_cap = state.client_ip_header.is_none();
    let served = transport::serve(listener, app(state), deadlines, per_client_cap, stop).await;
    store.close().await;
    served
}

async fn shutdown_signal() {
    let ctrl_c = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .expect("installing the SIGTERM handler");
        tokio::select! {
            _ = ctrl_c => {}
            _ = term.recv() => {}
        }
    }
    #[cfg(not(unix))]
    {
        let _ = ctrl_c.await;
    }
}

/// Every build of the server (the `redline` binary, its tests and its bench) allocates
/// with mimalloc. A request's allocations move between threads (rows are made on
/// SQLite's worker thread and dropped on the runtime's), which glibc's allocator pays
/// for in locks and consolidation: a fifth of the CPU of a claim burst went to it
/// (docs/benchmarks-history.md, "Allocator, the committer's own connection").
#[cfg(not(test))]
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The unit tests' allocator: mimalloc, counting what each thread holds (see `held`).
#[cfg(test)]
#[global_allocator]
static ALLOCATOR: held::Counting = held::Counting;

/// How many bytes a thread holds allocated at most, for the tests that bound it.
#[cfg(test)]
pub(crate) mod held {
    use std::alloc::{GlobalAlloc, Layout};
    use std::cell::Cell;

    use mimalloc::MiMalloc;

    pub struct Counting;

    thread_local! {
        static NOW: Cell<isize> = const { Cell::new(0) };
        static PEAK: Cell<isize> = const { Cell::new(0) };
    }

    fn moved(by: isize) {
        let _ = NOW.try_with(|now| {
            now.set(now.get() + by);
            let _ = PEAK.try_with(|peak| peak.set(peak.get().max(now.get())));
        });
    }

    // SAFETY: each call is mimalloc's, with the caller's own arguments; the counting
    // touches only this thread's cells (const, without destructors: never allocating).
    unsafe impl GlobalAlloc for Counting {
        unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { MiMalloc.alloc(layout) };
            if !p.is_null() {
                moved(layout.size() as isize);
            }
            p
        }

        unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
            let p = unsafe { MiMalloc.alloc_zeroed(layout) };
            if !p.is_null() {
                moved(layout.size() as isize);
            }
            p
        }

        unsafe fn dealloc(&self, p: *mut u8, layout: Layout) {
            unsafe { MiMalloc.dealloc(p, layout) };
            moved(-(layout.size() as isize));
        }

        unsafe fn realloc(&self, p: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
            let q = unsafe { MiMalloc.realloc(p, layout, new_size) };
            if !q.is_null() {
                moved(new_size as isize - layout.size() as isize);
            }
            q
        }
    }

    /// What `f` returns, and the most bytes this thread held allocated at once while it
    /// ran beyond what it held before (what `f` returns included).
    pub fn peak<T>(f: impl FnOnce() -> T) -> (T, usize) {
        NOW.with(|now| now.set(0));
        PEAK.with(|peak| peak.set(0));
        let out = f();
        (out, PEAK.with(Cell::get).max(0) as usize)
    }
}

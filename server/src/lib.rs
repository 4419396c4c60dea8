//! The Redline changes server: the HTTP API of `shared/protocol.md` over a SQL store,
//! and the admin commands that share the store. Its layers, each importing only those
//! before it: `store` (the database and files), `services` (what the layers below HTTP
//! share), `queue` (the write path), the operations (`ops` for the RPCs; `admin`,
//! `signin`, `deploy`, `webhooks`, `backup` for the admin commands), and `http`. `auth`
//! (tokens) sits on the store; `error`, `clock`, `limit` and `filter` serve every layer.
//! The layers below HTTP share [`Services`]; HTTP's own state is [`AppState`] (in
//! `http`), and [`app`] routes it. This file holds only the wiring and re-exports: an
//! item here that a layer imported would be a hub.

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
pub mod services;
pub mod signin;
pub mod store;
pub mod webhooks;

use std::time::Duration;

use axum::Router;
use axum::http::{HeaderName, Method, header};
use axum::routing::{get, post};
use tokio::net::TcpListener;
use tower_http::cors::{Any, CorsLayer};
use tower_http::trace::TraceLayer;

pub use crate::clock::Clock;
pub use crate::http::AppState;
use crate::http::{blobs, events, metrics, openapi, rpc, transport, verify};
pub use crate::services::{DEFAULT_PROJECT_QUOTA_MB, Services};
pub use crate::store::Store;

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
        .route("/auth/verify", get(verify::handle))
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
    let events = state.services.events.clone();
    let stop = async move {
        shutdown_signal().await;
        // Event streams never end on their own; end them so the shutdown can finish.
        events.shut_down();
    };
    let services = &state.services;
    store::blobs::spawn_collector(services.blobs.clone(), services.store.clone(), services.clock.clone());
    let store = services.store.clone();
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

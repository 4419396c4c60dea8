//! The HTTP layer: what a request meets before an operation runs, and the endpoints
//! that are no operation. `rpc` reads and dispatches `POST /rpc/{name}`; `events`
//! serves `GET /events/{stream}` from the event log; `blobs` serves signed image links;
//! `metrics` is `/healthz`, `/metrics` and the RPC counters; `openapi` is
//! `GET /openapi.json`; `verify` is sign-in's `/auth/verify`; `state` is what the handlers share; `transport` holds the connections and what bounds a stalling
//! client (deadlines, a cap per address, the answers' budget). `crate::app` routes them.

pub mod blobs;
pub mod events;
pub mod metrics;
pub(crate) mod openapi;
pub(crate) mod rpc;
mod state;
pub mod transport;
pub(crate) mod verify;

pub use state::AppState;

//! The operations, one module per side. Each implements [`Op`] (or, for sign-in,
//! [`AnonymousOp`]) for the protocol's RPC marker type; `crate::http::rpc` dispatches to them.

mod agent;
mod claim;
mod ctx;
mod filer;
pub mod group_token;
pub mod presence;
mod read;
mod refind;
mod regression;
mod session;
mod stages;
pub mod stats;

use std::future::Future;

use redline_protocol::{Rpc, Timestamp};
use serde::Serialize;

use crate::error::ApiError;
use crate::limit::{RateLimit, SignInLimits};
use crate::services::Services;

pub use claim::ClaimQueue;
pub use ctx::Ctx;

/// An operation the server serves: the protocol's RPC marker types implement it.
pub trait Op: Rpc {
    /// What `run` answers: `Self::Output`, or for outputs with items the same with
    /// each item's capture as stored ([`crate::store::rows::StoredChange`]): the same JSON.
    type Answer: Serialize;

    fn run(ctx: &Ctx<'_>, input: Self::Input) -> impl Future<Output = Result<Self::Answer, ApiError>> + Send;
}

/// An operation called without a token (sign-in). With no token to tell callers
/// apart, each is rate-limited per client address, in buckets of its own
/// ([`AnonymousOp::limit`]).
pub trait AnonymousOp: Rpc {
    /// This call's limit per client address.
    fn limit(limits: &SignInLimits) -> RateLimit;

    /// `client` is the caller's address as the limits key it (`ClientAddr::key`).
    fn run(
        state: &Services,
        base_url: &str,
        client: &str,
        now: Timestamp,
        input: Self::Input,
    ) -> impl Future<Output = Result<Self::Output, ApiError>> + Send;
}

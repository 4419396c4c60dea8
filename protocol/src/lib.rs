//! The changes protocol (`shared/protocol.md`) as serde types and pure rules, shared
//! by the extension (wasm), the changes server and the agent CLI.
//!
//! - [`after_shot`]: how "Check on stage"'s after-shot is framed (scroll and crop).
//! - [`client`]: what a status means to a client, the stage serving a URL, short shas.
//! - [`element_path`]: **(ours)** how a `cssPath` crosses shadow roots and frames.
//! - [`locate`]: the order in which an element is looked for again on a page.
//! - [`records`]: Change, Capture, Element, Group, Message, Stage and their enums.
//! - [`regression`]: **(ours)** `reportRegression`, a verified fix gone on a later build.
//! - [`refind`] **(ours)**: an item's elements re-found on a later build.
//! - [`rpc`]: every operation's input and output, and the [`Rpc`] trait tying an RPC
//!   name to them (`client.call::<GetSession>(GetSessionInput {})`).
//! - [`wire`]: scopes, the error body (with the 409 `not_claimable` items), and the
//!   change-event data.
//! - [`rules`]: held, claimable, change references, limits, image types.
//! - [`bounded`]: reading lists and strings no longer than their limits.
//! - [`bound`]: a field's bound, stated once for its reader and its JSON Schema.
//! - `patterns` (feature `schema`): the forms of text the server accepts, as patterns.
//! - `schema` (feature `schema`): the image and cross-field rules `/openapi.json` states.
//! - [`styles`] **(ours)**: an element's computed styles, a page's failed requests.
//! - [`sse`]: the event-stream parser both clients read change events with.
//! - [`thread`]: what a message is, the open question and its choices, answers.
//! - [`Timestamp`]: ISO-8601 UTC on the wire.

pub mod after_shot;
pub mod bound;
pub mod bounded;
pub mod client;
pub mod element_path;
pub mod group_token;
pub mod locate;
#[cfg(feature = "schema")]
pub mod patterns;
pub mod records;
pub mod refind;
pub mod regression;
pub mod rpc;
pub mod rules;
#[cfg(feature = "schema")]
pub mod schema;
pub mod sse;
pub mod styles;
pub mod thread;
mod time;
pub mod wire;

pub use client::*;
pub use group_token::*;
pub use records::*;
pub use refind::*;
pub use regression::*;
pub use rpc::*;
pub use rules::*;
pub use styles::{ElementStyles, FailedRequest, StyleValues};
pub use thread::*;
pub use time::{Timestamp, TimestampError};
pub use wire::*;

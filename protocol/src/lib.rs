//! The changes protocol (`shared/protocol.md`) as serde types and pure rules, shared
//! by the extension (wasm), the changes server and the agent CLI.
//!
//! - [`records`]: Change, Capture, Element, Group, Message, Stage and their enums.
//! - [`rpc`]: every operation's input and output, and the [`Rpc`] trait tying an RPC
//!   name to them (`client.call::<GetSession>(GetSessionInput {})`).
//! - [`wire`]: scopes, the error body (with the 409 `not_claimable` items), and the
//!   change-event data.
//! - [`rules`]: held, claimable, change references, limits, image types.
//! - [`Timestamp`]: ISO-8601 UTC on the wire.

pub mod records;
pub mod rpc;
pub mod rules;
mod time;
pub mod wire;

pub use records::*;
pub use rpc::*;
pub use rules::*;
pub use time::{Timestamp, TimestampError};
pub use wire::*;

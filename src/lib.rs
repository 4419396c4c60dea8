//! The Redline Chrome extension. One crate, built into a separate module per context
//! (see ARCHITECTURE.md): `content` (the page side, compiled to JavaScript so it runs
//! under strict CSPs), `worker` (the background service worker), `overlay` (the iframe
//! over the page) and `panel` (the side panel), the last two Leptos, sharing `ui`. Its
//! folders are those sides, beside `rules` (the pure core, shared by all of them and
//! tested natively) and `browser` (the thin adapters over web-sys and `chrome.*`). The
//! typed seams between the contexts stay at the root, where every side sees them:
//! `messages` (overlay ↔ page) and `worker_call` (every context → the worker); they carry
//! the rules' types, and one rule (`compose`) reads a capture's message.

pub mod browser;
pub mod content;
pub mod messages;
pub mod page_event_js;
pub mod rules;
pub mod worker_call;

#[cfg(feature = "ui")]
pub mod ui;
#[cfg(feature = "worker")]
pub mod worker;

//! The Redline Chrome extension. One crate, built into a separate module per context
//! (see ARCHITECTURE.md): `content` (the page side, compiled to JavaScript so it runs
//! under strict CSPs), `worker` (the background service worker), `overlay` (the iframe
//! over the page) and `panel` (the side panel), the last two Leptos, sharing `ui`. The
//! pure core (`settings`, `messages`, `api`'s rules) is shared by all of them and tested
//! natively.

pub mod api;
pub mod capture;
pub mod chip;
pub mod chrome;
pub mod compose;
pub mod connection;
pub mod fit;
pub mod idb;
pub mod locate;
pub mod messages;
pub mod notify;
pub mod outbox;
pub mod page_event_js;
pub mod pages;
pub mod queue;
pub mod redact;
pub mod refind;
pub mod settings;
pub mod sign_in_store;
pub mod stats;
pub mod throttle;
pub mod timer;
pub mod tray;
pub mod verify;
pub mod worker_call;

#[cfg(feature = "content")]
pub mod content;
#[cfg(feature = "content")]
pub mod page_js;
#[cfg(feature = "content")]
pub mod show;
#[cfg(feature = "ui")]
pub mod ui;
#[cfg(feature = "worker")]
pub mod worker;

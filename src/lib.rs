//! The Redline Chrome extension. One crate, built into a separate module per context
//! (see ARCHITECTURE.md): `content` (the page side, compiled to JavaScript so it runs
//! under strict CSPs), `worker` (the background service worker) and `ui` (the side panel
//! and the overlay iframe, Leptos). The pure core (`settings`, `messages`, `api`'s rules)
//! is shared by all of them and tested natively.

pub mod api;
pub mod chrome;
pub mod connection;
pub mod messages;
pub mod settings;

#[cfg(feature = "content")]
pub mod content;
#[cfg(feature = "ui")]
pub mod ui;
#[cfg(feature = "worker")]
pub mod worker;

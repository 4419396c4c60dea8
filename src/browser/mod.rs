//! Thin adapters over the browser (web-sys, `chrome.*`, IndexedDB, `fetch`,
//! `setTimeout`), shared by every context: each call becomes a Rust future with a typed
//! result, and no decision is made here. Adapters may use `rules` (the types they store
//! or send) but not the sides that call them (`content`, `ui`, `worker`).

pub mod api;
pub mod chrome;
pub mod idb;
pub mod sign_in_store;
pub mod timer;

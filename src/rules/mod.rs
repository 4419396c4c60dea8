//! The extension's pure core: plain Rust, tested natively (`cargo test`). Each module is
//! a rule the sides apply — what a draft, a queue row, a tray item, a retry, a check on
//! stage or a notification is, and what the panel says about it. Rules may use each
//! other, the protocol crate and the typed seams at the crate root (`messages`,
//! `worker_call`); nothing browser-side: no `web_sys`, `js_sys` or `wasm_bindgen`, and
//! no `browser`, `content`, `ui` or `worker` (tidy checks it, `xtask/src/tidy.rs`).

pub mod api_error;
pub mod chip;
pub mod compose;
pub mod connection;
pub mod fit;
pub mod locate;
pub mod notify;
pub mod outbox;
pub mod pages;
pub mod queue;
pub mod redact;
pub mod refind;
pub mod settings;
pub mod stats;
pub mod throttle;
pub mod tray;
pub mod verify;

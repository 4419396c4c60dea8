//! The page side: what runs in the tab, compiled to JavaScript (wasm2js) into the
//! content module (feature `content`). `script` mounts the overlay and captures a circle,
//! `show` finds an item's elements again, `page_js` writes their messages as JS values,
//! and `capture` reads the page. `capture`'s pure half (geometry, selectors, strokes) is
//! built for every context: the overlay draws with its geometry. The content side may use
//! `rules`, `browser` and the seams at the crate root, never `ui` or `worker`.

pub mod capture;

#[cfg(feature = "content")]
pub mod page_js;
#[cfg(feature = "content")]
pub mod script;
#[cfg(feature = "content")]
pub mod show;

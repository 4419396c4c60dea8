//! Capturing what was circled: which elements the lasso covers and how to find each one
//! again. The rules are pure Rust, tested natively; the DOM adapters are compiled only
//! into the content module, which runs in the page.

pub mod element;
pub mod frames;
pub mod geometry;
pub mod pick;
pub mod secrets;
pub mod selector;
pub mod stroke;

#[cfg(feature = "content")]
pub mod console;
#[cfg(feature = "content")]
pub mod dom;
#[cfg(feature = "content")]
pub mod frame_dom;
#[cfg(feature = "content")]
pub mod page_watch;
#[cfg(feature = "content")]
pub mod screenshot;
#[cfg(feature = "content")]
pub mod selector_dom;
#[cfg(feature = "content")]
pub mod shot_ahead;
#[cfg(feature = "content")]
pub mod stroke_dom;
#[cfg(feature = "content")]
pub mod styles_dom;
#[cfg(feature = "content")]
pub mod text_dom;

//! How the overlay reads the page's messages (`messages::PageEvent`) from the objects
//! they arrive as: by their `type` first, then the variant's own fields straight from the
//! object. serde's derive for an internally tagged enum buffers the whole message before
//! it reads it, and that buffering, built for every type a capture holds, was some 58 KB
//! of the overlay's module before `wasm-opt` (BENCHMARKS.md, "What ships"). The content
//! module's browser tests (`page_js`) hold this to what the page writes and to serde's
//! reading of the same types.

use redline_protocol::{ElementStyles, Point};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use wasm_bindgen::JsValue;

use crate::messages::PageEvent;

/// `data` as the [`PageEvent`] its `type` names, or `None` when it is not one (any
/// script of the page may post the overlay's window anything).
pub fn read_page_event(data: &JsValue) -> Option<PageEvent> {
    let kind = js_sys::Reflect::get(data, &JsValue::from_str("type")).ok()?.as_string()?;
    match kind.as_str() {
        "redline:port" => read(data).map(|Port { token }| PageEvent::Port { token }),
        "redline:drawn" => read(data).map(|Drawn { stroke }| PageEvent::Drawn { stroke }),
        "redline:screenshot" => {
            read(data).map(|Screenshot { id, image }| PageEvent::Screenshot { id, image })
        }
        "redline:captured" => read(data).map(|captured| PageEvent::Captured(Box::new(captured))),
        "redline:styles" => read(data).map(|Styles { elements }| PageEvent::Styles { elements }),
        _ => None,
    }
}

/// The fields of `data` as `T` (its `type` left unread).
fn read<T: DeserializeOwned>(data: &JsValue) -> Option<T> {
    serde_wasm_bindgen::from_value(data.clone()).ok()
}

// The fields of `PageEvent`'s struct variants, in the same names.

#[derive(Deserialize)]
struct Port {
    token: String,
}

#[derive(Deserialize)]
struct Drawn {
    stroke: Vec<Point>,
}

#[derive(Deserialize)]
struct Screenshot {
    id: u32,
    image: String,
}

#[derive(Deserialize)]
struct Styles {
    elements: Vec<Option<ElementStyles>>,
}

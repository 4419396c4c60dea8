//! Waiting, in any context (window or worker): the global `setTimeout` as a future.

use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_name = setTimeout)]
    fn set_timeout(callback: &js_sys::Function, milliseconds: i32) -> JsValue;
}

/// Resolves after `milliseconds`.
pub async fn sleep(milliseconds: f64) {
    let delay = milliseconds.clamp(0.0, i32::MAX as f64) as i32;
    let done = js_sys::Promise::new(&mut |resolve, _| {
        set_timeout(&resolve, delay);
    });
    let _ = JsFuture::from(done).await;
}

/// Milliseconds since the epoch, from the JS clock.
pub fn now_ms() -> f64 {
    js_sys::Date::now()
}

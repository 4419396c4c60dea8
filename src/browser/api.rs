//! Calling the changes server (ours or Fabric's): `POST {apiUrl}/rpc/{name}` with the
//! protocol's envelope and a bearer token. The thin `fetch` adapter ([`Client::call`]),
//! usable from the worker and from pages; what a failure means is `rules::api_error`.

use redline_protocol::rpc::{Envelope, Rpc};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::rules::api_error::ApiError;
use crate::rules::settings::Settings;

#[wasm_bindgen]
extern "C" {
    /// The global `fetch`, present in windows and workers alike.
    #[wasm_bindgen(js_name = fetch)]
    fn global_fetch(request: &web_sys::Request) -> js_sys::Promise;
}

/// A client for one server and token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Client {
    api_url: String,
    token: String,
}

impl Client {
    pub fn new(settings: &Settings) -> Client {
        Client { api_url: settings.api_url.trim_end_matches('/').to_owned(), token: settings.token.clone() }
    }

    /// Calls RPC `R` with `input`, writing and reading the JSON in wasm (serde_json):
    /// long answers (a queue of 1,000 items) are read without a crossing into JS per
    /// field.
    pub async fn call<R: Rpc>(&self, input: R::Input) -> Result<R::Output, ApiError> {
        let body = serde_json::to_string(&Envelope::<R::Input>::new::<R>(input))
            .map_err(|e| ApiError::BadReply(e.to_string()))?;
        let (status, text, retry_after) = self
            .post(R::NAME, &JsValue::from_str(&body))
            .await
            .map_err(|e| ApiError::Network(crate::browser::chrome::js_error_message(&e)))?;
        if (200..300).contains(&status) {
            serde_json::from_str(&text).map_err(|e| ApiError::BadReply(e.to_string()))
        } else {
            Err(ApiError::from_response(status, &text, retry_after.as_deref()))
        }
    }

    /// Calls RPC `R` with `input` as [`Client::call`] does, but has the browser write and
    /// parse the JSON (`JSON.stringify`, `JSON.parse`) and serde-wasm-bindgen convert
    /// the values: a module that makes only these calls carries no JSON parser of its
    /// own. The overlay's are (its answers are short, and a gesture waits for its module),
    /// and the worker's (a background poll and the outbox; Chrome restarts it on any event).
    pub async fn call_parsed_by_browser<R: Rpc>(&self, input: R::Input) -> Result<R::Output, ApiError> {
        use serde::Serialize;
        let written = Envelope::<R::Input>::new::<R>(input)
            .serialize(&serde_wasm_bindgen::Serializer::json_compatible())
            .map_err(|e| ApiError::BadReply(e.to_string()))?;
        let body = js_sys::JSON::stringify(&written)
            .map_err(|e| ApiError::BadReply(crate::browser::chrome::js_error_message(&e)))?;
        let (status, text, retry_after) = self
            .post(R::NAME, &body)
            .await
            .map_err(|e| ApiError::Network(crate::browser::chrome::js_error_message(&e)))?;
        let parsed = js_sys::JSON::parse(&text);
        if (200..300).contains(&status) {
            let parsed =
                parsed.map_err(|e| ApiError::BadReply(crate::browser::chrome::js_error_message(&e)))?;
            serde_wasm_bindgen::from_value(parsed).map_err(|e| ApiError::BadReply(e.to_string()))
        } else {
            let body = parsed.ok().and_then(|parsed| serde_wasm_bindgen::from_value(parsed).ok());
            Err(ApiError::from_parts(status, body, retry_after.as_deref()))
        }
    }

    /// POSTs `body` (a JSON string) to RPC `name`: the status, the body as text and the
    /// `Retry-After` header.
    async fn post(&self, name: &str, body: &JsValue) -> Result<(u16, String, Option<String>), JsValue> {
        let init = web_sys::RequestInit::new();
        init.set_method("POST");
        init.set_mode(web_sys::RequestMode::Cors);
        init.set_body(body);
        let headers = web_sys::Headers::new()?;
        headers.set("Content-Type", "application/json")?;
        headers.set("Authorization", &format!("Bearer {}", self.token))?;
        init.set_headers(&headers);
        let request =
            web_sys::Request::new_with_str_and_init(&format!("{}/rpc/{name}", self.api_url), &init)?;
        let response: web_sys::Response = JsFuture::from(global_fetch(&request)).await?.dyn_into()?;
        let retry_after = response.headers().get("Retry-After")?;
        // The body as bytes, copied into wasm memory in one go: `text()` would cross as a
        // JS string, which the glue re-encodes character by character (a 1,000-item list
        // is 600 KB).
        let body = JsFuture::from(response.array_buffer()?).await?;
        let bytes = js_sys::Uint8Array::new(&body).to_vec();
        let text =
            String::from_utf8(bytes).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned());
        Ok((response.status(), text, retry_after))
    }
}

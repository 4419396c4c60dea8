//! Calling the changes server (ours or Fabric's): `POST {apiUrl}/rpc/{name}` with the
//! protocol's envelope and a bearer token. The error rules are pure and tested natively;
//! [`Client::call`] is the thin `fetch` adapter, usable from the worker and from pages.

use redline_protocol::StatusClass;
use redline_protocol::rpc::{Envelope, Rpc};
use serde::Deserialize;
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

use crate::settings::Settings;

/// A failed call, classified the way the protocol tells clients to treat it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// The server could not be reached at all.
    Network(String),
    /// 408, 429 and 5xx: try again later (`retry_after` in seconds when the server said).
    Transient { status: u16, message: String, retry_after: Option<u32> },
    /// 401 and 403: the token is missing, wrong, revoked or lacks the scope.
    SignIn { status: u16, message: String },
    /// 409: a decision to show the person; `code` says which conflict.
    Conflict { code: Option<String>, message: String },
    /// 404: the RPC or the item is gone.
    Gone { message: String },
    /// Any other 4xx: the request itself was wrong (the message names the field).
    Rejected { status: u16, message: String },
    /// A 2xx whose body was not the expected output.
    BadReply(String),
}

#[derive(Deserialize)]
struct ErrorBody {
    message: Option<String>,
    code: Option<String>,
}

impl ApiError {
    /// Classifies a non-2xx answer from its status, body and `Retry-After` header.
    pub fn from_response(status: u16, body: &str, retry_after: Option<&str>) -> ApiError {
        ApiError::from_parts(status, serde_json::from_str::<ErrorBody>(body).ok(), retry_after)
    }

    /// [`ApiError::from_response`] with the body already parsed (`None`: not the
    /// protocol's error object).
    fn from_parts(status: u16, parsed: Option<ErrorBody>, retry_after: Option<&str>) -> ApiError {
        let code = parsed.as_ref().and_then(|b| b.code.clone());
        let message = parsed
            .and_then(|b| b.message)
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| format!("the server answered {status}"));
        match StatusClass::of(status) {
            StatusClass::SignIn => ApiError::SignIn { status, message },
            StatusClass::Gone => ApiError::Gone { message },
            StatusClass::Conflict => ApiError::Conflict { code, message },
            StatusClass::Transient => ApiError::Transient {
                status,
                message,
                retry_after: retry_after.and_then(|v| v.trim().parse().ok()),
            },
            StatusClass::Rejected => ApiError::Rejected { status, message },
        }
    }

    /// Whether the same call may succeed later without anyone doing anything.
    pub fn is_transient(&self) -> bool {
        matches!(self, ApiError::Network(_) | ApiError::Transient { .. })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Network(detail) => write!(f, "Cannot reach the server ({detail})."),
            ApiError::Transient { message, .. } => write!(f, "The server is busy or failing: {message}"),
            ApiError::SignIn { message, .. } => write!(f, "Sign in again: {message}"),
            ApiError::Conflict { message, .. }
            | ApiError::Gone { message }
            | ApiError::Rejected { message, .. } => f.write_str(message),
            ApiError::BadReply(detail) => write!(f, "The server's answer was not understood: {detail}"),
        }
    }
}

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
            .map_err(|e| ApiError::Network(crate::chrome::js_error_message(&e)))?;
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
            .map_err(|e| ApiError::BadReply(crate::chrome::js_error_message(&e)))?;
        let (status, text, retry_after) = self
            .post(R::NAME, &body)
            .await
            .map_err(|e| ApiError::Network(crate::chrome::js_error_message(&e)))?;
        let parsed = js_sys::JSON::parse(&text);
        if (200..300).contains(&status) {
            let parsed = parsed.map_err(|e| ApiError::BadReply(crate::chrome::js_error_message(&e)))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_what_the_client_should_do() {
        let body = r#"{"message":"token revoked","code":"unauthorized"}"#;
        assert_eq!(
            ApiError::from_response(401, body, None),
            ApiError::SignIn { status: 401, message: "token revoked".into() }
        );
        assert!(matches!(ApiError::from_response(403, "{}", None), ApiError::SignIn { status: 403, .. }));
        assert!(matches!(ApiError::from_response(404, "", None), ApiError::Gone { .. }));
        assert_eq!(
            ApiError::from_response(409, r#"{"message":"held","code":"not_claimable"}"#, None),
            ApiError::Conflict { code: Some("not_claimable".into()), message: "held".into() }
        );
        assert!(matches!(ApiError::from_response(400, r#"{"message":"title: too long"}"#, None),
            ApiError::Rejected { status: 400, ref message } if message == "title: too long"));
    }

    #[test]
    fn transient_errors_carry_retry_after() {
        let error = ApiError::from_response(429, r#"{"message":"slow down"}"#, Some(" 7 "));
        assert_eq!(
            error,
            ApiError::Transient { status: 429, message: "slow down".into(), retry_after: Some(7) }
        );
        assert!(error.is_transient());
        for status in [408, 500, 502, 503] {
            assert!(ApiError::from_response(status, "<html>", None).is_transient(), "{status}");
        }
        assert!(ApiError::Network("offline".into()).is_transient());
        assert!(!ApiError::from_response(400, "", None).is_transient());
    }

    #[test]
    fn a_body_without_message_still_explains_itself() {
        assert_eq!(
            ApiError::from_response(502, "Bad Gateway", None).to_string(),
            "The server is busy or failing: the server answered 502"
        );
    }
}

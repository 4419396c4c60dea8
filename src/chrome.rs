//! Typed bindings for the few `chrome.*` calls Redline makes. Every MV3 call used here
//! returns a promise; these wrappers turn them into Rust futures and typed results.
//! This is an adapter: no logic lives here.

use js_sys::{Object, Promise, Reflect};
use serde::{Serialize, de::DeserializeOwned};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = ["chrome", "runtime"], js_name = getURL)]
    fn runtime_get_url(path: &str) -> String;

    #[wasm_bindgen(js_namespace = ["chrome", "runtime"], js_name = sendMessage, catch)]
    fn runtime_send_message(message: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "storage", "local"], js_name = get, catch)]
    fn storage_local_get(keys: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "storage", "local"], js_name = set, catch)]
    fn storage_local_set(items: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "permissions"], js_name = request, catch)]
    fn permissions_request(permissions: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "tabs"], js_name = query, catch)]
    fn tabs_query(query: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "scripting"], js_name = executeScript, catch)]
    fn scripting_execute_script(injection: &JsValue) -> Result<Promise, JsValue>;
}

/// What a `chrome.*` call failed with, as Chrome words it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChromeError(pub String);

impl std::fmt::Display for ChromeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<JsValue> for ChromeError {
    fn from(value: JsValue) -> Self {
        let message = Reflect::get(&value, &JsValue::from_str("message"))
            .ok()
            .and_then(|m| m.as_string())
            .or_else(|| value.as_string())
            .unwrap_or_else(|| format!("{value:?}"));
        ChromeError(message)
    }
}

impl From<serde_wasm_bindgen::Error> for ChromeError {
    fn from(value: serde_wasm_bindgen::Error) -> Self {
        ChromeError(value.to_string())
    }
}

async fn settle(promise: Result<Promise, JsValue>) -> Result<JsValue, ChromeError> {
    Ok(JsFuture::from(promise?).await?)
}

fn to_js<T: Serialize + ?Sized>(value: &T) -> Result<JsValue, ChromeError> {
    Ok(value.serialize(&serde_wasm_bindgen::Serializer::json_compatible())?)
}

/// The absolute `chrome-extension://…` URL of a file in the extension.
pub fn extension_url(path: &str) -> String {
    runtime_get_url(path)
}

/// The origin of this extension's pages, e.g. `chrome-extension://abc…`, without a slash.
pub fn extension_origin() -> String {
    extension_url("").trim_end_matches('/').to_owned()
}

/// Sends a message to the extension's other contexts and waits for the first answer.
pub async fn send_message<T: Serialize, R: DeserializeOwned>(message: &T) -> Result<R, ChromeError> {
    let reply = settle(runtime_send_message(&to_js(message)?)).await?;
    Ok(serde_wasm_bindgen::from_value(reply)?)
}

/// Reads one key of `chrome.storage.local`; `None` when it was never written.
pub async fn storage_get<T: DeserializeOwned>(key: &str) -> Result<Option<T>, ChromeError> {
    let items = settle(storage_local_get(&JsValue::from_str(key))).await?;
    let value = Reflect::get(&items, &JsValue::from_str(key))?;
    if value.is_undefined() {
        return Ok(None);
    }
    Ok(Some(serde_wasm_bindgen::from_value(value)?))
}

/// Writes one key of `chrome.storage.local`.
pub async fn storage_set<T: Serialize>(key: &str, value: &T) -> Result<(), ChromeError> {
    let items = Object::new();
    Reflect::set(&items, &JsValue::from_str(key), &to_js(value)?)?;
    settle(storage_local_set(&items)).await?;
    Ok(())
}

/// Asks the person for access to these origins (match patterns); resolves to whether
/// access was granted. Chrome only shows the prompt during a user gesture, so the call
/// is made at once, not when the returned future is first polled.
pub fn request_host_permission(
    origins: &[String],
) -> impl std::future::Future<Output = Result<bool, ChromeError>> + use<> {
    #[derive(Serialize)]
    struct Permissions<'a> {
        origins: &'a [String],
    }
    let pending = to_js(&Permissions { origins }).map(|p| permissions_request(&p));
    async move {
        let granted = settle(pending?).await?;
        Ok(granted.as_bool().unwrap_or(false))
    }
}

/// The part of `chrome.tabs.Tab` Redline reads.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Tab {
    pub id: Option<i32>,
    pub url: Option<String>,
}

/// The active tab of the window the person used last.
pub async fn active_tab() -> Result<Option<Tab>, ChromeError> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Query {
        active: bool,
        last_focused_window: bool,
    }
    let tabs = settle(tabs_query(&to_js(&Query { active: true, last_focused_window: true })?)).await?;
    let tabs: Vec<Tab> = serde_wasm_bindgen::from_value(tabs)?;
    Ok(tabs.into_iter().next())
}

/// Runs extension script files in a tab's top frame.
pub async fn execute_script(tab_id: i32, files: &[&str]) -> Result<(), ChromeError> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Target {
        tab_id: i32,
    }
    #[derive(Serialize)]
    struct Injection<'a> {
        target: Target,
        files: &'a [&'a str],
    }
    settle(scripting_execute_script(&to_js(&Injection { target: Target { tab_id }, files })?)).await?;
    Ok(())
}

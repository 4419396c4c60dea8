//! Typed bindings for the few `chrome.*` calls Redline makes. Every MV3 call used here
//! returns a promise; these wrappers turn them into Rust futures and typed results.
//! This is an adapter: no logic lives here. Where Firefox differs, `browser` says so.

mod browser;

use js_sys::{Object, Promise, Reflect};
use serde::{Serialize, de::DeserializeOwned};
use wasm_bindgen::prelude::*;
use wasm_bindgen_futures::JsFuture;

pub use browser::{
    has_closed_shadow_root, open_or_closed_shadow_root, open_side_panel, restrict_local_storage,
};

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

    #[wasm_bindgen(js_namespace = ["chrome", "storage", "local"], js_name = remove, catch)]
    fn storage_local_remove(keys: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "permissions"], js_name = request, catch)]
    fn permissions_request(permissions: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "tabs"], js_name = query, catch)]
    fn tabs_query(query: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "tabs"], js_name = captureVisibleTab, catch)]
    fn tabs_capture_visible_tab(window_id: i32, options: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "scripting"], js_name = getRegisteredContentScripts, catch)]
    fn scripting_get_registered_content_scripts(filter: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "scripting"], js_name = registerContentScripts, catch)]
    fn scripting_register_content_scripts(scripts: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "scripting"], js_name = updateContentScripts, catch)]
    fn scripting_update_content_scripts(scripts: &JsValue) -> Result<Promise, JsValue>;

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
        ChromeError(js_error_message(&value))
    }
}

/// What a thrown JS value says: an `Error`'s `message`, a thrown string, or its debug form.
pub fn js_error_message(value: &JsValue) -> String {
    Reflect::get(value, &JsValue::from_str("message"))
        .ok()
        .and_then(|m| m.as_string())
        .or_else(|| value.as_string())
        .unwrap_or_else(|| format!("{value:?}"))
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

/// Sends a message to the extension's other contexts and waits for the first answer
/// (the calls to the worker: `ui::call`, and `page_js::call` without serde).
pub async fn send_js_message(message: &JsValue) -> Result<JsValue, ChromeError> {
    settle(runtime_send_message(message)).await
}

/// One area of `chrome.storage`: its `get`, `set` and `remove`, read and written the same
/// way whichever area it is.
struct StorageArea {
    get: fn(&JsValue) -> Result<Promise, JsValue>,
    set: fn(&JsValue) -> Result<Promise, JsValue>,
    remove: fn(&JsValue) -> Result<Promise, JsValue>,
}

const LOCAL: StorageArea =
    StorageArea { get: storage_local_get, set: storage_local_set, remove: storage_local_remove };
const SESSION: StorageArea =
    StorageArea { get: storage_session_get, set: storage_session_set, remove: storage_session_remove };

impl StorageArea {
    async fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, ChromeError> {
        let items = settle((self.get)(&JsValue::from_str(key))).await?;
        let value = Reflect::get(&items, &JsValue::from_str(key))?;
        if value.is_undefined() {
            return Ok(None);
        }
        Ok(Some(serde_wasm_bindgen::from_value(value)?))
    }

    async fn set<T: Serialize + ?Sized>(&self, key: &str, value: &T) -> Result<(), ChromeError> {
        let items = Object::new();
        Reflect::set(&items, &JsValue::from_str(key), &to_js(value)?)?;
        settle((self.set)(&items)).await?;
        Ok(())
    }

    async fn remove(&self, key: &str) -> Result<(), ChromeError> {
        settle((self.remove)(&JsValue::from_str(key))).await?;
        Ok(())
    }
}

/// Reads one key of `chrome.storage.local`; `None` when it was never written.
pub async fn storage_get<T: DeserializeOwned>(key: &str) -> Result<Option<T>, ChromeError> {
    LOCAL.get(key).await
}

/// Writes one key of `chrome.storage.local`.
pub async fn storage_set<T: Serialize>(key: &str, value: &T) -> Result<(), ChromeError> {
    LOCAL.set(key, value).await
}

/// Removes one key of `chrome.storage.local`.
pub async fn storage_remove(key: &str) -> Result<(), ChromeError> {
    LOCAL.remove(key).await
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
#[serde(rename_all = "camelCase")]
pub struct Tab {
    pub id: Option<i32>,
    pub url: Option<String>,
    pub window_id: Option<i32>,
}

/// The part of `chrome.runtime.MessageSender` Redline reads: which tab sent a message
/// (absent for extension pages outside tabs, such as the side panel), and the URL of
/// the page or frame that sent it.
#[derive(Debug, Clone, Default, serde::Deserialize)]
pub struct MessageSender {
    pub tab: Option<Tab>,
    #[serde(default)]
    pub url: String,
}

/// A PNG of the visible part of the active tab of `window_id`, as a `data:` URL. Needs
/// `activeTab` from a gesture or a host permission for the page.
pub async fn capture_visible_tab(window_id: i32) -> Result<String, ChromeError> {
    #[derive(Serialize)]
    struct Options {
        format: &'static str,
    }
    let url = settle(tabs_capture_visible_tab(window_id, &to_js(&Options { format: "png" })?)).await?;
    url.as_string().ok_or_else(|| ChromeError("captureVisibleTab returned no image".into()))
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
    #[serde(rename_all = "camelCase")]
    struct Injection<'a> {
        target: Target,
        files: &'a [&'a str],
        /// Into a loaded page at once, rather than when its renderer next idles: the
        /// script answers a gesture, and a person waits for it.
        inject_immediately: bool,
    }
    let injection = Injection { target: Target { tab_id }, files, inject_immediately: true };
    settle(scripting_execute_script(&to_js(&injection)?)).await?;
    Ok(())
}

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = ["chrome", "alarms"], js_name = create, catch)]
    fn alarms_create(name: &str, info: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "alarms"], js_name = clear, catch)]
    fn alarms_clear(name: &str) -> Result<Promise, JsValue>;
}

/// The part of `chrome.alarms.Alarm` Redline reads.
#[derive(Debug, Clone, serde::Deserialize)]
pub struct Alarm {
    pub name: String,
}

/// Sets (or moves) the alarm `name` to fire once at `when` (ms since the epoch). Chrome
/// wakes the worker for it, also after a restart if the alarm survived.
pub async fn set_alarm(name: &str, when: f64) -> Result<(), ChromeError> {
    #[derive(Serialize)]
    struct AlarmInfo {
        when: f64,
    }
    settle(alarms_create(name, &to_js(&AlarmInfo { when })?)).await?;
    Ok(())
}

/// Cancels the alarm `name`; nothing happens if there is none.
pub async fn clear_alarm(name: &str) -> Result<(), ChromeError> {
    settle(alarms_clear(name)).await?;
    Ok(())
}

// ---- The side panel's queue: badge, polling alarm, the tab it follows, show on page ----

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = ["chrome", "action"], js_name = setBadgeText, catch)]
    fn action_set_badge_text(details: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "action"], js_name = setBadgeBackgroundColor, catch)]
    fn action_set_badge_background_color(details: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "alarms"], js_name = get, catch)]
    fn alarms_get(name: &str) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "tabs", "onActivated"], js_name = addListener)]
    fn tabs_on_activated_add_listener(callback: &js_sys::Function);

    #[wasm_bindgen(js_namespace = ["chrome", "tabs", "onActivated"], js_name = removeListener)]
    fn tabs_on_activated_remove_listener(callback: &js_sys::Function);

    #[wasm_bindgen(js_namespace = ["chrome", "tabs", "onUpdated"], js_name = addListener)]
    fn tabs_on_updated_add_listener(callback: &js_sys::Function);

    #[wasm_bindgen(js_namespace = ["chrome", "tabs", "onUpdated"], js_name = removeListener)]
    fn tabs_on_updated_remove_listener(callback: &js_sys::Function);

    #[wasm_bindgen(js_namespace = ["chrome", "tabs"], js_name = getCurrent, catch)]
    fn tabs_get_current() -> Result<Promise, JsValue>;
}

/// Sets the toolbar button's badge (empty text hides it), in Redline's red.
pub async fn set_badge(text: &str) -> Result<(), ChromeError> {
    #[derive(Serialize)]
    struct Text<'a> {
        text: &'a str,
    }
    #[derive(Serialize)]
    struct Color {
        color: &'static str,
    }
    settle(action_set_badge_background_color(&to_js(&Color { color: "#dc2626" })?)).await?;
    settle(action_set_badge_text(&to_js(&Text { text })?)).await?;
    Ok(())
}

/// Makes sure the repeating alarm `name` exists (every `minutes`; Chrome's minimum is
/// half a minute), without moving it when it does.
pub async fn ensure_repeating_alarm(name: &str, minutes: f64) -> Result<(), ChromeError> {
    let existing = settle(alarms_get(name)).await?;
    if !existing.is_undefined() && !existing.is_null() {
        return Ok(());
    }
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct AlarmInfo {
        delay_in_minutes: f64,
        period_in_minutes: f64,
    }
    settle(alarms_create(
        name,
        &to_js(&AlarmInfo { delay_in_minutes: minutes, period_in_minutes: minutes })?,
    ))
    .await?;
    Ok(())
}

/// The tab this page runs in, when it is one (the panel opened as a tab); `None` in the
/// side panel.
pub async fn current_tab() -> Option<Tab> {
    let tab = settle(tabs_get_current()).await.ok()?;
    serde_wasm_bindgen::from_value(tab).ok()
}

/// Calls `on_change` whenever the person switches tabs or the active tab navigates.
/// The listeners stay until the returned guard is dropped.
pub fn on_tab_change(on_change: impl Fn() + 'static) -> TabListeners {
    let on_change = std::rc::Rc::new(on_change);
    let activated = {
        let on_change = on_change.clone();
        Closure::<dyn Fn(JsValue)>::new(move |_info: JsValue| on_change())
    };
    let updated = Closure::<dyn Fn(JsValue, JsValue, JsValue)>::new(
        move |_id: JsValue, info: JsValue, tab: JsValue| {
            let url_or_status = Reflect::has(&info, &JsValue::from_str("url")).unwrap_or(false)
                || Reflect::get(&info, &JsValue::from_str("status"))
                    .ok()
                    .and_then(|s| s.as_string())
                    .as_deref()
                    == Some("complete");
            let active = Reflect::get(&tab, &JsValue::from_str("active"))
                .ok()
                .and_then(|a| a.as_bool())
                .unwrap_or(false);
            if url_or_status && active {
                on_change();
            }
        },
    );
    tabs_on_activated_add_listener(activated.as_ref().unchecked_ref());
    tabs_on_updated_add_listener(updated.as_ref().unchecked_ref());
    TabListeners { activated, updated }
}

/// The listeners of [`on_tab_change`]; dropping it removes them.
pub struct TabListeners {
    activated: Closure<dyn Fn(JsValue)>,
    updated: Closure<dyn Fn(JsValue, JsValue, JsValue)>,
}

impl Drop for TabListeners {
    fn drop(&mut self) {
        tabs_on_activated_remove_listener(self.activated.as_ref().unchecked_ref());
        tabs_on_updated_remove_listener(self.updated.as_ref().unchecked_ref());
    }
}

// Self-contained functions Chrome serialises into the page (`executeScript`'s `func`).
// They load the content module (JavaScript, so strict CSPs allow it) and use only what
// it already exports: "Check on stage" adds no bytes to what a page loads.
#[cfg(feature = "worker")]
#[wasm_bindgen(inline_js = "export function in_frame(path, call, arg) {
  let own = [];
  for (let w = window; w.parent !== w; w = w.parent) {
    let i = 0;
    while (i < w.parent.length && w.parent[i] !== w) i++;
    own.unshift(i);
  }
  if (own.join() !== path.join()) return null;
  return import(chrome.runtime.getURL('content/content.js')).then((content) => call === 'show'
    ? { located: content.show_elements(arg), inFrames: content.elements_in_closed_frames(arg) }
    : call === 'refind' ? content.refind_elements(arg) : content.capture_frame(arg));
}
export function in_frame_function() { return in_frame; }
export function check_in_page(elements) {
  return import(chrome.runtime.getURL('content/content.js')).then((content) => {
    const located = content.show_elements(elements);
    const host = document.getElementById('redline-show-host');
    const sha = document.querySelector('meta[name=\"fabric-git-sha\"]');
    return {
      located,
      boxes: host ? JSON.parse(host.getAttribute('data-redline-boxes') || '[]') : [],
      scroll: { x: scrollX, y: scrollY },
      viewport: { width: innerWidth, height: innerHeight },
      devicePixelRatio,
      gitSha: sha && sha.content.trim() ? sha.content.trim() : null,
    };
  });
}
export function check_in_page_function() { return check_in_page; }
export function scroll_in_page(to) {
  scrollTo(to.x, to.y);
  return { x: scrollX, y: scrollY };
}
export function scroll_in_page_function() { return scroll_in_page; }")]
extern "C" {
    /// `in_frame(path, call, arg)`: in the frame at `path` (`frame_dom::frame_path`) only,
    /// and `null` in every other, either outlines the elements `arg` and answers a
    /// `locate::Shown` (`call` is `show`: what it found, and the elements in frames it
    /// may not read), finds them without outlining (`refind`: a `refind::PageRefind`),
    /// or captures what the outline `arg` (in the frame's viewport) circles there
    /// (`capture_frame`).
    fn in_frame_function() -> js_sys::Function;
    /// Outlines the elements and answers a `verify::PageView`: what was found, the
    /// outlined boxes, the scroll position, viewport, pixel ratio and the page's build.
    fn check_in_page_function() -> js_sys::Function;
    /// Scrolls to `{x, y}` and answers where the page came to rest.
    fn scroll_in_page_function() -> js_sys::Function;
}

/// What `in_frame` does in a frame: "Show on page" (`elements` in, a `locate::Shown`
/// out) or capturing what an outline in the frame's viewport circles there
/// (a `worker_call::FrameCaptured` out).
#[cfg(feature = "worker")]
#[derive(Debug, Clone, Copy)]
pub enum FrameCall {
    Show,
    /// Items re-found on a new build (`show::refind_elements`).
    Refind,
    Capture,
}

/// Runs `call` on `arg` in the frame of a tab at `frame_path` (`frame_dom::frame_path`;
/// the top frame for an empty one) and returns its answer. Chrome runs it only where
/// Redline has a host permission for the frame's origin (or `activeTab`, for the top
/// frame): in a frame of another origin, the frame is not found.
#[cfg(feature = "worker")]
pub async fn in_frame<T: Serialize, R: DeserializeOwned>(
    tab_id: i32,
    frame_path: &[u32],
    call: FrameCall,
    arg: &T,
) -> Result<R, ChromeError> {
    let call = match call {
        FrameCall::Show => "show",
        FrameCall::Refind => "refind",
        FrameCall::Capture => "capture",
    };
    // `in_frame` goes to every frame Redline may script and acts only in the one at the
    // path: Chrome tells a content script no frame id for a frame element.
    let args = js_sys::Array::of3(&to_js(frame_path)?, &JsValue::from_str(call), &to_js(arg)?);
    execute_in_tab(tab_id, !frame_path.is_empty(), in_frame_function(), args).await
}

/// "Check on stage" in a tab's top frame: outlines `elements` and answers what the page
/// shows (`verify::PageView`). Needs a host permission for the tab, or `activeTab` on it.
#[cfg(feature = "worker")]
pub async fn check_in_tab<T: Serialize, R: DeserializeOwned>(
    tab_id: i32,
    elements: &T,
) -> Result<R, ChromeError> {
    run_in_tab(tab_id, check_in_page_function(), to_js(elements)?).await
}

/// Scrolls a tab's top frame to `to` and answers where it came to rest.
#[cfg(feature = "worker")]
pub async fn scroll_tab<T: Serialize, R: DeserializeOwned>(tab_id: i32, to: &T) -> Result<R, ChromeError> {
    run_in_tab(tab_id, scroll_in_page_function(), to_js(to)?).await
}

/// Runs `func(arg)` in a tab's top frame and returns its answer.
#[cfg(feature = "worker")]
async fn run_in_tab<R: DeserializeOwned>(
    tab_id: i32,
    func: js_sys::Function,
    arg: JsValue,
) -> Result<R, ChromeError> {
    execute_in_tab(tab_id, false, func, js_sys::Array::of1(&arg)).await
}

/// `chrome.scripting.executeScript` of `func(...args)` in a tab's top frame or, with
/// `all_frames`, in every frame Redline may script, answered with the first frame's
/// answer that is not `null`.
#[cfg(feature = "worker")]
async fn execute_in_tab<R: DeserializeOwned>(
    tab_id: i32,
    all_frames: bool,
    func: js_sys::Function,
    args: js_sys::Array,
) -> Result<R, ChromeError> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Target {
        tab_id: i32,
        all_frames: bool,
    }
    let injection = js_sys::Object::new();
    Reflect::set(&injection, &"target".into(), &to_js(&Target { tab_id, all_frames })?)?;
    Reflect::set(&injection, &"func".into(), &func)?;
    Reflect::set(&injection, &"args".into(), &args)?;
    let results = settle(scripting_execute_script(&injection)).await?;
    let answer = js_sys::Array::from(&results)
        .iter()
        .map(|frame| Reflect::get(&frame, &JsValue::from_str("result")).unwrap_or(JsValue::UNDEFINED))
        .find(|result| !result.is_null() && !result.is_undefined());
    let answer = answer.ok_or_else(|| ChromeError("the page did not answer".into()))?;
    Ok(serde_wasm_bindgen::from_value(answer)?)
}

// ---- Check on stage: the stage tab and the toolbar button's tooltip ----

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = ["chrome", "tabs"], js_name = create, catch)]
    fn tabs_create(properties: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "tabs"], js_name = update, catch)]
    fn tabs_update(tab_id: i32, properties: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "tabs"], js_name = get, catch)]
    fn tabs_get(tab_id: i32) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "tabs"], js_name = reload, catch)]
    fn tabs_reload(tab_id: i32, properties: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "action"], js_name = setTitle, catch)]
    fn action_set_title(details: &JsValue) -> Result<Promise, JsValue>;
}

/// A tab as `tabs.get`/`tabs.create` tell it: with its loading status.
#[derive(Debug, Clone, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TabState {
    pub id: Option<i32>,
    pub url: Option<String>,
    pub window_id: Option<i32>,
    pub status: Option<String>,
}

/// Every tab (their URLs only where Redline has host access or `activeTab`).
pub async fn all_tabs() -> Result<Vec<Tab>, ChromeError> {
    let tabs = settle(tabs_query(&to_js(&serde_json::json!({}))?)).await?;
    Ok(serde_wasm_bindgen::from_value(tabs)?)
}

/// Opens `url` in a new active tab.
pub async fn open_tab(url: &str) -> Result<TabState, ChromeError> {
    let tab = settle(tabs_create(&to_js(&serde_json::json!({ "url": url, "active": true }))?)).await?;
    Ok(serde_wasm_bindgen::from_value(tab)?)
}

/// Makes a tab the active one of its window, loading `url` in it first when given.
pub async fn activate_tab(tab_id: i32, url: Option<&str>) -> Result<TabState, ChromeError> {
    let properties = match url {
        Some(url) => serde_json::json!({ "url": url, "active": true }),
        None => serde_json::json!({ "active": true }),
    };
    let tab = settle(tabs_update(tab_id, &to_js(&properties)?)).await?;
    Ok(serde_wasm_bindgen::from_value(tab)?)
}

/// Loads a tab's page again from the server (not from the cache).
pub async fn reload_tab(tab_id: i32) -> Result<(), ChromeError> {
    settle(tabs_reload(tab_id, &to_js(&serde_json::json!({ "bypassCache": true }))?)).await?;
    Ok(())
}

/// A tab's state now.
pub async fn tab_state(tab_id: i32) -> Result<TabState, ChromeError> {
    let tab = settle(tabs_get(tab_id)).await?;
    Ok(serde_wasm_bindgen::from_value(tab)?)
}

/// Sets the toolbar button's tooltip.
pub async fn set_action_title(title: &str) -> Result<(), ChromeError> {
    settle(action_set_title(&to_js(&serde_json::json!({ "title": title }))?)).await?;
    Ok(())
}

/// A content script registered at run time (`chrome.scripting.registerContentScripts`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, serde::Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RegisteredContentScript {
    pub id: String,
    pub matches: Vec<String>,
    pub js: Vec<String>,
    pub run_at: String,
    pub world: String,
    pub persist_across_sessions: bool,
}

/// The registered content script with this id, if any.
pub async fn registered_content_script(id: &str) -> Result<Option<RegisteredContentScript>, ChromeError> {
    #[derive(Serialize)]
    struct Filter<'a> {
        ids: [&'a str; 1],
    }
    let found = settle(scripting_get_registered_content_scripts(&to_js(&Filter { ids: [id] })?)).await?;
    let mut scripts: Vec<RegisteredContentScript> = serde_wasm_bindgen::from_value(found)?;
    Ok(scripts.pop())
}

/// Registers `script`, or updates the one registered under its id.
pub async fn register_content_script(
    script: &RegisteredContentScript,
    update: bool,
) -> Result<(), ChromeError> {
    let scripts = to_js(&[script])?;
    let pending = if update {
        scripting_update_content_scripts(&scripts)
    } else {
        scripting_register_content_scripts(&scripts)
    };
    settle(pending).await?;
    Ok(())
}

// ---- Notifications: announcing questions and checks, and opening the panel on a click ----

#[wasm_bindgen]
extern "C" {
    #[wasm_bindgen(js_namespace = ["chrome", "notifications"], js_name = create, catch)]
    fn notifications_create(id: &str, options: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "notifications"], js_name = clear, catch)]
    fn notifications_clear(id: &str) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "windows"], js_name = getLastFocused, catch)]
    fn windows_get_last_focused() -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "storage", "session"], js_name = get, catch)]
    fn storage_session_get(keys: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "storage", "session"], js_name = set, catch)]
    fn storage_session_set(items: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "storage", "session"], js_name = remove, catch)]
    fn storage_session_remove(keys: &JsValue) -> Result<Promise, JsValue>;

    #[wasm_bindgen(js_namespace = ["chrome", "storage", "onChanged"], js_name = addListener)]
    fn storage_on_changed_add_listener(callback: &js_sys::Function);

    #[wasm_bindgen(js_namespace = ["chrome", "storage", "onChanged"], js_name = removeListener)]
    fn storage_on_changed_remove_listener(callback: &js_sys::Function);
}

/// Shows (or replaces: the same `id`) a basic notification with Redline's icon.
pub async fn notify(id: &str, title: &str, message: &str) -> Result<(), ChromeError> {
    #[derive(Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Options<'a> {
        r#type: &'static str,
        icon_url: &'static str,
        title: &'a str,
        message: &'a str,
    }
    let options = Options { r#type: "basic", icon_url: "icons/128.png", title, message };
    settle(notifications_create(id, &to_js(&options)?)).await?;
    Ok(())
}

/// Takes a notification away.
pub async fn clear_notification(id: &str) -> Result<(), ChromeError> {
    settle(notifications_clear(id)).await?;
    Ok(())
}

/// The id of the window the person used last, if any.
pub async fn last_focused_window() -> Result<Option<i32>, ChromeError> {
    let window = settle(windows_get_last_focused()).await?;
    Ok(Reflect::get(&window, &JsValue::from_str("id"))?.as_f64().map(|id| id as i32))
}

/// Reads one key of `chrome.storage.session` (kept until the browser quits, readable by
/// the extension's own pages and worker only); `None` when it is not set.
pub async fn session_get<T: DeserializeOwned>(key: &str) -> Result<Option<T>, ChromeError> {
    SESSION.get(key).await
}

/// Writes one key of `chrome.storage.session`.
pub async fn session_set<T: Serialize + ?Sized>(key: &str, value: &T) -> Result<(), ChromeError> {
    SESSION.set(key, value).await
}

/// Removes one key of `chrome.storage.session`.
pub async fn session_remove(key: &str) -> Result<(), ChromeError> {
    SESSION.remove(key).await
}

/// Calls `on_set` whenever `key` of `chrome.storage.session` is set (not when it is
/// removed). The listener stays until the returned guard is dropped.
pub fn on_session_key_set(key: &'static str, on_set: impl Fn() + 'static) -> StorageListener {
    on_session_value::<serde::de::IgnoredAny>(key, move |_| on_set())
}

/// Calls `on_value` with the new value of `key` of `chrome.storage.session` whenever it
/// is set (not when it is removed; a value that does not read as `T` is skipped). The
/// listener stays until the returned guard is dropped.
pub fn on_session_value<T: DeserializeOwned>(
    key: &'static str,
    on_value: impl Fn(T) + 'static,
) -> StorageListener {
    let listener = Closure::<dyn Fn(JsValue, JsValue)>::new(move |changes: JsValue, area: JsValue| {
        if area.as_string().as_deref() != Some("session") {
            return;
        }
        let value = Reflect::get(&changes, &JsValue::from_str(key))
            .and_then(|change| Reflect::get(&change, &JsValue::from_str("newValue")));
        if let Ok(value) = value
            && !value.is_undefined()
            && let Ok(value) = serde_wasm_bindgen::from_value(value)
        {
            on_value(value);
        }
    });
    storage_on_changed_add_listener(listener.as_ref().unchecked_ref());
    StorageListener(listener)
}

/// The listener of [`on_session_value`]; dropping it removes it.
pub struct StorageListener(Closure<dyn Fn(JsValue, JsValue)>);

impl Drop for StorageListener {
    fn drop(&mut self) {
        storage_on_changed_remove_listener(self.0.as_ref().unchecked_ref());
    }
}

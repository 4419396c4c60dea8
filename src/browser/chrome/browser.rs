//! Where Chrome and Firefox differ, asked of the browser at run time (one build runs in
//! both; only the manifest differs, `xtask/src/manifest.rs`): opening the side panel
//! (Chrome's `sidePanel`, Firefox's `sidebarAction`), a content script's way into closed
//! shadow roots (Chrome's `chrome.dom`, Firefox's `Element.openOrClosedShadowRoot`), and
//! closing `storage.local` to content scripts (Chrome only). Everything else in
//! `chrome.*` answers alike in both.
//!
//! These calls are looked up by name rather than bound with `#[wasm_bindgen]`: a binding
//! to an API the browser lacks throws when called, so each one is found first and its
//! absence answered here.

use js_sys::{Function, Object, Reflect};
use wasm_bindgen::prelude::*;

use super::{ChromeError, settle};

/// The value at `path` below the global object, when each step is there.
fn value_at(path: &[&str]) -> Option<JsValue> {
    path.iter().try_fold(js_sys::global().into(), |object: JsValue, name| {
        let value = Reflect::get(&object, &JsValue::from_str(name)).ok()?;
        (!value.is_undefined() && !value.is_null()).then_some(value)
    })
}

/// The method at `path` (e.g. `["chrome", "sidePanel", "open"]`) with the object it is
/// called on, when this browser has it.
fn method_at(path: &[&str]) -> Option<(JsValue, Function)> {
    let (name, owner) = path.split_last()?;
    let this = value_at(owner)?;
    let method = Reflect::get(&this, &JsValue::from_str(name)).ok()?;
    method.is_function().then(|| (this, method.unchecked_into()))
}

/// How this browser opens closed shadow roots to a content script, asked once.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ClosedRoots {
    /// Chrome: `chrome.dom.openOrClosedShadowRoot(element)`.
    ChromeDom,
    /// Firefox: the `openOrClosedShadowRoot` property content scripts see on elements.
    ElementProperty,
    None,
}

thread_local! {
    static CLOSED_ROOTS: ClosedRoots = if method_at(&["chrome", "dom", "openOrClosedShadowRoot"]).is_some() {
        ClosedRoots::ChromeDom
    } else if value_at(&["Element", "prototype"])
        .is_some_and(|proto| Reflect::has(&proto, &"openOrClosedShadowRoot".into()).unwrap_or(false))
    {
        ClosedRoots::ElementProperty
    } else {
        ClosedRoots::None
    };
}

/// The shadow root `element` hosts, open or closed (content scripts only; a closed one is
/// what the page's own `shadowRoot` hides). An error where the browser cannot open a
/// closed one.
pub fn open_or_closed_shadow_root(
    element: &web_sys::Element,
) -> Result<Option<web_sys::ShadowRoot>, ChromeError> {
    let root = match CLOSED_ROOTS.with(|way| *way) {
        ClosedRoots::ChromeDom => {
            let (dom, open) = method_at(&["chrome", "dom", "openOrClosedShadowRoot"]).expect("asked before");
            open.call1(&dom, element)?
        }
        ClosedRoots::ElementProperty => Reflect::get(element, &"openOrClosedShadowRoot".into())?,
        ClosedRoots::None => return Err(ChromeError("this browser opens no closed shadow root".into())),
    };
    // Not checked with `instanceof`: a root in a frame is of that frame's window.
    Ok(root.is_object().then(|| root.unchecked_into()))
}

/// Whether `element` hosts a shadow root, open or closed, as far as the browser tells.
pub fn has_closed_shadow_root(element: &web_sys::Element) -> bool {
    open_or_closed_shadow_root(element).is_ok_and(|root| root.is_some())
}

/// Opens the side panel (Chrome) or the sidebar (Firefox) in a window. Both allow it
/// only while a gesture is being handled (a click on a notification counts), so the call
/// is made at once, not when the returned future is first polled. Firefox opens its
/// sidebar in the window the person is in, whatever `window_id` says.
pub fn open_side_panel(window_id: i32) -> impl std::future::Future<Output = Result<(), ChromeError>> + use<> {
    let pending = if let Some((side_panel, open)) = method_at(&["chrome", "sidePanel", "open"]) {
        let options = Object::new();
        let set = Reflect::set(&options, &"windowId".into(), &window_id.into());
        set.and_then(|_| open.call1(&side_panel, &options))
    } else if let Some((sidebar, open)) = method_at(&["chrome", "sidebarAction", "open"]) {
        open.call0(&sidebar)
    } else {
        Err(JsValue::from_str("this browser has neither a side panel nor a sidebar to open"))
    };
    async move {
        settle(pending.map(|p| p.unchecked_into())).await?;
        Ok(())
    }
}

/// Makes `chrome.storage.local` readable only by the extension's own pages and worker
/// (`TRUSTED_CONTEXTS`), not by content scripts: ours runs in pages, and a page that
/// subverted it has no business with the preferences and memory kept there. The token is
/// not there in either browser (`sign_in_store`). Answers whether the store is closed:
/// Firefox has no `setAccessLevel` and keeps `storage.local` open to content scripts.
pub async fn restrict_local_storage() -> Result<bool, ChromeError> {
    let Some((local, set_access_level)) = method_at(&["chrome", "storage", "local", "setAccessLevel"]) else {
        return Ok(false);
    };
    let options = Object::new();
    Reflect::set(&options, &"accessLevel".into(), &"TRUSTED_CONTEXTS".into())?;
    settle(set_access_level.call1(&local, &options).map(|p| p.unchecked_into())).await?;
    Ok(true)
}

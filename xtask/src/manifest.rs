//! The two extension manifests from one source: `manifest.json` at the root is Chrome's
//! as it ships, and Firefox's is derived from it here, so that a permission or a file
//! added once reaches both. Only what Firefox names or needs differently changes.

use anyhow::{Context, Result, bail};
use serde_json::{Map, Value, json};

/// The add-on id Firefox knows Redline by (AMO signs it under this id; storage and
/// granted permissions follow it across updates).
pub const GECKO_ID: &str = "redline@redline.invalid";

/// The oldest Firefox Redline is tested on: the ESR `cargo xtask test` installs (Debian's
/// `firefox-esr`). Older ones may lack an API the extension calls.
pub const GECKO_MIN_VERSION: &str = "153.0";

/// Firefox's manifest for the Chrome one in `chrome`:
/// - the worker is an event page: `background.scripts` (a module) for `service_worker`;
/// - the side panel is a sidebar: `sidebar_action` for `side_panel`, and no `sidePanel`
///   permission (Firefox has none);
/// - `browser_specific_settings.gecko`: the add-on id, the oldest version tested, and
///   what the extension transmits (AMO's data consent);
/// - `use_dynamic_url` goes: Firefox gives each install a random origin already and does
///   not know the key;
/// - `minimum_chrome_version` goes.
pub fn firefox(chrome: &Value) -> Result<Value> {
    let mut manifest = chrome.as_object().context("manifest.json is not an object")?.clone();
    manifest.remove("minimum_chrome_version");

    let worker = manifest
        .get("background")
        .and_then(|b| b.get("service_worker"))
        .and_then(Value::as_str)
        .context("manifest.json has no background.service_worker")?
        .to_owned();
    manifest.insert("background".into(), json!({ "scripts": [worker], "type": "module" }));

    let panel = manifest
        .remove("side_panel")
        .and_then(|p| p.get("default_path").and_then(Value::as_str).map(str::to_owned))
        .context("manifest.json has no side_panel.default_path")?;
    let icons = manifest.get("action").and_then(|a| a.get("default_icon")).cloned().unwrap_or(Value::Null);
    let name = manifest.get("name").cloned().unwrap_or(Value::Null);
    manifest.insert(
        "sidebar_action".into(),
        json!({ "default_panel": panel, "default_title": name, "default_icon": icons, "open_at_install": false }),
    );

    let permissions = manifest
        .get_mut("permissions")
        .and_then(Value::as_array_mut)
        .context("manifest.json has no permissions")?;
    let before = permissions.len();
    permissions.retain(|p| p != "sidePanel");
    if permissions.len() == before {
        bail!("manifest.json does not ask for sidePanel; the Firefox manifest expects to replace it");
    }

    for resource in
        manifest.get_mut("web_accessible_resources").and_then(Value::as_array_mut).into_iter().flatten()
    {
        if let Some(resource) = resource.as_object_mut() {
            resource.remove("use_dynamic_url");
        }
    }

    let mut gecko = Map::new();
    gecko.insert("id".into(), GECKO_ID.into());
    gecko.insert("strict_min_version".into(), GECKO_MIN_VERSION.into());
    // What leaves the browser: the circled page's elements, text, styles, URL, console
    // errors, failed requests and screenshot, sent to the changes server the person
    // configures. Nothing else is collected.
    gecko.insert("data_collection_permissions".into(), json!({ "required": ["websiteContent"] }));
    manifest.insert("browser_specific_settings".into(), json!({ "gecko": gecko }));
    Ok(Value::Object(manifest))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shipped() -> Value {
        serde_json::from_str(
            &std::fs::read_to_string(crate::workspace::root().join("manifest.json")).unwrap(),
        )
        .unwrap()
    }

    #[test]
    fn firefox_gets_an_event_page_a_sidebar_and_an_id() {
        let chrome = shipped();
        let firefox = firefox(&chrome).unwrap();
        assert_eq!(firefox["background"], json!({ "scripts": ["worker.js"], "type": "module" }));
        assert_eq!(firefox["sidebar_action"]["default_panel"], "panel.html");
        assert_eq!(firefox["sidebar_action"]["default_icon"], chrome["action"]["default_icon"]);
        assert!(firefox.get("side_panel").is_none() && firefox.get("minimum_chrome_version").is_none());
        let permissions = firefox["permissions"].as_array().unwrap();
        assert!(!permissions.contains(&json!("sidePanel")));
        assert_eq!(permissions.len() + 1, chrome["permissions"].as_array().unwrap().len());
        assert_eq!(firefox["browser_specific_settings"]["gecko"]["id"], GECKO_ID);
        assert_eq!(firefox["browser_specific_settings"]["gecko"]["strict_min_version"], GECKO_MIN_VERSION);
        assert!(firefox["web_accessible_resources"][0].get("use_dynamic_url").is_none());
    }

    #[test]
    fn everything_else_is_chrome_s() {
        let chrome = shipped();
        let firefox = firefox(&chrome).unwrap();
        for key in [
            "manifest_version",
            "name",
            "version",
            "icons",
            "action",
            "commands",
            "optional_host_permissions",
            "content_security_policy",
        ] {
            assert_eq!(firefox[key], chrome[key], "{key}");
        }
        assert_eq!(
            firefox["web_accessible_resources"][0]["resources"],
            chrome["web_accessible_resources"][0]["resources"]
        );
    }

    #[test]
    fn a_manifest_without_what_firefox_replaces_is_refused() {
        let mut chrome = shipped();
        chrome.as_object_mut().unwrap().remove("side_panel");
        assert!(firefox(&chrome).unwrap_err().to_string().contains("side_panel"));
    }
}

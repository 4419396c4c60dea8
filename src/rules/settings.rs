//! Where the extension finds its server, and the rules for accepting a URL and token.
//! Pure: the sign-in's store is `sign_in_store.rs`, the preferences' the panel and worker.

use serde::{Deserialize, Serialize};

/// The local server `cargo xtask start` runs; Fabric's API works the same way.
pub const DEFAULT_API_URL: &str = "http://127.0.0.1:7878";

/// The `chrome.storage.local` key earlier versions kept the settings, token included,
/// under; `sign_in_store.rs` moves them out to IndexedDB, where content scripts cannot
/// read them.
pub const LEGACY_STORAGE_KEY: &str = "settings";

/// The `chrome.storage.local` key of [`SignInSaved`]: not secret, so that the worker
/// hears of each new sign-in through `storage.onChanged` without the token being where
/// content scripts can read it.
pub const SIGNED_IN_KEY: &str = "signedIn";

/// The `chrome.storage.local` key of the [`Preferences`], apart from the sign-in so that
/// changing one does not need the other's form.
pub const PREFERENCES_KEY: &str = "preferences";

/// What the person chose in the panel's settings besides the server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", default)]
pub struct Preferences {
    /// Browser notifications when an agent asks the person something or a fix of theirs
    /// waits for their check (`notify.rs`). On unless switched off.
    pub notify: bool,
}

impl Default for Preferences {
    fn default() -> Self {
        Preferences { notify: true }
    }
}

/// That a sign-in was saved, and for which server: written beside each save, never the
/// token. `saved_at_ms` makes every save a change, as a store reports only changes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInSaved {
    pub api_url: String,
    pub saved_at_ms: f64,
}

/// What to write to the sign-in's store when `legacy`, the settings an earlier version
/// left in `storage.local`, is found: adopted only when the store has no complete
/// sign-in of its own (`current`), since one saved there is newer. The legacy copy is
/// removed whatever this answers.
pub fn adopt_legacy(current: Option<&Settings>, legacy: Option<Settings>) -> Option<Settings> {
    let legacy = legacy.filter(Settings::is_complete)?;
    (!current.is_some_and(Settings::is_complete)).then_some(legacy)
}

/// What the person configured in the panel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Settings {
    pub api_url: String,
    pub token: String,
}

impl Default for Settings {
    fn default() -> Self {
        Settings { api_url: DEFAULT_API_URL.to_owned(), token: String::new() }
    }
}

impl Settings {
    /// Checks and normalises what was typed into the settings form.
    pub fn from_form(api_url: &str, token: &str) -> Result<Settings, SettingsError> {
        let api_url = ApiUrl::parse(api_url)?;
        let token = token.trim();
        if token.is_empty() {
            return Err(SettingsError::MissingToken);
        }
        if token.chars().any(|c| c.is_whitespace() || c.is_control()) {
            return Err(SettingsError::TokenHasSpaces);
        }
        Ok(Settings { api_url: api_url.0, token: token.to_owned() })
    }

    /// Whether there is enough to call the server with.
    pub fn is_complete(&self) -> bool {
        !self.token.is_empty() && ApiUrl::parse(&self.api_url).is_ok()
    }
}

/// Why the settings form was refused, in words for the person.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SettingsError {
    NotAUrl,
    UnsupportedScheme,
    PlainHttpToRemoteHost(String),
    MissingToken,
    TokenHasSpaces,
}

impl std::fmt::Display for SettingsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SettingsError::NotAUrl => {
                f.write_str("The API URL must look like https://host or http://127.0.0.1:7878.")
            }
            SettingsError::UnsupportedScheme => {
                f.write_str("The API URL must start with https:// (or http:// for this machine).")
            }
            SettingsError::PlainHttpToRemoteHost(host) => write!(
                f,
                "Plain http would send your token to {host} in clear; use https://, or http:// only for this machine."
            ),
            SettingsError::MissingToken => f.write_str("Paste a token (from `redline token create`)."),
            SettingsError::TokenHasSpaces => {
                f.write_str("The token contains spaces; paste it exactly as printed.")
            }
        }
    }
}

/// A server base URL: `https://…`, or `http://…` to a loopback host only, because a
/// bearer token must never cross a network in clear. Stored without a trailing slash.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiUrl(String);

impl ApiUrl {
    pub fn parse(input: &str) -> Result<ApiUrl, SettingsError> {
        let input = input.trim().trim_end_matches('/');
        let (scheme, rest) = input.split_once("://").ok_or(SettingsError::NotAUrl)?;
        let scheme = scheme.to_ascii_lowercase();
        if scheme != "https" && scheme != "http" {
            return Err(SettingsError::UnsupportedScheme);
        }
        let authority = rest.split(['/', '?', '#']).next().unwrap_or_default();
        if authority.contains('@') {
            return Err(SettingsError::NotAUrl);
        }
        let host = host_of(authority).ok_or(SettingsError::NotAUrl)?;
        if scheme == "http" && !is_loopback(&host) {
            return Err(SettingsError::PlainHttpToRemoteHost(host));
        }
        if rest.contains(['?', '#']) {
            return Err(SettingsError::NotAUrl);
        }
        Ok(ApiUrl(format!("{scheme}://{rest}")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The match pattern Chrome needs host permission for, e.g. `https://api.example.com/*`
    /// (match patterns cover every port of the host).
    pub fn permission_pattern(&self) -> String {
        let (scheme, rest) = self.0.split_once("://").expect("parsed URLs have a scheme");
        let authority = rest.split('/').next().unwrap_or_default();
        let host = host_of(authority).expect("parsed URLs have a host");
        let host = if host.contains(':') { format!("[{host}]") } else { host };
        format!("{scheme}://{host}/*")
    }
}

/// The host of an `authority` (`host`, `host:port`, `[v6]:port`), lower-cased, without
/// brackets; `None` when it is not a plausible host.
fn host_of(authority: &str) -> Option<String> {
    let host = if let Some(v6) = authority.strip_prefix('[') {
        let (inside, after) = v6.split_once(']')?;
        if !(after.is_empty() || valid_port(after.strip_prefix(':')?)) {
            return None;
        }
        inside
    } else {
        match authority.split_once(':') {
            Some((host, port)) if valid_port(port) => host,
            Some(_) => return None,
            None => authority,
        }
    };
    let valid =
        !host.is_empty() && host.chars().all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | ':'));
    valid.then(|| host.to_ascii_lowercase())
}

fn valid_port(port: &str) -> bool {
    !port.is_empty() && port.len() <= 5 && port.parse::<u16>().is_ok()
}

fn is_loopback(host: &str) -> bool {
    host == "localhost"
        || host.ends_with(".localhost")
        || host == "::1"
        || host.strip_prefix("127.").is_some_and(|rest| {
            let parts: Vec<&str> = rest.split('.').collect();
            parts.len() == 3 && parts.iter().all(|p| p.parse::<u8>().is_ok())
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn https_urls_are_accepted_and_normalised() {
        let url = ApiUrl::parse(" https://api.pikkufabric.com/ ").unwrap();
        assert_eq!(url.as_str(), "https://api.pikkufabric.com");
        assert_eq!(url.permission_pattern(), "https://api.pikkufabric.com/*");
    }

    #[test]
    fn plain_http_is_only_for_loopback() {
        for ok in
            ["http://127.0.0.1:7878", "http://localhost:3000/api", "http://[::1]:80", "http://127.1.2.3"]
        {
            assert!(ApiUrl::parse(ok).is_ok(), "{ok} should be accepted");
        }
        assert_eq!(
            ApiUrl::parse("http://10.0.0.5:7878"),
            Err(SettingsError::PlainHttpToRemoteHost("10.0.0.5".into()))
        );
        assert!(matches!(
            ApiUrl::parse("http://127.0.0.1.evil.com"),
            Err(SettingsError::PlainHttpToRemoteHost(_))
        ));
        assert!(matches!(ApiUrl::parse("http://localhost@evil.com"), Err(SettingsError::NotAUrl)));
    }

    #[test]
    fn malformed_urls_are_refused() {
        for bad in [
            "",
            "api.example.com",
            "ftp://example.com",
            "https://",
            "https://host:99999",
            "https://a b",
            "https://h?x=1",
        ] {
            assert!(ApiUrl::parse(bad).is_err(), "{bad:?} should be refused");
        }
    }

    #[test]
    fn permission_pattern_drops_port_and_path_and_brackets_ipv6() {
        assert_eq!(
            ApiUrl::parse("http://127.0.0.1:7878/x").unwrap().permission_pattern(),
            "http://127.0.0.1/*"
        );
        assert_eq!(ApiUrl::parse("http://[::1]:7878").unwrap().permission_pattern(), "http://[::1]/*");
    }

    #[test]
    fn notifications_are_on_unless_switched_off() {
        assert!(Preferences::default().notify);
        let stored: Preferences = serde_json::from_value(serde_json::json!({})).unwrap();
        assert!(stored.notify, "preferences stored before the switch existed");
        let off: Preferences = serde_json::from_value(serde_json::json!({ "notify": false })).unwrap();
        assert!(!off.notify);
    }

    #[test]
    fn a_legacy_sign_in_is_adopted_only_when_none_is_stored() {
        let legacy = Settings::from_form(DEFAULT_API_URL, "rl_old").unwrap();
        let current = Settings::from_form("https://api.example.com", "rl_new").unwrap();
        assert_eq!(adopt_legacy(None, Some(legacy.clone())), Some(legacy.clone()));
        assert_eq!(adopt_legacy(Some(&Settings::default()), Some(legacy.clone())), Some(legacy.clone()));
        assert_eq!(adopt_legacy(Some(&current), Some(legacy)), None, "the one saved since wins");
        assert_eq!(adopt_legacy(None, Some(Settings::default())), None, "no token, nothing to keep");
        assert_eq!(adopt_legacy(None, None), None);
    }

    #[test]
    fn the_sign_in_flag_carries_no_token() {
        let flag = SignInSaved { api_url: DEFAULT_API_URL.into(), saved_at_ms: 1.0 };
        let json = serde_json::to_value(&flag).unwrap();
        assert_eq!(json, serde_json::json!({ "apiUrl": DEFAULT_API_URL, "savedAtMs": 1.0 }));
    }

    #[test]
    fn form_needs_a_token_without_spaces() {
        assert_eq!(Settings::from_form(DEFAULT_API_URL, "  "), Err(SettingsError::MissingToken));
        assert_eq!(Settings::from_form(DEFAULT_API_URL, "ab cd"), Err(SettingsError::TokenHasSpaces));
        let settings = Settings::from_form("http://127.0.0.1:7878/", " rl_abc ").unwrap();
        assert_eq!(settings, Settings { api_url: DEFAULT_API_URL.into(), token: "rl_abc".into() });
        assert!(settings.is_complete());
        assert!(!Settings::default().is_complete());
    }
}

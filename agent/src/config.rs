//! Where the agent CLI keeps what it remembers, in the user's config dir
//! (`$XDG_CONFIG_HOME/redline/` or `~/.config/redline/`):
//!
//! - `credentials.json` (mode 0600): a token per API URL and the last API URL signed in
//!   to. Tokens are never printed or logged; [`Credentials`] has no `Debug`.
//! - `claims.json` (mode 0600): the last claim per API URL and project, so `done`,
//!   `ask`, `reply` and `shot` can pass its `groupId` and `fence` and a superseded agent
//!   is refused instead of overwriting a newer one.

use std::collections::BTreeMap;
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use redline_protocol::{ClaimChangesOutput, Timestamp};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

/// `$XDG_CONFIG_HOME/redline` when that is an absolute path, else `~/.config/redline`.
pub fn config_dir_from(xdg_config_home: Option<&str>, home: Option<&str>) -> Option<PathBuf> {
    match (xdg_config_home.filter(|x| Path::new(x).is_absolute()), home.filter(|h| !h.is_empty())) {
        (Some(xdg), _) => Some(Path::new(xdg).join("redline")),
        (None, Some(home)) => Some(Path::new(home).join(".config").join("redline")),
        (None, None) => None,
    }
}

/// The config dir of this process's user.
pub fn config_dir() -> Result<PathBuf, String> {
    let xdg = std::env::var("XDG_CONFIG_HOME").ok();
    let home = std::env::var("HOME").ok();
    config_dir_from(xdg.as_deref(), home.as_deref())
        .ok_or_else(|| "cannot find a config directory: set HOME or XDG_CONFIG_HOME".to_owned())
}

/// An API URL the CLI may send a token to: `https://…`, or `http://…` only to a
/// loopback host ("a token must never cross a network in clear"). Returns it without
/// a trailing slash.
pub fn parse_api_url(raw: &str) -> Result<String, String> {
    let raw = raw.trim();
    let url = reqwest::Url::parse(raw).map_err(|e| format!("API URL {raw:?} is not a URL ({e})"))?;
    let host =
        url.host_str().filter(|h| !h.is_empty()).ok_or_else(|| format!("API URL {raw:?} has no host"))?;
    if url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(format!("API URL {raw:?} must not have a query, fragment or user name"));
    }
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(host) => {}
        "http" => {
            return Err(format!(
                "refusing plain http to {host}: a token must never cross a network in clear \
                 (use https, or http only to 127.0.0.1, localhost or [::1])"
            ));
        }
        other => return Err(format!("API URL {raw:?}: scheme {other:?} is not http(s)")),
    }
    Ok(url.as_str().trim_end_matches('/').to_owned())
}

/// `localhost` (and `*.localhost`), 127.0.0.0/8 and `[::1]`.
fn is_loopback(host: &str) -> bool {
    let bare = host.strip_prefix('[').and_then(|h| h.strip_suffix(']')).unwrap_or(host);
    match bare.parse::<std::net::IpAddr>() {
        Ok(ip) => ip.is_loopback(),
        Err(_) => {
            let d = bare.trim_end_matches('.').to_ascii_lowercase();
            d == "localhost" || d.ends_with(".localhost")
        }
    }
}

/// The saved sign-ins.
#[derive(Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_api_url: Option<String>,
    #[serde(default)]
    pub servers: BTreeMap<String, SavedLogin>,
}

/// A token for one API URL, and who it belongs to (for messages only).
#[derive(Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedLogin {
    pub token: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
}

/// The last claim of an agent on one API URL and project.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SavedClaim {
    pub group_id: String,
    pub fence: u64,
    pub claimed_by: String,
    pub title: String,
    pub change_ids: Vec<String>,
    pub short_ids: Vec<String>,
    #[serde(default)]
    pub claim_expires_at: Option<Timestamp>,
}

impl SavedClaim {
    pub fn from_output(out: &ClaimChangesOutput) -> SavedClaim {
        SavedClaim {
            group_id: out.group.group_id.clone(),
            fence: out.group.fence,
            claimed_by: out.group.claimed_by.clone().unwrap_or_default(),
            title: out.group.title.clone(),
            change_ids: out.changes.iter().map(|c| c.change_id.clone()).collect(),
            short_ids: out.changes.iter().map(|c| c.short_id.clone()).collect(),
            claim_expires_at: out.group.claim_expires_at,
        }
    }

    /// Whether `change_ref` (a change id, `#7` or `7`, as the user typed it) is one of
    /// this claim's items.
    pub fn contains(&self, change_ref: &str) -> bool {
        let r = change_ref.trim();
        let short = r.strip_prefix('#').unwrap_or(r);
        self.change_ids.iter().any(|id| id.eq_ignore_ascii_case(r))
            || self.short_ids.iter().any(|s| s == short)
    }
}

/// The key of a claim in `claims.json`.
pub fn claim_key(api_url: &str, project_id: &str) -> String {
    format!("{api_url} {project_id}")
}

/// Reads and writes the files of one config dir.
#[derive(Clone, Debug)]
pub struct ConfigStore {
    dir: PathBuf,
}

impl ConfigStore {
    pub fn new(dir: PathBuf) -> Self {
        ConfigStore { dir }
    }

    pub fn open() -> Result<Self, String> {
        config_dir().map(ConfigStore::new)
    }

    pub fn credentials_path(&self) -> PathBuf {
        self.dir.join("credentials.json")
    }

    fn claims_path(&self) -> PathBuf {
        self.dir.join("claims.json")
    }

    pub fn credentials(&self) -> Result<Credentials, String> {
        read_json(&self.credentials_path())
    }

    pub fn save_credentials(&self, creds: &Credentials) -> Result<(), String> {
        write_private(&self.dir, &self.credentials_path(), creds)
    }

    /// Stores `token` for `api_url` and makes it the last API URL.
    pub fn save_login(&self, api_url: &str, token: &str, name: Option<String>) -> Result<(), String> {
        let mut creds = self.credentials()?;
        creds.servers.insert(api_url.to_owned(), SavedLogin { token: token.to_owned(), name });
        creds.last_api_url = Some(api_url.to_owned());
        self.save_credentials(&creds)
    }

    pub fn claim(&self, api_url: &str, project_id: &str) -> Result<Option<SavedClaim>, String> {
        let claims: BTreeMap<String, SavedClaim> = read_json(&self.claims_path())?;
        Ok(claims.get(&claim_key(api_url, project_id)).cloned())
    }

    pub fn save_claim(&self, api_url: &str, project_id: &str, claim: SavedClaim) -> Result<(), String> {
        let mut claims: BTreeMap<String, SavedClaim> = read_json(&self.claims_path())?;
        claims.insert(claim_key(api_url, project_id), claim);
        write_private(&self.dir, &self.claims_path(), &claims)
    }
}

/// A JSON file, or the default when it does not exist.
fn read_json<T: DeserializeOwned + Default>(path: &Path) -> Result<T, String> {
    match fs::read(path) {
        Ok(bytes) => {
            serde_json::from_slice(&bytes).map_err(|e| format!("{} is not valid ({e})", path.display()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(T::default()),
        Err(e) => Err(format!("reading {}: {e}", path.display())),
    }
}

/// Writes `value` as JSON to `path`, readable by the user only (0600, in a 0700 dir),
/// through a temporary file so a crash never leaves half a file.
fn write_private<T: Serialize>(dir: &Path, path: &Path, value: &T) -> Result<(), String> {
    let io = |what: &str, e: std::io::Error| format!("{what} {}: {e}", path.display());
    create_private_dir(dir).map_err(|e| format!("creating {}: {e}", dir.display()))?;
    let json = serde_json::to_vec_pretty(value).expect("config serialises");
    let tmp = path.with_extension(format!("tmp{}", std::process::id()));
    let mut options = fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
    let mut file = options.open(&tmp).map_err(|e| io("writing", e))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        // The mode above only applies to a new file.
        file.set_permissions(fs::Permissions::from_mode(0o600)).map_err(|e| io("protecting", e))?;
    }
    file.write_all(&json).and_then(|()| file.sync_all()).map_err(|e| io("writing", e))?;
    fs::rename(&tmp, path).map_err(|e| io("replacing", e))
}

/// Creates `dir` (and its parents) readable by its owner only.
pub(crate) fn create_private_dir(dir: &Path) -> std::io::Result<()> {
    let mut builder = fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_the_config_dir() {
        assert_eq!(config_dir_from(Some("/x/cfg"), Some("/home/a")), Some(PathBuf::from("/x/cfg/redline")));
        // A relative XDG_CONFIG_HOME is ignored, as the spec says.
        assert_eq!(
            config_dir_from(Some("cfg"), Some("/home/a")),
            Some(PathBuf::from("/home/a/.config/redline"))
        );
        assert_eq!(config_dir_from(None, Some("/home/a")), Some(PathBuf::from("/home/a/.config/redline")));
        assert_eq!(config_dir_from(None, None), None);
    }

    #[test]
    fn api_urls_refuse_plain_http_off_loopback() {
        assert_eq!(parse_api_url("https://api.pikkufabric.com/").unwrap(), "https://api.pikkufabric.com");
        assert_eq!(parse_api_url("http://127.0.0.1:7878").unwrap(), "http://127.0.0.1:7878");
        assert_eq!(parse_api_url("http://127.3.4.5:1/api/").unwrap(), "http://127.3.4.5:1/api");
        assert_eq!(parse_api_url("http://localhost:7878").unwrap(), "http://localhost:7878");
        assert_eq!(parse_api_url("http://[::1]:7878").unwrap(), "http://[::1]:7878");
        for bad in [
            "http://example.com",
            "http://10.0.0.1:7878",
            "http://127.0.0.1.example.com",
            "ftp://127.0.0.1",
            "not a url",
            "https://a.example/?x=1",
            "https://user@a.example",
        ] {
            assert!(parse_api_url(bad).is_err(), "{bad}");
        }
        assert!(parse_api_url("http://example.com").unwrap_err().contains("in clear"));
    }

    #[test]
    fn files_are_private_and_round_trip() {
        let dir = tempfile::tempdir().unwrap();
        let store = ConfigStore::new(dir.path().join("redline"));
        assert!(store.credentials().unwrap().servers.is_empty());
        store.save_login("http://127.0.0.1:1", "rl_secret", Some("agent".into())).unwrap();
        store.save_login("https://b.example", "rl_other", None).unwrap();
        let creds = store.credentials().unwrap();
        assert_eq!(creds.last_api_url.as_deref(), Some("https://b.example"));
        assert_eq!(creds.servers["http://127.0.0.1:1"].token, "rl_secret");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let mode = fs::metadata(store.credentials_path()).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o600);
            let mode = fs::metadata(dir.path().join("redline")).unwrap().permissions().mode();
            assert_eq!(mode & 0o777, 0o700);
        }
        let claim = SavedClaim {
            group_id: "g".into(),
            fence: 7,
            claimed_by: "agent-a".into(),
            title: "Changes batch".into(),
            change_ids: vec!["3f2504e0-4f89-11d3-9a0c-0305e82c3301".into()],
            short_ids: vec!["3".into()],
            claim_expires_at: None,
        };
        store.save_claim("http://127.0.0.1:1", "p", claim.clone()).unwrap();
        assert_eq!(store.claim("http://127.0.0.1:1", "p").unwrap(), Some(claim.clone()));
        assert_eq!(store.claim("http://127.0.0.1:1", "q").unwrap(), None);
        assert!(claim.contains("#3") && claim.contains("3") && !claim.contains("4"));
        assert!(claim.contains("3F2504E0-4F89-11D3-9A0C-0305E82C3301"));
    }
}

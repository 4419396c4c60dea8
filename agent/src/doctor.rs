//! `redline doctor`: checks what an agent needs, in the order it needs it (the server,
//! a session that may claim, the event stream `wait` sleeps on, a checkout whose
//! commits the team can find, the skill, an MCP client that runs `redline mcp`) and
//! says for each failure what to run. The server, the session, the stream and the
//! checkout are required (a failure exits 1); the skill and MCP checks are advice for
//! whichever way the agent is not taught (a `note`, exit 0), as is a checkout without a
//! remote, which loses only the commits' links. Deciding each check from what was read
//! is pure and unit-tested; reading files and asking the server are the thin rest.

use std::path::{Path, PathBuf};
use std::time::Duration;

use redline_protocol::{GetSession, GetSessionInput, SCOPE_READ, SCOPE_WRITE, Session};
use serde::Serialize;
use serde_json::Value;

use crate::client::{self, Api, Error, exit};
use crate::config::{ConfigStore, Credentials};
use crate::git::{self, Remote};
use crate::session::{ServerChoice, api_url_of, choose_project, token_for};
use crate::{format, skill};

/// The checks' names, as printed and in `--json`.
const SERVER: &str = "server";
const SIGN_IN: &str = "sign-in";
const STREAM: &str = "event stream";
const CHECKOUT: &str = "git checkout";
const SKILL: &str = "skill";
const MCP: &str = "mcp";

/// How long the event stream may take to say `: connected` (it does so at once).
const STREAM_WAIT: Duration = Duration::from_secs(5);

const STREAM_FIX: &str = "a proxy between you and the server may buffer `text/event-stream`: let it pass \
                          unbuffered (nginx: `proxy_buffering off`). Until then `redline wait` falls back to \
                          polling every --interval seconds";

/// The `.mcp.json` that makes Claude Code start `redline mcp` in a project.
const MCP_JSON: &str = r#"{"mcpServers": {"redline": {"command": "redline", "args": ["mcp"]}}}"#;

/// One check's outcome.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Check {
    pub name: &'static str,
    pub ok: bool,
    /// `ok`, `note` (advice: not passed, but the agent can work) or `fail`.
    pub status: Status,
    pub detail: String,
    /// What to run or do; none when the check passed.
    pub fix: Option<String>,
}

/// How a check came out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Ok,
    /// Advice: something an agent may do without.
    Note,
    /// Something an agent cannot work without: doctor exits 1.
    Fail,
}

impl Check {
    fn pass(name: &'static str, detail: impl Into<String>) -> Check {
        Check { name, ok: true, status: Status::Ok, detail: detail.into(), fix: None }
    }

    fn fail(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { name, ok: false, status: Status::Fail, detail: detail.into(), fix: Some(fix.into()) }
    }

    fn note(name: &'static str, detail: impl Into<String>, fix: impl Into<String>) -> Check {
        Check { name, ok: false, status: Status::Note, detail: detail.into(), fix: Some(fix.into()) }
    }

    /// This check as advice: a failure of it is a note.
    fn advice(self) -> Check {
        match self.status {
            Status::Fail => Check { status: Status::Note, ..self },
            _ => self,
        }
    }

    /// A check that could not run because `needed` failed.
    fn not_checked(name: &'static str, needed: &str) -> Check {
        Check::fail(
            name,
            format!("not checked: the {needed} check failed"),
            format!("see the {needed} check"),
        )
    }
}

/// Runs the checks and prints them; exits 1 when a required one failed.
pub async fn run(server: ServerChoice, json: bool) -> Result<i32, Error> {
    let cwd =
        std::env::current_dir().map_err(|e| Error::local(format!("reading the current directory: {e}")))?;
    let home = std::env::var_os("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let top = git::toplevel(&cwd);
    // Where `skill install` writes and Claude Code and Cursor read project files.
    let project_dir = top.clone().unwrap_or_else(|| cwd.clone());
    let mut checks = server_checks(&server).await;
    checks.push(checkout_check(&cwd, top.as_deref(), &top.as_deref().map(git::remotes).unwrap_or_default()));
    // The skill teaches the CLI and MCP serves the tools: an agent needs one of them.
    checks.push(skill_check(&skill_copies(&cwd, home.as_deref()), &skill::default_dir(&cwd)).advice());
    let dirs = [project_dir.as_path(), cwd.as_path()];
    checks.push(mcp_check(&read_mcp_configs(&project_dir, home.as_deref()), &dirs).advice());
    if json {
        println!("{}", serde_json::to_string(&Report { checks: &checks }).expect("checks serialise"));
    } else {
        print!("{}", format::terminal_safe(&render(&checks)));
    }
    Ok(exit_code(&checks))
}

/// What `--json` prints.
#[derive(Serialize)]
struct Report<'a> {
    checks: &'a [Check],
}

/// A line a check, `ok`, `note` or `FAIL`, and under a note or failure its fix.
pub fn render(checks: &[Check]) -> String {
    let mut out = String::new();
    for c in checks {
        let mark = match c.status {
            Status::Ok => "ok",
            Status::Note => "note",
            Status::Fail => "FAIL",
        };
        out += &format!("{mark:<4} {}: {}\n", c.name, c.detail);
        for (i, line) in c.fix.iter().flat_map(|f| f.lines()).enumerate() {
            let lead = if i == 0 { "fix: " } else { "     " };
            out += &format!("     {lead}{line}\n");
        }
    }
    out
}

/// 0 when no required check failed (notes are advice), else 1.
pub fn exit_code(checks: &[Check]) -> i32 {
    if checks.iter().any(|c| c.status == Status::Fail) { exit::FAILED } else { exit::OK }
}

/// The server, the session and the event stream: each needs the one before it.
async fn server_checks(args: &ServerChoice) -> Vec<Check> {
    let unreachable =
        |server: Check| vec![server, Check::not_checked(SIGN_IN, SERVER), Check::not_checked(STREAM, SERVER)];
    let creds = match stored_credentials() {
        Ok(creds) => creds,
        Err(failed) => return unreachable(failed),
    };
    let api_url = match api_url_of(&creds, args) {
        Ok(url) => url,
        Err(e) => return unreachable(Check::fail(SERVER, e.to_string(), "redline login --api-url URL")),
    };
    if let Err(e) = client::health(&api_url).await {
        let fix = match e {
            Error::Api { .. } => format!("the server at {api_url} answers but is unwell: see its log"),
            _ => format!(
                "check that the server runs at {api_url}, or use the right URL: \
                 `redline login --api-url URL` (or --api-url / REDLINE_API_URL)"
            ),
        };
        return unreachable(Check::fail(SERVER, e.to_string(), fix));
    }
    let server = Check::pass(SERVER, format!("{api_url} answers GET /healthz"));
    let (sign_in, session) = sign_in_check(&creds, args, &api_url).await;
    let stream = match session {
        Some((api, project_id)) => stream_check(&api, &project_id).await,
        None => Check::not_checked(STREAM, SIGN_IN),
    };
    vec![server, sign_in, stream]
}

/// The stored logins, or the server check failed for want of them.
fn stored_credentials() -> Result<Credentials, Check> {
    let config = ConfigStore::open().map_err(|e| Check::fail(SERVER, e, "set HOME"))?;
    config.credentials().map_err(|e| {
        let fix = format!(
            "fix or remove {}, then sign in again: redline login --api-url URL",
            config.credentials_path().display()
        );
        Check::fail(SERVER, e, fix)
    })
}

/// Whether the token is accepted and may claim; with the client and project the event
/// stream is then opened with, when it is accepted.
async fn sign_in_check(
    creds: &Credentials,
    args: &ServerChoice,
    api_url: &str,
) -> (Check, Option<(Api, String)>) {
    let mut login = format!("redline login --api-url {api_url}");
    if std::env::var("REDLINE_TOKEN").is_ok_and(|t| !t.trim().is_empty()) {
        login += " (and unset REDLINE_TOKEN, which is used instead of the stored token)";
    }
    let (api, session) = match session_of(creds, api_url).await {
        Ok(signed_in) => signed_in,
        Err(e) => return (Check::fail(SIGN_IN, e.to_string(), login), None),
    };
    match choose_project(&session, args.project.as_deref()) {
        Ok(project_id) => (session_check(&session, &project_id, api_url), Some((api, project_id))),
        Err(e) => (Check::fail(SIGN_IN, e, "pass --project NAME (or set REDLINE_PROJECT)"), None),
    }
}

/// The session of the token for `api_url`, and the client that has it.
async fn session_of(creds: &Credentials, api_url: &str) -> Result<(Api, Session), Error> {
    let api = Api::new(api_url.to_owned(), token_for(creds, api_url)?)?;
    let session = api.call::<GetSession>(GetSessionInput {}).await?;
    Ok((api, session))
}

/// Who the session is, and whether it may claim (`changes:project:write`).
fn session_check(session: &Session, project_id: &str, api_url: &str) -> Check {
    let project =
        session.projects.iter().find(|p| p.project_id == project_id).map_or(project_id, |p| p.name.as_str());
    let detail = format!("as {} on project {project}, scopes {}", session.name, session.scopes.join(", "));
    if session.scopes.iter().any(|s| s == SCOPE_WRITE) {
        return Check::pass(SIGN_IN, detail);
    }
    Check::fail(
        SIGN_IN,
        format!("{detail}: no {SCOPE_WRITE}, so an agent cannot claim"),
        format!(
            "a token with write scope, made on the server:\n  \
             redline token create --project {project} --scope {SCOPE_READ},{SCOPE_WRITE} --name NAME\n\
             then here: redline login --api-url {api_url} --token -\n\
             (or sign in with a code, `redline login --api-url {api_url}`, approved with {SCOPE_WRITE})"
        ),
    )
}

/// Opens the project's event stream and waits for its `: connected`.
async fn stream_check(api: &Api, project_id: &str) -> Check {
    match tokio::time::timeout(STREAM_WAIT, stream_connects(api, project_id)).await {
        Ok(Ok(())) => Check::pass(STREAM, "the project's stream answered `: connected`"),
        Ok(Err(detail)) => Check::fail(STREAM, detail, STREAM_FIX),
        Err(_) => {
            Check::fail(STREAM, format!("no `: connected` within {} s", STREAM_WAIT.as_secs()), STREAM_FIX)
        }
    }
}

async fn stream_connects(api: &Api, project_id: &str) -> Result<(), String> {
    let mut res = api.events(project_id, None, None).await.map_err(|e| e.to_string())?;
    let status = res.status().as_u16();
    if status != 200 {
        let body = res.bytes().await.unwrap_or_default();
        return Err(format!("the stream was refused: {}", client::api_error(status, &body)));
    }
    let mut head = Vec::new();
    while let Some(bytes) = res.chunk().await.map_err(|e| format!("the stream failed: {e}"))? {
        head.extend_from_slice(&bytes);
        if says_connected(&head) {
            return Ok(());
        }
    }
    Err("the stream ended before `: connected`".to_owned())
}

/// Whether a finished line of the stream so far is the server's `: connected` comment.
fn says_connected(head: &[u8]) -> bool {
    let text = String::from_utf8_lossy(head);
    let finished = &text[..text.rfind(['\n', '\r']).unwrap_or(0)];
    finished.split(['\n', '\r']).any(|line| line == ": connected")
}

/// Whether `cwd` is in a git checkout with a remote: `done` records commits, which
/// the team finds only when they are pushed somewhere.
fn checkout_check(cwd: &Path, top: Option<&Path>, remotes: &[Remote]) -> Check {
    let Some(top) = top else {
        return Check::fail(
            CHECKOUT,
            format!("{} is not in a git checkout", cwd.display()),
            "run redline (and your agent) in the project's git checkout: `done` records the commit of the fix",
        );
    };
    if remotes.is_empty() {
        return Check::note(
            CHECKOUT,
            format!(
                "{} has no remote: `done` records commits, but without their links (a commit's or pull \
                 request's page), and the team finds them only once they are pushed",
                top.display()
            ),
            "git remote add origin URL",
        );
    }
    let listed: Vec<String> =
        remotes.iter().map(|r| format!("{} {}", r.name, git::without_userinfo(&r.url))).collect();
    Check::pass(CHECKOUT, format!("{}, remote {}", top.display(), listed.join(", ")))
}

/// A file's text; `None` when it does not exist.
type Reading = Result<Option<String>, String>;

/// Reads a regular file and no link (`O_NOFOLLOW`): a checkout is anyone's, and a
/// `SKILL.md` or `.mcp.json` there linked to a secret must not be read, nor a FIFO
/// block the check (`O_NONBLOCK`).
fn read_text(path: &Path) -> Reading {
    use std::io::Read;
    use std::os::unix::fs::OpenOptionsExt;
    let failed = |e: String| Err(format!("cannot read {}: {e}", path.display()));
    let opened = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_NOCTTY)
        .open(path);
    let file = match opened {
        Ok(file) => file,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
            return failed("it is a link, and doctor follows none".into());
        }
        Err(e) => return failed(e.to_string()),
    };
    match file.metadata() {
        Ok(meta) if meta.is_file() => {}
        Ok(_) => return failed("not a regular file".into()),
        Err(e) => return failed(e.to_string()),
    }
    let mut text = String::new();
    match file.take(TEXT_READ_MAX).read_to_string(&mut text) {
        Ok(_) => Ok(Some(text)),
        Err(e) => failed(e.to_string()),
    }
}

/// The most of a file doctor reads (a skill or an MCP config is a few KiB).
const TEXT_READ_MAX: u64 = 1 << 20;

/// Where agents find the skill: the project's copy (where `skill install` writes) and
/// the user's (`~/.claude/skills/redline-changes/`).
fn skill_copies(cwd: &Path, home: Option<&Path>) -> Vec<(PathBuf, Reading)> {
    let project = skill::default_dir(cwd);
    let user = home.map(|h| h.join(".claude").join("skills").join("redline-changes"));
    let mut dirs: Vec<PathBuf> = [Some(project), user].into_iter().flatten().collect();
    // Run in the home folder, the two are one.
    dirs.dedup();
    dirs.into_iter()
        .map(|dir| {
            let path = dir.join("SKILL.md");
            let reading = read_text(&path);
            (path, reading)
        })
        .collect()
}

/// Whether the skill is installed, and every copy is this redline's.
fn skill_check(copies: &[(PathBuf, Reading)], default_dir: &Path) -> Check {
    let install = |path: &Path| match path.parent() {
        Some(dir) if dir != default_dir => format!("redline skill install --dir {}", dir.display()),
        _ => "redline skill install".to_owned(),
    };
    let mut found = Vec::new();
    for (path, reading) in copies {
        match reading {
            Err(e) => return Check::fail(SKILL, e.clone(), install(path)),
            Ok(Some(text)) if text != skill::SKILL => {
                let detail = format!("{} is stale: not the skill of this redline", path.display());
                return Check::fail(SKILL, detail, install(path));
            }
            Ok(Some(_)) => found.push(path.display().to_string()),
            Ok(None) => {}
        }
    }
    if found.is_empty() {
        let looked: Vec<String> = copies.iter().map(|(p, _)| p.display().to_string()).collect();
        return Check::fail(SKILL, format!("no {}", looked.join(" nor ")), "redline skill install");
    }
    Check::pass(SKILL, format!("{} (the same as this redline's)", found.join(", ")))
}

/// How an MCP client's config file lists its servers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    /// JSON, `{"mcpServers": {NAME: {command, args}}}`: Claude Code's `.mcp.json`,
    /// Cursor's `mcp.json`.
    McpServers,
    /// `~/.claude.json`: `mcpServers` at the top (user scope), or under
    /// `projects[DIR].mcpServers` (for that folder only).
    ClaudeUser,
    /// `~/.codex/config.toml`: a `[mcp_servers.NAME]` table a server.
    Codex,
}

/// One client's config file, as read.
struct McpConfig {
    client: &'static str,
    path: PathBuf,
    layout: Layout,
    reading: Reading,
}

/// The config files of Claude Code, Cursor and Codex that exist or could.
fn read_mcp_configs(project_dir: &Path, home: Option<&Path>) -> Vec<McpConfig> {
    let mut places = vec![
        ("Claude Code", project_dir.join(".mcp.json"), Layout::McpServers),
        ("Cursor", project_dir.join(".cursor").join("mcp.json"), Layout::McpServers),
    ];
    if let Some(home) = home {
        places.extend([
            ("Claude Code", home.join(".claude.json"), Layout::ClaudeUser),
            ("Cursor", home.join(".cursor").join("mcp.json"), Layout::McpServers),
            ("Codex", home.join(".codex").join("config.toml"), Layout::Codex),
        ]);
    }
    // Run in the home folder, Cursor's project file is its user file.
    let mut seen = std::collections::HashSet::new();
    places.retain(|(_, path, _)| seen.insert(path.clone()));
    places
        .into_iter()
        .map(|(client, path, layout)| {
            let reading = read_text(&path);
            McpConfig { client, path, layout, reading }
        })
        .collect()
}

/// Whether some client starts `redline mcp`; a config file that cannot be read fails
/// the check, as the client reading it fails too.
fn mcp_check(configs: &[McpConfig], dirs: &[&Path]) -> Check {
    let mut found = Vec::new();
    for config in configs {
        let parsed = match &config.reading {
            Ok(Some(text)) => {
                parse_config(text, config.layout).map_err(|e| format!("{} is {e}", config.path.display()))
            }
            Ok(None) => continue,
            Err(e) => Err(e.clone()),
        };
        let value = match parsed {
            Ok(value) => value,
            Err(e) => return Check::fail(MCP, e, format!("fix or remove {}", config.path.display())),
        };
        let names = redline_entries(&value, config.layout, dirs);
        if !names.is_empty() {
            found.push(format!("{} ({}: {})", config.client, config.path.display(), names.join(", ")));
        }
    }
    if found.is_empty() {
        let looked: Vec<String> = configs.iter().map(|c| c.path.display().to_string()).collect();
        let project_json = configs.first().map_or(".mcp.json".into(), |c| c.path.display().to_string());
        return Check::fail(
            MCP,
            format!("no MCP server runs `redline mcp` in {}", looked.join(", ")),
            format!(
                "add to {project_json} (Claude Code; Cursor reads .cursor/mcp.json):\n  {MCP_JSON}\nor run: claude mcp add redline -- redline mcp"
            ),
        );
    }
    Check::pass(MCP, format!("`redline mcp` in {}", found.join("; ")))
}

fn parse_config(text: &str, layout: Layout) -> Result<Value, String> {
    match layout {
        Layout::Codex => toml::from_str(text).map_err(|e| format!("not valid TOML ({})", e.message())),
        Layout::McpServers | Layout::ClaudeUser => {
            serde_json::from_str(text).map_err(|e| format!("not valid JSON ({e})"))
        }
    }
}

/// The names of the servers in `config` that start `redline mcp`; for `~/.claude.json`,
/// those of the user and of the projects in `dirs`.
fn redline_entries(config: &Value, layout: Layout, dirs: &[&Path]) -> Vec<String> {
    let tables: Vec<&Value> = match layout {
        Layout::McpServers => vec![&config["mcpServers"]],
        Layout::ClaudeUser => std::iter::once(&config["mcpServers"])
            .chain(dirs.iter().map(|d| &config["projects"][d.to_string_lossy().as_ref()]["mcpServers"]))
            .collect(),
        Layout::Codex => vec![&config["mcp_servers"]],
    };
    let mut names: Vec<String> = tables
        .into_iter()
        .filter_map(Value::as_object)
        .flatten()
        .filter(|(_, server)| runs_redline_mcp(server))
        .map(|(name, _)| name.clone())
        .collect();
    names.sort();
    names.dedup();
    names
}

/// Whether a server entry starts `redline mcp`: its command is `redline` (in any
/// folder, or `redline.exe`), and `mcp` is one of its arguments, in `args` or written
/// after the command.
fn runs_redline_mcp(server: &Value) -> bool {
    let Some(command) = server["command"].as_str() else { return false };
    let mut words = command.split_whitespace();
    let program = words.next().unwrap_or_default();
    let file = program.rsplit(['/', '\\']).next().unwrap_or(program);
    let args = server["args"].as_array().into_iter().flatten().filter_map(Value::as_str);
    (file == "redline" || file.eq_ignore_ascii_case("redline.exe")) && words.chain(args).any(|a| a == "mcp")
}

#[cfg(test)]
mod tests {
    use redline_protocol::SessionProject;
    use serde_json::json;

    use super::*;

    /// Doctor reads no link (a checkout's `SKILL.md` linked to a secret) and does not
    /// block on a FIFO.
    #[test]
    fn reads_no_link_and_no_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "key").unwrap();
        assert_eq!(read_text(&secret).unwrap().as_deref(), Some("key"));
        let link = dir.path().join("SKILL.md");
        std::os::unix::fs::symlink(&secret, &link).unwrap();
        let refused = read_text(&link).unwrap_err();
        assert!(refused.contains("it is a link, and doctor follows none"), "{refused}");
        let pipe = dir.path().join(".mcp.json");
        let name = std::ffi::CString::new(pipe.as_os_str().as_encoded_bytes()).unwrap();
        // SAFETY: a NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o600) }, 0);
        assert!(read_text(&pipe).unwrap_err().contains("not a regular file"));
        assert_eq!(read_text(&dir.path().join("missing")).unwrap(), None);
    }

    #[test]
    fn reports_a_line_a_check_and_the_fix_under_a_failure() {
        let checks = [
            Check::pass(SERVER, "http://127.0.0.1:1 answers GET /healthz"),
            Check::fail(MCP, "none", "add:\n  {}\nor run: x"),
        ];
        assert_eq!(
            render(&checks),
            "ok   server: http://127.0.0.1:1 answers GET /healthz\n\
             FAIL mcp: none\n     fix: add:\n            {}\n          or run: x\n"
        );
        assert_eq!(exit_code(&checks), 1);
        assert_eq!(exit_code(&checks[..1]), 0);
        assert_eq!(
            serde_json::to_value(&checks[0]).unwrap(),
            json!({"name": "server", "ok": true, "status": "ok", "detail": "http://127.0.0.1:1 answers GET /healthz", "fix": null})
        );
    }

    #[test]
    fn advice_is_a_note_that_does_not_fail_doctor() {
        let checks = [
            Check::pass(SERVER, "up"),
            Check::fail(SKILL, "none", "redline skill install").advice(),
            Check::note(CHECKOUT, "no remote", "git remote add origin URL"),
        ];
        assert_eq!(
            render(&checks),
            "ok   server: up\nnote skill: none\n     fix: redline skill install\nnote git checkout: no remote\n     \
             fix: git remote add origin URL\n"
        );
        assert_eq!(exit_code(&checks), 0);
        assert_eq!(serde_json::to_value(&checks[1]).unwrap()["status"], "note");
        assert_eq!(Check::pass(MCP, "found").advice().status, Status::Ok);
    }

    fn session(scopes: &[&str]) -> Session {
        Session {
            user_id: "u".into(),
            name: "Agent".into(),
            projects: vec![SessionProject { project_id: "p1".into(), name: "demo".into() }],
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
        }
    }

    #[test]
    fn a_session_without_write_scope_cannot_claim() {
        let ok = session_check(&session(&[SCOPE_READ, SCOPE_WRITE]), "p1", "https://x.example");
        assert!(ok.ok, "{ok:?}");
        assert_eq!(ok.detail, "as Agent on project demo, scopes changes:project:read, changes:project:write");
        let read_only = session_check(&session(&[SCOPE_READ]), "p1", "https://x.example");
        assert!(!read_only.ok);
        assert!(
            read_only.detail.ends_with("no changes:project:write, so an agent cannot claim"),
            "{read_only:?}"
        );
        let fix = read_only.fix.unwrap();
        assert!(fix.contains("redline token create --project demo --scope changes:project:read,changes:project:write --name NAME"), "{fix}");
        assert!(fix.contains("redline login --api-url https://x.example --token -"), "{fix}");
    }

    #[test]
    fn the_stream_is_connected_once_its_comment_line_is_finished() {
        assert!(says_connected(b": connected\n\n"));
        assert!(says_connected(b"retry: 1000\r\n: connected\r\n"));
        assert!(!says_connected(b": connected"), "an unfinished line may go on");
        assert!(!says_connected(b": connectedness\n"));
        assert!(!says_connected(b"data: : connected\n"));
        assert!(!says_connected(b""));
    }

    #[test]
    fn a_checkout_needs_a_remote() {
        let (cwd, top) = (Path::new("/w/app/src"), Path::new("/w/app"));
        let outside = checkout_check(cwd, None, &[]);
        assert_eq!((outside.ok, outside.detail.as_str()), (false, "/w/app/src is not in a git checkout"));
        assert_eq!(outside.status, Status::Fail);
        let lonely = checkout_check(cwd, Some(top), &[]);
        assert_eq!(lonely.status, Status::Note, "only the commits' links are lost");
        assert!(lonely.detail.contains("without their links"), "{lonely:?}");
        assert_eq!(lonely.fix.as_deref(), Some("git remote add origin URL"));
        let remote =
            Remote { name: "origin".into(), url: "https://u:secret@example.com/team/app.git".into() };
        let ok = checkout_check(cwd, Some(top), &[remote]);
        assert!(ok.ok);
        assert_eq!(ok.detail, "/w/app, remote origin https://example.com/team/app.git");
    }

    #[test]
    fn the_skill_must_be_installed_and_current() {
        let default = Path::new("/w/app/.claude/skills/redline-changes");
        let project = default.join("SKILL.md");
        let user = PathBuf::from("/home/a/.claude/skills/redline-changes/SKILL.md");
        let check = |p: Reading, u: Reading| skill_check(&[(project.clone(), p), (user.clone(), u)], default);

        let none = check(Ok(None), Ok(None));
        assert!(!none.ok);
        assert_eq!(none.fix.as_deref(), Some("redline skill install"));
        assert!(
            none.detail.contains("/w/app/.claude/skills/redline-changes/SKILL.md nor /home/a/"),
            "{none:?}"
        );

        let current = check(Ok(None), Ok(Some(skill::SKILL.into())));
        assert!(current.ok, "{current:?}");
        assert!(
            current.detail.starts_with("/home/a/")
                && current.detail.ends_with("(the same as this redline's)")
        );

        let stale = check(Ok(Some("old".into())), Ok(None));
        assert!(!stale.ok && stale.detail.ends_with("is stale: not the skill of this redline"), "{stale:?}");
        assert_eq!(stale.fix.as_deref(), Some("redline skill install"));
        let stale_user = check(Ok(Some(skill::SKILL.into())), Ok(Some("old".into())));
        assert_eq!(
            stale_user.fix.as_deref(),
            Some("redline skill install --dir /home/a/.claude/skills/redline-changes")
        );

        let unreadable = check(Err("cannot read x: denied".into()), Ok(None));
        assert_eq!((unreadable.ok, unreadable.detail.as_str()), (false, "cannot read x: denied"));
    }

    #[test]
    fn finds_the_redline_server_in_each_clients_config() {
        let dirs = [Path::new("/w/app")];
        let entries = |config: Value, layout| redline_entries(&config, layout, &dirs);
        let redline = json!({"command": "redline", "args": ["mcp"]});

        assert_eq!(entries(json!({"mcpServers": {"redline": redline}}), Layout::McpServers), ["redline"]);
        assert_eq!(
            entries(
                json!({"mcpServers": {"rl": {"command": "/usr/local/bin/redline", "args": ["mcp", "--project", "demo"]}}}),
                Layout::McpServers
            ),
            ["rl"]
        );
        assert_eq!(
            entries(json!({"mcpServers": {"rl": {"command": "redline mcp"}}}), Layout::McpServers),
            ["rl"]
        );
        assert_eq!(
            entries(
                json!({"mcpServers": {"rl": {"command": "C:\\bin\\Redline.exe", "args": ["mcp"]}}}),
                Layout::McpServers
            ),
            ["rl"]
        );
        for other in [
            json!({"command": "redline", "args": ["wait"]}),
            json!({"command": "redline-server", "args": ["mcp"]}),
            json!({"command": "npx", "args": ["redline", "mcp"]}),
            json!({"url": "https://mcp.example"}),
            json!("redline mcp"),
        ] {
            assert!(entries(json!({"mcpServers": {"x": other}}), Layout::McpServers).is_empty(), "{other}");
        }
        assert!(entries(json!({"mcpServers": []}), Layout::McpServers).is_empty());
        assert!(entries(json!([1]), Layout::McpServers).is_empty());

        // ~/.claude.json: the user's servers, and this project's, not another's.
        assert_eq!(entries(json!({"mcpServers": {"a": redline}}), Layout::ClaudeUser), ["a"]);
        assert_eq!(
            entries(json!({"projects": {"/w/app": {"mcpServers": {"b": redline}}}}), Layout::ClaudeUser),
            ["b"]
        );
        assert!(
            entries(json!({"projects": {"/w/other": {"mcpServers": {"b": redline}}}}), Layout::ClaudeUser)
                .is_empty()
        );
        // `.mcp.json` has no projects.
        assert!(
            entries(json!({"projects": {"/w/app": {"mcpServers": {"b": redline}}}}), Layout::McpServers)
                .is_empty()
        );

        let codex = parse_config(
            "model = \"o3\"\n\n[mcp_servers.redline]\ncommand = \"redline\"\nargs = [\n  \"mcp\",\n]\n\n[mcp_servers.other]\ncommand = \"npx\"\n",
            Layout::Codex,
        )
        .unwrap();
        assert_eq!(entries(codex, Layout::Codex), ["redline"]);
    }

    fn config(path: &str, layout: Layout, reading: Reading) -> McpConfig {
        McpConfig { client: "Claude Code", path: PathBuf::from(path), layout, reading }
    }

    #[test]
    fn mcp_passes_when_one_client_runs_redline_and_fails_on_a_broken_file() {
        let dirs = [Path::new("/w/app")];
        let configured = config("/w/app/.mcp.json", Layout::McpServers, Ok(Some(MCP_JSON.into())));
        let missing = config("/home/a/.claude.json", Layout::ClaudeUser, Ok(None));
        let ok = mcp_check(&[configured, missing], &dirs);
        assert!(ok.ok, "{ok:?}");
        assert_eq!(ok.detail, "`redline mcp` in Claude Code (/w/app/.mcp.json: redline)");

        let none = mcp_check(&[config("/w/app/.mcp.json", Layout::McpServers, Ok(None))], &dirs);
        assert!(!none.ok);
        let fix = none.fix.unwrap();
        assert!(fix.starts_with("add to /w/app/.mcp.json"), "{fix}");
        assert!(fix.contains(MCP_JSON) && fix.contains("claude mcp add redline -- redline mcp"), "{fix}");

        let configured = config("/w/app/.mcp.json", Layout::McpServers, Ok(Some(MCP_JSON.into())));
        let broken = config("/home/a/.codex/config.toml", Layout::Codex, Ok(Some("[mcp_servers".into())));
        let bad = mcp_check(&[configured, broken], &dirs);
        assert!(!bad.ok);
        assert!(bad.detail.starts_with("/home/a/.codex/config.toml is not valid TOML ("), "{bad:?}");
        assert_eq!(bad.fix.as_deref(), Some("fix or remove /home/a/.codex/config.toml"));
        let unreadable = config(
            "/w/app/.mcp.json",
            Layout::McpServers,
            Err("cannot read /w/app/.mcp.json: denied".into()),
        );
        assert_eq!(mcp_check(&[unreadable], &dirs).detail, "cannot read /w/app/.mcp.json: denied");
    }
}

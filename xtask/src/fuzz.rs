//! The API fuzzed: schemathesis (from PyPI, pinned, in a virtualenv under `target/`)
//! drives a real `redline serve` through its `/openapi.json` with a real token, once on
//! SQLite and once on Postgres. Every check of correctness runs, and the run fails on any
//! failure: a 5xx, a status, content type or body the document does not state, input the
//! schema allows refused or input it forbids accepted. Bounded (a fixed number of
//! examples per operation) and seeded, so CI sends the same requests every time.
//!
//! The document, and so the run, covers the RPCs (`POST /rpc/{name}`). The other routes
//! are not in it, each for a reason: an event stream (`GET /events/…`) does not end, so
//! every request would wait out schemathesis's timeout; `GET /blobs/…` answers only a
//! URL the server signed, so a generated one is refused (404 or 403) before anything is
//! read; `/auth/verify` is a page for a person; `/healthz` and `/metrics` take no input.
//! Their own tests are `server/tests/streams.rs`, `blobs.rs`, `signin.rs` and
//! `operating.rs`.
//!
//! To reproduce a run by hand, or fuzz longer: `cargo xtask test fuzz` runs this phase
//! alone; `REDLINE_FUZZ_EXAMPLES=1000 REDLINE_FUZZ_SEED=7 cargo xtask test fuzz` runs it
//! bigger, with another seed.

use std::ffi::OsStr;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::process::{self, cmd};

/// The schemathesis release the run is pinned to.
pub const SCHEMATHESIS: &str = "4.32.5";

/// Examples per operation and phase, and the seed, unless the environment says otherwise.
const EXAMPLES: u32 = 40;
const SEED: u64 = 1;

/// Every check schemathesis has, but `positive_data_acceptance`, which runs as
/// `hooks.py`'s copy that also allows the one refusal of valid-by-schema input that
/// shared/protocol.md itself prescribes (a `chosenOption` that is not an option of the
/// open question: 400), which no schema can state.
const EXCLUDED_CHECKS: &str = "positive_data_acceptance";

/// The store a run serves from.
pub enum Store<'a> {
    Sqlite,
    Postgres { url: &'a str },
}

impl Store<'_> {
    pub fn name(&self) -> &'static str {
        match self {
            Store::Sqlite => "SQLite",
            Store::Postgres { .. } => "Postgres",
        }
    }
}

/// What a run did.
pub struct Outcome {
    /// schemathesis's count of test cases, e.g. "2310 generated, 2310 passed, 24 skipped".
    pub cases: String,
    pub seconds: f64,
}

/// Installs schemathesis (when the virtualenv lacks the pinned release) and answers
/// its executable.
pub fn install() -> Result<PathBuf> {
    let venv = crate::workspace::target_dir().join("schemathesis");
    let bin = venv.join("bin/schemathesis");
    let have = process::output(std::process::Command::new(&bin).arg("--version")).ok();
    if have.is_some_and(|v| v.trim().ends_with(&format!("version {SCHEMATHESIS}"))) {
        return Ok(bin);
    }
    let python = ["python3.11", "python3"].into_iter().find(|p| process::exists(p)).context(
        "Python 3 is needed to fuzz the API with schemathesis; install it (Debian: apt-get install python3 python3-venv)",
    )?;
    process::run(cmd(python).args(["-m", "venv", "--clear"]).arg(&venv))?;
    let pip = venv.join("bin/pip");
    process::run(
        cmd(&pip)
            .args(["install", "--quiet", "--disable-pip-version-check"])
            .arg(format!("schemathesis=={SCHEMATHESIS}")),
    )?;
    Ok(bin)
}

/// Fuzzes a fresh server on `store`: its own data folder (and, on Postgres, its own
/// database), a project with a stage and a token of every scope.
pub fn run(schemathesis: &Path, redline: &Path, store: Store<'_>) -> Result<Outcome> {
    let dir = crate::workspace::target_dir().join("fuzz").join(store.name().to_ascii_lowercase());
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir)?;
    let data = dir.join("data");
    let mut store_args: Vec<&OsStr> = vec!["--data".as_ref(), data.as_os_str()];
    if let Store::Postgres { url } = &store {
        store_args.extend(["--database-url", url].map(OsStr::new));
    }
    let admin = |args: &[&str]| crate::start::admin(redline, &store_args, args);
    // No grace window: an item is the agents' as soon as it is filed, so the agent calls
    // that name one reach it rather than a 409 for a held item.
    let project = admin(&["project", "add", "fuzz", "--grace-seconds", "0"])?;
    let sha = "0123456789abcdef0123456789abcdef01234567";
    let stage = ["--branch", "main", "--type", "production", "--url", "http://127.0.0.1:9/", "--sha", sha];
    let stage = admin(&[&["stage", "add", "--project", "fuzz"][..], &stage].concat())?;
    let id = |v: &serde_json::Value, field: &str| {
        v[field].as_str().map(str::to_owned).with_context(|| format!("the admin command printed no {field}"))
    };
    let config = dir.join("schemathesis.toml");
    std::fs::write(&config, config_toml(&id(&project, "projectId")?, &id(&stage, "stageId")?))?;
    let scopes = "changes:project:read,changes:project:write,changes:project:file";
    let created = admin(&["token", "create", "--project", "fuzz", "--scope", scopes, "--name", "fuzz"])?;
    let token = created["token"].as_str().context("`redline token create --json` printed no token")?;

    // The run measures what the server accepts, not how fast a token may call: its
    // per-token rate limit is lifted (the sign-in calls keep theirs, per address, and
    // schemathesis reports the 429s they answer as a warning, not a failure).
    let mut serve_args = store_args.clone();
    serve_args.extend(["--addr", "127.0.0.1:0", "--calls-per-second", "1e9"].map(OsStr::new));
    let (server, url) = crate::start::spawn_server(redline, &serve_args)?;
    let _server = Stopped(server);

    let examples = env_or("REDLINE_FUZZ_EXAMPLES", EXAMPLES)?;
    let seed = env_or("REDLINE_FUZZ_SEED", SEED)?;
    let mut command = cmd(schemathesis);
    command.arg("--config-file").arg(&config);
    command.args([
        "run",
        &format!("{url}/openapi.json"),
        "--checks",
        "all",
        "--exclude-checks",
        EXCLUDED_CHECKS,
    ]);
    command.args(["--max-examples", &examples.to_string(), "--seed", &seed.to_string()]);
    // One worker: the stateful phase's requests then come in the same order every run.
    command.args(["--workers", "1", "--generation-database", "none", "--no-color"]);
    command.env("REDLINE_FUZZ_TOKEN", token);
    command.env("SCHEMATHESIS_HOOKS", crate::workspace::root().join("xtask/fuzz/hooks.py"));
    // schemathesis writes its own files (`.hypothesis/`, reports) where it runs.
    command.current_dir(&dir);
    let started = Instant::now();
    let cases = schemathesis_cases(&mut command)?;
    Ok(Outcome { cases, seconds: started.elapsed().as_secs_f64() })
}

/// schemathesis's settings beyond its command line. The token is read from the
/// environment, so that neither a file nor an echoed command line holds it. Generated
/// values of `projectId`, `stageId` and `changeId` are mostly replaced by ones that
/// exist (the run's project and stage, the first items it files, by short id), so that
/// calls reach past the 403 and 404 of random names into the handlers; a value is only
/// replaced where it fits the field's schema (never a `createChange` `changeId`, which
/// is a UUID of the caller's making).
fn config_toml(project_id: &str, stage_id: &str) -> String {
    format!(
        r##"headers = {{ Authorization = "Bearer ${{REDLINE_FUZZ_TOKEN}}" }}

[dictionaries.project]
values = ["{project_id}"]

[dictionaries.stage]
values = ["{stage_id}"]

[dictionaries.items]
values = ["1", "#2", "3", "#4", "5"]

[parameters]
"body.projectId" = {{ dictionary = "project", probability = 0.9 }}
"body.stageId" = {{ dictionary = "stage", probability = 0.9 }}
"body.changeId" = {{ dictionary = "items", probability = 0.8 }}
"##
    )
}

/// Runs schemathesis, echoing its report, and answers its count of test cases; fails
/// when it does (a failure, or an error such as a schema it could not read).
fn schemathesis_cases(command: &mut std::process::Command) -> Result<String> {
    eprintln!("$ {}", process::describe(command));
    let mut child = command.stdout(Stdio::piped()).spawn().with_context(|| process::describe(command))?;
    let stdout = child.stdout.take().expect("piped");
    let mut cases = None;
    let mut after_heading = false;
    for line in BufReader::new(stdout).lines() {
        let line = line?;
        println!("{line}");
        if after_heading && cases.is_none() {
            cases = Some(line.trim().to_owned());
        }
        after_heading = line.trim() == "Test cases:";
    }
    let status = child.wait()?;
    if !status.success() {
        bail!("schemathesis found failures or could not run ({status}); its report is above");
    }
    cases.context("schemathesis printed no count of test cases")
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> Result<T> {
    match std::env::var(name) {
        Ok(value) => value.parse().map_err(|_| anyhow::anyhow!("{name}={value:?} is not a number")),
        Err(_) => Ok(default),
    }
}

/// A server that is stopped when dropped, however the run ended.
struct Stopped(Child);

impl Drop for Stopped {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

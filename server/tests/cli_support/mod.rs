//! Running the real `redline` binary as an agent against a [`TestServer`], with its own
//! config dir, a server clock that follows real time, and git checkouts.
#![allow(dead_code)] // each test binary uses a different part of this helper

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use base64::Engine;
use redline_server::Clock;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

pub use crate::common::Out;
use crate::common::{self, TestServer};

/// A 1×1 PNG.
pub const PNG_B64: &str =
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==";

pub fn png_bytes() -> Vec<u8> {
    base64::engine::general_purpose::STANDARD.decode(PNG_B64).unwrap()
}

/// Makes the server's manual clock follow real time from now on (the CLI sleeps by
/// its own clock until a hold ends, so the two must agree). Jumps made with
/// `advance_millis` are kept: the clock keeps moving from wherever it is.
pub fn follow_real_time(clock: &Clock) {
    let real = SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis() as i64;
    clock.advance_millis(real - clock.now().unix_millis());
    let clock = clock.clone();
    tokio::spawn(async move {
        let start = Instant::now();
        let mut moved = 0i64;
        loop {
            tokio::time::sleep(Duration::from_millis(5)).await;
            let elapsed = start.elapsed().as_millis() as i64;
            clock.advance_millis(elapsed - moved);
            moved = elapsed;
        }
    });
}

/// A test server whose clock follows real time, as the agent commands need.
pub async fn real_time_server() -> TestServer {
    let s = TestServer::start().await;
    follow_real_time(&s.clock);
    s
}

/// One agent (or filer) at a terminal: a config dir of its own, and the environment
/// that points the binary at the test server.
pub struct Agent {
    pub home: tempfile::TempDir,
    pub env: Vec<(String, String)>,
    pub cwd: PathBuf,
}

impl Agent {
    /// An agent using `token` through `REDLINE_TOKEN` and `REDLINE_API_URL`.
    pub fn new(s: &TestServer, token: &str) -> Agent {
        let mut a = Agent::bare();
        a.env.push(("REDLINE_API_URL".into(), s.base.clone()));
        a.env.push(("REDLINE_TOKEN".into(), token.into()));
        a
    }

    /// No API URL and no token: what `redline login` starts from.
    pub fn bare() -> Agent {
        let home = tempfile::tempdir().unwrap();
        let cwd = home.path().to_owned();
        Agent { home, env: vec![("TZ".into(), "UTC".into())], cwd }
    }

    pub fn config_dir(&self) -> PathBuf {
        self.home.path().join(".config").join("redline")
    }

    pub fn command(&self, args: &[&str]) -> Command {
        let mut cmd = common::command(args);
        // Saved screenshots go to the agent's own temp dir, removed with it.
        cmd.current_dir(&self.cwd)
            .env("HOME", self.home.path())
            .env("TMPDIR", self.home.path())
            .env_remove("XDG_CONFIG_HOME");
        for (k, v) in &self.env {
            cmd.env(k, v);
        }
        cmd
    }

    pub async fn run(&self, args: &[&str]) -> Out {
        self.run_in(&self.cwd, args).await
    }

    pub async fn run_in(&self, dir: &Path, args: &[&str]) -> Out {
        Out::from_output(self.command(args).current_dir(dir).output().await.unwrap())
    }

    /// Starts a long-running command (`next`) with debug logs of the CLI on stderr.
    pub fn spawn(&self, args: &[&str]) -> Running {
        self.spawn_command(self.command(args))
    }

    /// Starts `cmd` (made by [`Agent::command`]) as [`Agent::spawn`] does.
    pub fn spawn_command(&self, mut cmd: Command) -> Running {
        cmd.env("RUST_LOG", "redline_agent=debug").stdout(Stdio::piped()).stderr(Stdio::piped());
        let mut child = cmd.spawn().unwrap();
        let stderr = child.stderr.take().unwrap();
        let (tx, rx) = tokio::sync::mpsc::unbounded_channel();
        tokio::spawn(async move {
            let mut lines = BufReader::new(stderr).lines();
            while let Ok(Some(line)) = lines.next_line().await {
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        Running { child, stderr: rx, seen: Vec::new(), started: Instant::now() }
    }
}

/// A command still running, whose stderr is read line by line.
pub struct Running {
    pub child: Child,
    stderr: tokio::sync::mpsc::UnboundedReceiver<String>,
    pub seen: Vec<String>,
    pub started: Instant,
}

impl Running {
    /// Waits (at most `within`) for a stderr line containing `needle`.
    pub async fn wait_for(&mut self, needle: &str, within: Duration) {
        self.wait_for_nth(needle, 1, within).await;
    }

    /// Waits (at most `within`) for the `n`th stderr line containing `needle`.
    pub async fn wait_for_nth(&mut self, needle: &str, n: usize, within: Duration) {
        let deadline = tokio::time::Instant::now() + within;
        let mut hits = self.seen.iter().filter(|l| l.contains(needle)).count();
        while hits < n {
            match tokio::time::timeout_at(deadline, self.stderr.recv()).await {
                Ok(Some(line)) => {
                    hits += usize::from(line.contains(needle));
                    self.seen.push(line);
                }
                _ => {
                    panic!("no {n} × {needle:?} on stderr within {within:?}; saw:\n{}", self.seen.join("\n"))
                }
            }
        }
    }

    /// Waits until `next` follows the event stream and has made the look the connection
    /// wakes: from then on only an event (or its timeout) ends its wait.
    pub async fn wait_until_only_an_event_wakes_it(&mut self) {
        self.wait_for("event stream connected", Duration::from_secs(10)).await;
        // A look before the stream was up, and the one its connection wakes (the
        // connection may come before, during or after the first: one look follows it).
        self.wait_for_nth("waiting for an event", 2, Duration::from_secs(10)).await;
    }

    /// Waits for the process to exit (at most `within`); returns its output and the
    /// stderr lines.
    pub async fn finish(mut self, within: Duration) -> (Out, Vec<String>) {
        let status = tokio::time::timeout(within, self.child.wait())
            .await
            .unwrap_or_else(|_| panic!("still running after {within:?}; stderr:\n{}", self.seen.join("\n")))
            .unwrap();
        let mut stdout = String::new();
        if let Some(mut out) = self.child.stdout.take() {
            tokio::io::AsyncReadExt::read_to_string(&mut out, &mut stdout).await.unwrap();
        }
        while let Ok(Some(line)) = tokio::time::timeout(Duration::from_millis(200), self.stderr.recv()).await
        {
            self.seen.push(line);
        }
        let out = Out { code: status.code().unwrap_or(-1), stdout, stderr: self.seen.join("\n") };
        (out, self.seen)
    }

    /// How many times it looked at the queue so far.
    pub fn looks(seen: &[String]) -> usize {
        seen.iter().filter(|l| l.contains("looking for work")).count()
    }
}

/// Files an item as `token` (a filer); returns the change.
pub async fn file(s: &TestServer, token: &str, title: &str, route: &str) -> Value {
    let out =
        s.ok(token, "createChange", json!({"stageId": s.stage_id, "title": title, "route": route})).await;
    out["change"].clone()
}

/// Ends `token`'s hold on the stage: its items become claimable now.
pub async fn release(s: &TestServer, token: &str) {
    s.ok(token, "releaseChanges", json!({"stageId": s.stage_id})).await;
}

/// A git checkout with one commit on `main`; returns its dir and the commit.
pub fn git_repo() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    git(dir.path(), &["init", "-q", "-b", "main"]);
    let sha = commit(dir.path(), "first");
    (dir, sha)
}

/// Adds an empty commit; returns its id.
pub fn commit(dir: &Path, message: &str) -> String {
    git(
        dir,
        &[
            "-c",
            "user.name=T",
            "-c",
            "user.email=t@example.com",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            message,
        ],
    );
    git(dir, &["rev-parse", "HEAD"])
}

pub fn git(dir: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git").args(args).current_dir(dir).output().unwrap();
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

/// `HH:MM` (UTC) of an ISO-8601 instant, as the CLI prints it with `TZ=UTC`.
pub fn hhmm_utc(iso: &str) -> String {
    iso[11..16].to_owned()
}

/// Runs `redline login …` (without `--token`) and approves the code it prints for
/// `name`, as a person would; returns the command's output (its first line the prompt).
pub async fn login_with_code(s: &TestServer, agent: &Agent, argv: &[&str], name: &str) -> Out {
    let mut cmd = agent.command(argv);
    cmd.stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let first =
        tokio::time::timeout(Duration::from_secs(10), lines.next_line()).await.unwrap().unwrap().unwrap();
    let code = first
        .strip_prefix("To sign in, approve the code ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("unexpected prompt {first:?}"))
        .to_owned();
    let scopes = [redline_protocol::Scope::Read, redline_protocol::Scope::Write];
    let grant = redline_server::signin::SignInGrant {
        project: "demo",
        scopes: &scopes,
        name,
        token_days: redline_server::signin::SIGN_IN_TOKEN_DAYS,
    };
    redline_server::signin::approve_sign_in(&s.store, &code, grant, s.clock.now()).await.unwrap();
    let status = tokio::time::timeout(Duration::from_secs(10), child.wait()).await.unwrap().unwrap();
    let mut stdout = first + "\n";
    while let Ok(Some(line)) = lines.next_line().await {
        stdout.push_str(&line);
        stdout.push('\n');
    }
    Out { code: status.code().unwrap_or(-1), stdout, stderr: String::new() }
}

//! The real `redline` binary as the tests run it: a command to its end ([`redline`], or
//! [`Binary`] for one pointed at a store) and `redline serve` ([`serve`]).

use std::ffi::OsStr;
use std::path::Path;
use std::process::Stdio;

use serde_json::Value;
use tokio::io::AsyncBufReadExt;
use tokio::process::{Child, Command};

/// A finished run of the binary.
#[derive(Debug)]
pub struct Out {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Out {
    pub fn from_output(out: std::process::Output) -> Out {
        Out {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    pub fn json(&self) -> Value {
        serde_json::from_str(self.stdout.trim())
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {self:?}"))
    }

    #[track_caller]
    pub fn ok(self) -> Out {
        assert_eq!(self.code, 0, "{self:?}");
        self
    }

    #[track_caller]
    pub fn failed(self) -> Out {
        assert_ne!(self.code, 0, "{self:?}");
        self
    }
}

/// `redline args`: no stdin, killed when dropped, and none of the environment of the
/// person running the tests that the binary reads.
pub fn command<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_redline"));
    cmd.args(args).stdin(Stdio::null()).kill_on_drop(true);
    for var in ["REDLINE_API_URL", "REDLINE_TOKEN", "REDLINE_PROJECT", "RUST_LOG"] {
        cmd.env_remove(var);
    }
    cmd
}

/// Runs `redline args` to its end.
pub async fn redline<S: AsRef<OsStr>>(args: impl IntoIterator<Item = S>) -> Out {
    Out::from_output(command(args).output().await.unwrap())
}

/// The binary pointed at one store: each run ends with the store's arguments
/// (`--data DIR`, `--database-url URL`).
pub struct Binary {
    pub store_args: Vec<String>,
}

impl Binary {
    /// The SQLite store in `dir`.
    pub fn on_dir(dir: &Path) -> Binary {
        Binary { store_args: vec!["--data".into(), dir.to_str().unwrap().into()] }
    }

    /// Runs `redline args` on the store to its end.
    pub async fn run(&self, args: &[&str]) -> Out {
        redline(args.iter().copied().chain(self.store_args.iter().map(String::as_str))).await
    }

    /// Runs `redline --json args` on the store, which must succeed; its output.
    pub async fn json(&self, args: &[&str]) -> Value {
        let out = self.run(&[&["--json"], args].concat()).await;
        assert_eq!(out.code, 0, "redline {args:?}: {}", out.stderr);
        out.json()
    }
}

/// Starts `redline serve` on a free port of loopback with `store_args`; returns the
/// child (killed when dropped) and its URL.
pub async fn serve(store_args: &[String]) -> (Child, String) {
    let mut cmd = command(["serve", "--addr", "127.0.0.1:0"]);
    cmd.args(store_args);
    serve_command(cmd).await
}

/// Starts `cmd`, a `redline serve … --addr 127.0.0.1:0` made by [`command`]; returns the
/// child and the URL it says it listens on.
pub async fn serve_command(mut cmd: Command) -> (Child, String) {
    let mut child = cmd.stdout(Stdio::piped()).spawn().unwrap();
    let mut line = String::new();
    tokio::io::BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).await.unwrap();
    let url = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{line}")).to_owned();
    (child, url)
}

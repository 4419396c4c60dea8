//! What `cargo test --workspace` built, for the phases that run it again: the server's
//! test executables (on S3, on Postgres) and the `redline` binary the browser and MCP
//! phases start.
//!
//! Why not `cargo test --package redline-server`: cargo unifies features over the
//! packages selected, so a one-package build compiled every dependency a second time
//! (ten minutes of CI on 2 cores, and the disk a clean clone ran out of).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde_json::Value;

use crate::process::{self, cmd};

/// The executables of one workspace test build.
pub struct TestBuild {
    /// The server package's unit and integration test executables.
    server_tests: Vec<PathBuf>,
    /// `redline`, built with the features the tests use.
    pub redline: PathBuf,
}

impl TestBuild {
    /// Asks cargo what `cargo test --workspace` builds (nothing is compiled again when
    /// the native tests ran just before).
    pub fn list() -> Result<TestBuild> {
        let mut list = cmd("cargo");
        list.args(["test", "--workspace", "--no-run", "--message-format=json-render-diagnostics"]);
        let out = list.output().with_context(|| process::describe(&list))?;
        if !out.status.success() {
            bail!("`{}` failed ({})", process::describe(&list), out.status);
        }
        let mut server_tests = Vec::new();
        let mut redline = None;
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let Ok(message) = serde_json::from_str::<Value>(line) else { continue };
            if message["reason"] != "compiler-artifact" {
                continue;
            }
            let Some(executable) = message["executable"].as_str() else { continue };
            let package = message["package_id"].as_str().unwrap_or_default();
            if !package.contains("/server#") {
                continue;
            }
            if message["profile"]["test"] == true {
                server_tests.push(PathBuf::from(executable));
            } else if message["target"]["name"] == "redline" {
                redline = Some(PathBuf::from(executable));
            }
        }
        let redline = redline.context("cargo's test build listed no `redline` binary")?;
        if server_tests.is_empty() {
            bail!("cargo's test build listed no test of the server");
        }
        Ok(TestBuild { server_tests, redline })
    }

    /// One command per server test executable, run where cargo runs them (the package's
    /// folder), each given `args` (libtest's filters and flags).
    pub fn server_tests<'a>(&'a self, args: &'a [&'a str]) -> impl Iterator<Item = Command> + 'a {
        self.server_tests.iter().map(move |exe| {
            let mut test = in_server_folder(exe);
            test.args(args);
            test
        })
    }

    /// The server's test executable built from `tests/<name>.rs`.
    pub fn server_test(&self, name: &str) -> Result<Command> {
        let exe = self
            .server_tests
            .iter()
            .find(|exe| is_build_of(exe, name))
            .with_context(|| format!("no server test named `{name}` in cargo's test build"))?;
        Ok(in_server_folder(exe))
    }
}

/// `exe` run as `cargo test` runs it: in its package's folder, which it may read.
fn in_server_folder(exe: &Path) -> Command {
    let dir = crate::workspace::root().join("server");
    let mut test = Command::new(exe);
    test.current_dir(&dir).env("CARGO_MANIFEST_DIR", &dir);
    test
}

/// Whether `exe` (`deps/<name>-<hash>`) was built from the test target `name`.
fn is_build_of(exe: &Path, name: &str) -> bool {
    exe.file_name()
        .and_then(|file| file.to_str())
        .and_then(|file| file.rsplit_once('-'))
        .is_some_and(|(stem, _hash)| stem == name)
}

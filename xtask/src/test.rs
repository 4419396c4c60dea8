//! `cargo xtask test`: every test, in the order that fails fastest: native, the agent's
//! MCP server with the TypeScript SDK's client, the server's suite on Postgres and the
//! API fuzzed with schemathesis on both engines (the anchors plugin's real builds beside
//! them, on the core they leave idle), then wasm in headless Chromium, then end-to-end
//! with the built extension in Chromium, then in Firefox ESR.

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{Context, Result, bail};

use crate::build::{self, Profile};
use crate::process::{self, cmd};
use crate::s3;
use crate::setup::{self, WASM_TARGET};
use crate::test_build::TestBuild;
use crate::{firefox, fuzz, postgres, swc_plugin};

pub fn run(only: Option<&str>) -> Result<()> {
    let started = Instant::now();
    let mut tally = Tally::default();
    let mut phases = Vec::new();
    if only == Some("fuzz") {
        let redline = crate::start::build_server()?;
        let cluster = postgres::Cluster::start()?;
        let phase = Instant::now();
        fuzz(&mut tally, &redline, &cluster);
        phases.push(("API fuzzed", phase.elapsed().as_secs_f64()));
        return tally.finish(&phases, started);
    }
    setup::for_browser()?;
    let prefetch = (only.is_none()).then(|| std::thread::spawn(install_later_phases_tools));

    let phase = Instant::now();
    build::extension(Profile::Release)?.print();
    tally.check("web-ext lint finds no error and no warning in the Firefox package", || {
        firefox::lint(&build::firefox_extension_dir())
    });
    // The Firefox flows run in the package as shipped: the zip `dist` makes.
    let firefox_zip = crate::dist::write_firefox_zip()?;
    phases.push(("build the extension", phase.elapsed().as_secs_f64()));

    match only {
        None => {}
        Some("anchors") => {
            let redline = crate::start::build_server()?;
            let phase = Instant::now();
            anchors(&mut tally, &redline)?;
            phases.push(("anchors plugin and builds", phase.elapsed().as_secs_f64()));
            return tally.finish(&phases, started);
        }
        Some(other) => bail!("unknown test phase `{other}`; `cargo xtask test [anchors|fuzz]`"),
    }

    let phase = Instant::now();
    tally.run(cmd("cargo").args(["test", "--workspace"]))?;
    let built = TestBuild::list()?;
    phases.push(("native tests", phase.elapsed().as_secs_f64()));
    // Each phase installs what it needs again if this failed, and says why.
    if let Some(prefetch) = prefetch {
        let _ = prefetch.join();
    }

    // The blob store on S3-compatible storage, against a local S3 server (its test is
    // ignored elsewhere, like the `postgres_` ones).
    let phase = Instant::now();
    let s3 = s3::S3Server::start()?;
    let mut on_s3 = built.server_test("blob_stores")?;
    tally.run(on_s3.args(["--ignored", "s3_"]).envs(s3.env()))?;
    drop(s3);
    phases.push(("images on S3", phase.elapsed().as_secs_f64()));

    // The agent's MCP server (`redline mcp`) driven over stdio by an independent client,
    // the official TypeScript SDK, against a real server.
    let phase = Instant::now();
    let redline = &built.redline;
    let mut agent = cmd("node");
    agent.args(["--test", "--test-force-exit", "--test-timeout=120000", "--test-concurrency=1"]);
    agent.args(["--test-reporter=spec", "tests/agent/"]);
    agent.env("REDLINE_BIN", redline);
    tally.run(&mut agent)?;
    phases.push(("agent over MCP", phase.elapsed().as_secs_f64()));

    // The anchors' builds (Node, mostly one core) run beside the server's Postgres suite
    // and the fuzzing (a database and one Python process), which leave a core idle.
    let beside = Beside::start(redline);

    // The server's suite once more, on Postgres: one code path, both engines.
    let phase = Instant::now();
    let cluster = postgres::Cluster::start()?;
    for mut suite in built.server_tests(&[]) {
        tally.run(suite.env("REDLINE_TEST_DATABASE_URL", &cluster.url))?;
    }
    // The tests that only Postgres can run (`postgres_…`) are ignored elsewhere, so they
    // are counted as ignored on SQLite rather than as passed; here they run.
    for mut suite in built.server_tests(&["--ignored", "postgres_"]) {
        tally.run(suite.env("REDLINE_TEST_DATABASE_URL", &cluster.url))?;
    }
    phases.push(("server tests on Postgres", phase.elapsed().as_secs_f64()));

    let phase = Instant::now();
    fuzz(&mut tally, redline, &cluster);
    drop(cluster);
    phases.push(("API fuzzed", phase.elapsed().as_secs_f64()));

    let seconds = beside.join(&mut tally)?;
    phases.push(("anchors, beside the two", seconds));

    let phase = Instant::now();
    let mut wasm = cmd("cargo");
    wasm.args(["test", "--package", "redline-extension", "--lib", "--target", WASM_TARGET]);
    wasm.args(["--no-default-features", "--features", "content"]);
    wasm.env("CARGO_TARGET_WASM32_UNKNOWN_UNKNOWN_RUNNER", setup::wasm_bindgen_test_runner());
    wasm.env("CHROMEDRIVER", setup::CHROMEDRIVER);
    // webdriver.json at the root passes Chromium the flags this machine needs.
    tally.run(&mut wasm)?;
    phases.push(("wasm tests in Chromium", phase.elapsed().as_secs_f64()));

    let phase = Instant::now();
    crate::stage::build()?;
    let mut e2e = cmd("node");
    // A test that fails before its clean-up may leave a child process behind, and a
    // browser call without a deadline can wait forever: the runner fails such a test after
    // three minutes and still exits (the harness kills what it started) rather than hang CI.
    e2e.args(["--test", "--test-force-exit", "--test-timeout=180000", "--test-concurrency=1"]);
    e2e.args(["--test-reporter=spec", "tests/e2e/"]);
    e2e.env("REDLINE_BIN", redline);
    e2e.env("XTASK_BIN", std::env::current_exe()?);
    e2e.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    e2e.env("CHROMIUM", setup::CHROMIUM);
    tally.run(&mut e2e)?;
    phases.push(("end-to-end in Chromium", phase.elapsed().as_secs_f64()));

    // The same flows in Firefox ESR, through geckodriver (installed ahead, beside the build).
    let phase = Instant::now();
    if tally.check("Firefox ESR and geckodriver install", firefox::install) {
        let mut in_firefox = cmd("node");
        in_firefox.args(["--test", "--test-force-exit", "--test-timeout=180000", "--test-concurrency=1"]);
        in_firefox.args(["--test-reporter=spec", "tests/firefox/"]);
        in_firefox.env("REDLINE_BIN", redline);
        in_firefox.env("XTASK_BIN", std::env::current_exe()?);
        in_firefox.env("REDLINE_EXTENSION_DIR", build::firefox_extension_dir());
        in_firefox.env("REDLINE_EXTENSION_ZIP", &firefox_zip);
        in_firefox.env("FIREFOX", firefox::FIREFOX);
        in_firefox.env("GECKODRIVER", firefox::geckodriver());
        tally.run(&mut in_firefox)?;
    }
    phases.push(("end-to-end in Firefox", phase.elapsed().as_secs_f64()));

    let phase = Instant::now();
    tally.check("docs/agents.md's install puts a working `redline` in a prefix", install_into_a_prefix);
    phases.push(("install", phase.elapsed().as_secs_f64()));

    tally.finish(&phases, started)
}

/// Installs what the later phases need (PostgreSQL, the S3 test server, schemathesis, the
/// anchors test apps' packages, Firefox ESR and geckodriver) while the extension and the native tests build: these are
/// downloads, which a fresh machine (CI) would otherwise wait for one after another with
/// the cores idle. One after another here, as two of them may run apt.
fn install_later_phases_tools() {
    type Install = fn() -> Result<()>;
    let steps: [(&str, Install); 6] = [
        ("PostgreSQL", postgres::install),
        ("the S3 test server", s3::install),
        ("schemathesis", || fuzz::install().map(drop)),
        ("the anchors test apps' packages", setup::for_anchors),
        // A build, not a download, but a minute or more of it: done here, its phase finds
        // it fresh rather than spend that time beside the Postgres suite.
        ("the anchors' SWC plugin", swc_plugin::build),
        // apt, then about 3 minutes of `cargo install geckodriver` beside the native tests.
        ("Firefox ESR and geckodriver", firefox::install),
    ];
    for (what, install) in steps {
        if let Err(e) = install() {
            eprintln!("installing {what} ahead failed (its phase tries again): {e:#}");
        }
    }
}

/// The anchors build plugin: its transforms, then real builds of the test apps (Vite +
/// React, Next.js, Vite + Vue, Vite + Svelte), each Vite one circled through the
/// extension (packages from each folder's own lock file, installed here: the extension's
/// build does not need them).
fn anchors(tally: &mut Tally, redline: &Path) -> Result<()> {
    if !tally.check("the anchors plugin and its test apps install", setup::for_anchors)
        || !tally.check("the anchors' SWC plugin builds for wasm32-wasip1", swc_plugin::build)
    {
        return Ok(());
    }
    tally.run(cmd("node").args(["--test", "--test-reporter=spec", "plugins/redline-anchors/test/"]))?;
    let mut builds = cmd("node");
    builds.args(["--test", "--test-force-exit", "--test-timeout=300000", "--test-concurrency=1"]);
    builds.args(["--test-reporter=spec", "tests/anchors/vite.test.mjs", "tests/anchors/next.test.mjs"]);
    builds.env("REDLINE_BIN", redline);
    builds.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    builds.env("CHROMIUM", setup::CHROMIUM);
    tally.run(&mut builds)
}

/// The anchors phase on a thread of its own, its output held until it is joined so that
/// it does not interleave with the phases run meanwhile.
struct Beside {
    thread: std::thread::JoinHandle<(Tally, Result<()>)>,
    started: Instant,
}

impl Beside {
    fn start(redline: &Path) -> Beside {
        let redline = redline.to_owned();
        let thread = std::thread::spawn(move || {
            let mut tally = Tally { held: Some(Vec::new()), ..Tally::default() };
            let outcome = anchors(&mut tally, &redline);
            (tally, outcome)
        });
        Beside { thread, started: Instant::now() }
    }

    /// Waits for the phase, shows its output and adds its counts; its seconds from start.
    fn join(self, tally: &mut Tally) -> Result<f64> {
        let (held, outcome) =
            self.thread.join().map_err(|_| anyhow::anyhow!("the anchors phase panicked"))?;
        let seconds = self.started.elapsed().as_secs_f64();
        for line in held.held.iter().flatten() {
            println!("{line}");
        }
        tally.passed += held.passed;
        tally.failed += held.failed;
        tally.ignored += held.ignored;
        outcome.map(|()| seconds)
    }
}

/// The API fuzzed with schemathesis through `/openapi.json`, on SQLite and on Postgres
/// (a database of its own in `cluster`): one test each, failed by any failure it finds.
fn fuzz(tally: &mut Tally, redline: &Path, cluster: &postgres::Cluster) {
    let mut schemathesis = None;
    if !tally.check(&format!("schemathesis {} installs", fuzz::SCHEMATHESIS), || {
        schemathesis = Some(fuzz::install()?);
        Ok(())
    }) {
        return;
    }
    let schemathesis = schemathesis.expect("installed");
    let url = match cluster.create_database("redline_fuzz") {
        Ok(url) => Some(url),
        Err(e) => {
            tally.check("a Postgres database for the fuzz run", || Err(e));
            None
        }
    };
    let stores = [Some(fuzz::Store::Sqlite), url.as_deref().map(|url| fuzz::Store::Postgres { url })];
    for store in stores.into_iter().flatten() {
        let name = format!("the API fuzzed on {} finds no failure", store.name());
        tally.check(&name, || {
            let outcome = fuzz::run(&schemathesis, redline, store)?;
            println!("schemathesis {}: {} in {:.0} s", fuzz::SCHEMATHESIS, outcome.cases, outcome.seconds);
            Ok(())
        });
    }
}

/// docs/agents.md's install command for an agent's machine, into a temporary prefix, then
/// `redline --version` from there. With `--debug`: the install is the same (the locked
/// dependencies, the binary, the prefix) without the release profile's LTO, which took ten
/// minutes of CI on its own. With `--target-dir`: the install compiles only what the
/// native tests' build has not (the crates whose features differ), not the whole server
/// again in a temporary folder; only where cargo keeps its cache differs.
fn install_into_a_prefix() -> Result<()> {
    let prefix = std::env::temp_dir().join(format!("redline-install-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&prefix);
    let mut install = cmd("cargo");
    install.args(["install", "--debug", "--locked", "--path", "server", "--root"]).arg(&prefix);
    install.arg("--target-dir").arg(crate::workspace::target_dir());
    let installed = process::run(&mut install).and_then(|()| {
        let out = Command::new(prefix.join("bin/redline")).arg("--version").output()?;
        let version = String::from_utf8_lossy(&out.stdout);
        if !out.status.success() || !version.starts_with("redline ") {
            bail!("`redline --version` from the prefix printed {version:?} ({})", out.status);
        }
        println!("{}", version.trim());
        Ok(())
    });
    let _ = std::fs::remove_dir_all(&prefix);
    installed
}

/// Counts what the test runners report, across cargo's and node's formats.
#[derive(Default)]
struct Tally {
    passed: u64,
    failed: u64,
    /// Tests not run (ignored, skipped), shown so that none passes for one that did not run.
    ignored: u64,
    /// The output, when it is held to be shown later (a phase run beside others).
    held: Option<Vec<String>>,
}

impl Tally {
    /// Prints each phase's time and the closing line; fails when a test failed.
    fn finish(&self, phases: &[(&str, f64)], started: Instant) -> Result<()> {
        println!();
        for (name, seconds) in phases {
            println!("{name:<26} {seconds:>7.1} s");
        }
        println!("{:<26} {:>7.1} s", "total", started.elapsed().as_secs_f64());
        // The closing line CI reads: "N passed, N failed, N skipped" (ignored tests are skipped).
        println!("xtask: {} passed, {} failed, {} skipped", self.passed, self.failed, self.ignored);
        if self.failed > 0 {
            bail!("{} tests failed", self.failed);
        }
        Ok(())
    }

    /// Runs a test command, echoing its output while counting its results. A failing
    /// command fails the run, after its output has been shown.
    fn run(&mut self, command: &mut Command) -> Result<()> {
        eprintln!("$ {}", process::describe(command));
        let mut child = command.stdout(Stdio::piped()).spawn().with_context(|| process::describe(command))?;
        let stdout = child.stdout.take().expect("piped");
        for line in BufReader::new(stdout).lines() {
            let line = line?;
            self.count(&line);
            self.show(line);
        }
        let status = child.wait()?;
        if !status.success() {
            bail!(
                "`{}` failed ({status}); {} passed, {} failed so far",
                process::describe(command),
                self.passed,
                self.failed.max(1)
            );
        }
        Ok(())
    }

    /// Runs a check of xtask's own as one test: its failure is counted and shown, and
    /// the run goes on to fail at the end like any other failed test. Returns whether it passed.
    fn check(&mut self, name: &str, check: impl FnOnce() -> Result<()>) -> bool {
        match check() {
            Ok(()) => {
                self.show(format!("ok - {name}"));
                self.passed += 1;
                true
            }
            Err(e) => {
                self.show(format!("not ok - {name}: {e:#}"));
                self.failed += 1;
                false
            }
        }
    }

    fn show(&mut self, line: String) {
        match &mut self.held {
            Some(held) => held.push(line),
            None => println!("{line}"),
        }
    }

    fn count(&mut self, line: &str) {
        let line = line.trim();
        if let Some(result) = line.strip_prefix("test result: ") {
            for part in result.split([';', '.']) {
                let mut words = part.split_whitespace();
                if let (Some(n), Some(kind)) =
                    (words.next().and_then(|n| n.parse::<u64>().ok()), words.next())
                {
                    match kind {
                        "passed" => self.passed += n,
                        "failed" => self.failed += n,
                        "ignored" => self.ignored += n,
                        _ => {}
                    }
                }
            }
            return;
        }
        let node_summary = line.strip_prefix("# ").or_else(|| line.strip_prefix("ℹ "));
        if let Some((kind, n)) = node_summary.and_then(|s| s.split_once(' '))
            && let Ok(n) = n.parse::<u64>()
        {
            match kind {
                "pass" => self.passed += n,
                "fail" => self.failed += n,
                "skipped" | "skip" => self.ignored += n,
                _ => {}
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_cargo_and_node_summaries() {
        let mut tally = Tally::default();
        for line in [
            "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s",
            "test result: FAILED. 3 passed; 2 failed; 0 ignored; 0 measured; 0 filtered out",
            "ℹ pass 4",
            "ℹ fail 1",
            "ℹ skipped 2",
            "# pass 2",
            "# skip 1",
            "ℹ tests 5",
            "passed the check",
        ] {
            tally.count(line);
        }
        assert_eq!((tally.passed, tally.failed, tally.ignored), (21, 3, 4));
    }
}

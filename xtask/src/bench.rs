//! `cargo xtask bench`: the extension's start-up numbers reported in BENCHMARKS.md.
//! Builds what ships, plus the alternative it was chosen over (one module for the worker
//! and the pages), and measures both in Chromium in the same run. Then circle and file,
//! the side panel, and CSS paths against @medv/finder (`selectors`); `cargo xtask bench
//! capture` (or `panel`, or `instant`, or `held`, or `firefox`) builds what ships and runs
//! only circle and file (or the panel, or the overlay's and the composer's waits against
//! the commit before, or the server calls of a held batch, or those waits in Firefox
//! beside Chromium).

use std::fs;
use std::path::PathBuf;

use anyhow::Result;

use crate::build::{self, Profile};
use crate::process::{self, cmd};
use crate::setup;

pub fn run(only: Option<&str>) -> Result<()> {
    setup::for_browser()?;
    let report = build::extension(Profile::Release)?;
    report.print();
    match only {
        None => {}
        Some("capture") => return capture(),
        Some("panel") => return panel(),
        Some("instant") => return instant(),
        Some("held") => return held(),
        Some("firefox") => return firefox(),
        Some(other) => {
            anyhow::bail!("unknown bench `{other}`; `cargo xtask bench [capture|panel|instant|held|firefox]`")
        }
    }
    let combined_dir = crate::workspace::root().join("target/bench/pkg");
    let combined = build::web_module("worker,overlay,panel", Profile::Release, &combined_dir, "combined")?;
    println!(
        "  {:<28} {:>9} bytes  {:>8} gzipped",
        "(combined worker+pages)", combined.raw, combined.gzipped
    );
    let mut bench = cmd("node");
    bench.arg("tests/bench/startup.mjs");
    bench.env("XTASK_BIN", std::env::current_exe()?);
    bench.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    bench.env("REDLINE_COMBINED_DIR", combined_dir);
    bench.env("CHROMIUM", setup::CHROMIUM);
    process::run(&mut bench)?;
    instant()?;
    firefox()?;
    capture()?;
    panel()?;
    selectors()
}

/// The pen, the composer and its elements in Firefox ESR, beside Chromium in the same run
/// (`tests/bench/firefox.mjs`).
fn firefox() -> Result<()> {
    crate::firefox::install()?;
    let mut bench = cmd("node");
    bench.arg("tests/bench/firefox.mjs");
    bench.env("XTASK_BIN", std::env::current_exe()?);
    bench.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    // Installed as the Firefox tests install it: the zip `dist` ships.
    bench.env("REDLINE_EXTENSION_ZIP", crate::dist::write_firefox_zip()?);
    bench.env("CHROMIUM", setup::CHROMIUM);
    bench.env("FIREFOX", crate::firefox::FIREFOX);
    bench.env("GECKODRIVER", crate::firefox::geckodriver());
    process::run(&mut bench)
}

/// The commit the overlay's and the composer's waits are compared with: the one before
/// the overlay got a module of its own, apart from the panel (17e1d56 before that: the
/// one before the mount script, the screenshot taken ahead and the composer that opens
/// at once).
const INSTANT_BEFORE: &str = "8eacc25";

/// Gesture → overlay ready and release → composer open on the demo stage and a large
/// page, this build against [`INSTANT_BEFORE`]'s in the same run (docs/benchmarks-history.md,
/// "Instant").
fn instant() -> Result<()> {
    let before = build_of_commit(INSTANT_BEFORE)?;
    let mut bench = cmd("node");
    bench.arg("tests/bench/instant.mjs");
    bench.env("XTASK_BIN", std::env::current_exe()?);
    bench.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    bench.env("REDLINE_BEFORE_EXTENSION_DIR", before);
    bench.env("REDLINE_BEFORE_COMMIT", INSTANT_BEFORE);
    bench.env("REDLINE_FIXTURE_PAGES", crate::workspace::root().join("tests/fixtures/pages"));
    bench.env("CHROMIUM", setup::CHROMIUM);
    process::run(&mut bench)
}

/// The extension as commit `sha` builds it (release), for benchmarks against it: its tree
/// from git, built by its own `cargo xtask build` in `target/bench/before-SHA/` with a
/// target dir of its own (cargo would take one shared with this checkout's sources for
/// up to date). The first run builds everything from scratch; later runs reuse it.
fn build_of_commit(sha: &str) -> Result<PathBuf> {
    let dir = crate::workspace::root().join(format!("target/bench/before-{sha}"));
    let extension = dir.join("extension");
    if extension.join("manifest.json").exists() {
        return Ok(extension);
    }
    let tree = dir.join("tree");
    if tree.exists() {
        fs::remove_dir_all(&tree)?;
    }
    fs::create_dir_all(&tree)?;
    let unpack = format!("git archive {sha} | tar -x -C '{}'", tree.display());
    process::run(cmd("sh").args(["-c", &unpack]))?;
    std::os::unix::fs::symlink(crate::workspace::root().join("node_modules"), tree.join("node_modules"))?;
    fs::create_dir_all(&extension)?;
    let mut build = cmd("cargo");
    build.args(["run", "--quiet", "--package", "xtask", "--", "build"]).current_dir(&tree);
    build.env("CARGO_TARGET_DIR", tree.join("target")).env("REDLINE_EXTENSION_DIR", &extension);
    process::run(&mut build)?;
    Ok(extension)
}

/// The side panel on a 10,000-item project read a page at a time: first paint, a further
/// page, 1,000 rows built again, one event applied as one row and as a re-read
/// (docs/benchmarks-history.md, "Side panel"), against plain DOM code measured in the same run.
fn panel() -> Result<()> {
    let mut bench = cmd("node");
    bench.arg("tests/bench/panel.mjs");
    bench.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    bench.env("CHROMIUM", setup::CHROMIUM);
    process::run(&mut bench)
}

/// The server calls a held batch of five costs, from filing until the tray says it went
/// to the agent, counted by the server (`tests/bench/held-batch.mjs`).
fn held() -> Result<()> {
    let mut bench = cmd("node");
    bench.arg("tests/bench/held-batch.mjs");
    bench.env("REDLINE_BIN", crate::start::build_server()?);
    bench.env("XTASK_BIN", std::env::current_exe()?);
    bench.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    bench.env("CHROMIUM", setup::CHROMIUM);
    process::run(&mut bench)
}

/// Circle → item on a 10,000-element page with a real server (docs/benchmarks-history.md,
/// "Circle and file"), built as users install it: Enter → item stored is mostly the
/// server's calls, which a debug build makes several times slower.
fn capture() -> Result<()> {
    let mut bench = cmd("node");
    bench.arg("tests/bench/capture.mjs");
    bench.env("REDLINE_BIN", crate::start::build_release_server()?);
    bench.env("XTASK_BIN", std::env::current_exe()?);
    bench.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    bench.env("CHROMIUM", setup::CHROMIUM);
    process::run(&mut bench)
}

/// CSS paths against @medv/finder on `tests/fixtures/pages` (docs/benchmarks-history.md,
/// "CSS paths vs @medv/finder"). Our generator is built with its bench-only export (feature
/// `selector-bench`) into `target/bench/selectors/`, never into `extension/`: as it
/// ships (wasm2js) and as plain wasm.
fn selectors() -> Result<()> {
    let root = crate::workspace::root();
    let out = root.join("target/bench/selectors");
    build::wasm2js_module(
        "selector-bench",
        Profile::Release,
        &root.join("target/bench-content"),
        &out.join("js"),
    )?;
    build::web_module("selector-bench", Profile::Release, &out.join("wasm"), "selectors")?;
    let mut bench = cmd("node");
    bench.arg("tests/bench/selectors.mjs");
    bench.env("REDLINE_SELECTORS_DIR", out);
    bench.env("REDLINE_FIXTURE_PAGES", root.join("tests/fixtures/pages"));
    bench.env("CHROMIUM", setup::CHROMIUM);
    process::run(&mut bench)
}

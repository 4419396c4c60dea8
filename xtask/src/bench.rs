//! `cargo xtask bench`: the extension's start-up numbers reported in BENCHMARKS.md.
//! Builds what ships, plus the alternative it was chosen over (one module for the worker
//! and the pages), and measures both in Chromium in the same run. Then circle and file,
//! the side panel, and CSS paths against @medv/finder (`selectors`); `cargo xtask bench
//! capture` (or `panel`) builds what ships and runs only circle and file (or the panel).

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
        Some(other) => anyhow::bail!("unknown bench `{other}`; `cargo xtask bench [capture|panel]`"),
    }
    let combined_dir = crate::root().join("target/bench/pkg");
    let combined = build::web_module("worker,ui", Profile::Release, &combined_dir, "combined")?;
    println!("  {:<28} {:>9} bytes  {:>8} gzipped", "(combined worker+ui)", combined.raw, combined.gzipped);
    let mut bench = cmd("node");
    bench.arg("tests/bench/startup.mjs");
    bench.env("XTASK_BIN", std::env::current_exe()?);
    bench.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    bench.env("REDLINE_COMBINED_DIR", combined_dir);
    bench.env("CHROMIUM", setup::CHROMIUM);
    process::run(&mut bench)?;
    capture()?;
    panel()?;
    selectors()
}

/// The side panel on a 1,000-item queue: render, and one event applied (BENCHMARKS.md,
/// "Side panel"), against plain DOM code measured in the same run.
fn panel() -> Result<()> {
    let mut bench = cmd("node");
    bench.arg("tests/bench/panel.mjs");
    bench.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    bench.env("CHROMIUM", setup::CHROMIUM);
    process::run(&mut bench)
}

/// Circle → item on a 10,000-element page with a real server (BENCHMARKS.md, "Circle
/// and file").
fn capture() -> Result<()> {
    let mut bench = cmd("node");
    bench.arg("tests/bench/capture.mjs");
    bench.env("REDLINE_BIN", crate::start::build_server()?);
    bench.env("XTASK_BIN", std::env::current_exe()?);
    bench.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    bench.env("CHROMIUM", setup::CHROMIUM);
    process::run(&mut bench)
}

/// CSS paths against @medv/finder on `tests/fixtures/pages` (BENCHMARKS.md, "CSS
/// paths vs @medv/finder"). Our generator is built with its bench-only export (feature
/// `selector-bench`) into `target/bench/selectors/`, never into `extension/`: as it
/// ships (wasm2js) and as plain wasm.
fn selectors() -> Result<()> {
    let root = crate::root();
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

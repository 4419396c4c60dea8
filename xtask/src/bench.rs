//! `cargo xtask bench`: the extension's start-up numbers reported in BENCHMARKS.md.
//! Builds what ships, plus the alternative it was chosen over (one module for the worker
//! and the pages), and measures both in Chromium in the same run.

use anyhow::Result;

use crate::build::{self, Profile};
use crate::process::{self, cmd};
use crate::setup;

pub fn run() -> Result<()> {
    setup::for_browser()?;
    let report = build::extension(Profile::Release)?;
    report.print();
    let combined_dir = crate::root().join("target/bench/pkg");
    let combined = build::web_module("worker,ui", Profile::Release, &combined_dir, "combined")?;
    println!("  {:<28} {:>9} bytes  {:>8} gzipped", "(combined worker+ui)", combined.raw, combined.gzipped);
    let mut bench = cmd("node");
    bench.arg("tests/bench/startup.mjs");
    bench.env("XTASK_BIN", std::env::current_exe()?);
    bench.env("REDLINE_EXTENSION_DIR", build::extension_dir());
    bench.env("REDLINE_COMBINED_DIR", combined_dir);
    bench.env("CHROMIUM", setup::CHROMIUM);
    process::run(&mut bench)
}

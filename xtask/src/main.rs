//! `cargo xtask`: Redline's build, start and test commands, and the set-up they need.
//!
//! - `cargo xtask start [--browser] [--port N] [--stage-port N]`: build the extension,
//!   start the server on an embedded SQLite file with a demo stage, print what to load.
//! - `cargo xtask test [anchors|fuzz]`: every test: native, the API fuzzed with
//!   schemathesis, wasm in headless Chromium, end-to-end, the anchors plugin's builds
//!   (`anchors` or `fuzz`: only those).
//! - `cargo xtask build [--debug]`: build the unpacked extension into `extension/` and
//!   `extension-firefox/`.
//! - `cargo xtask bench [capture|panel|instant|held|firefox]`: the numbers in
//!   BENCHMARKS.md (or only circle and file, the side panel, the overlay's and composer's
//!   waits, a held batch's server calls, or those waits in Firefox beside Chromium).
//! - `cargo xtask dist`: zip `extension/` and `extension-firefox/` for the Chrome Web
//!   Store and AMO into `dist/`.
//! - `cargo xtask serve-stage [--addr A] [--app DIR] [--sha SHA]`: serve the demo stage
//!   alone (another build: a changed copy of `demo/`'s sources, built, as commit SHA).

mod bench;
mod budget;
mod build;
mod dist;
mod firefox;
mod fuzz;
mod manifest;
mod postgres;
mod process;
mod s3;
mod setup;
mod stage;
mod start;
mod swc_plugin;
mod test;
mod test_build;
#[cfg(test)]
mod tidy;
mod workspace;

use anyhow::{Result, bail};

fn main() {
    if let Err(error) = run(std::env::args().skip(1).collect()) {
        eprintln!("xtask: {error:#}");
        std::process::exit(1);
    }
}

fn run(args: Vec<String>) -> Result<()> {
    let mut args = Args::new(args);
    let Some(command) = args.next_positional() else {
        println!("{}", include_str!("usage.txt"));
        return Ok(());
    };
    match command.as_str() {
        "start" => start::run(start::Options {
            browser: args.flag("--browser"),
            port: args.value("--port")?.unwrap_or(7878),
            stage_port: args.value("--stage-port")?.unwrap_or(7879),
        }),
        "test" => test::run(args.next_positional().as_deref()),
        "bench" => bench::run(args.next_positional().as_deref()),
        "build" => build::extension(if args.flag("--debug") {
            build::Profile::Debug
        } else {
            build::Profile::Release
        })
        .map(|report| report.print()),
        "dist" => dist::run(),
        "anchors-swc" => swc_plugin::build(),
        "serve-stage" => {
            let addr: String = args.value("--addr")?.unwrap_or_else(|| "127.0.0.1:7879".to_owned());
            let app: Option<String> = args.value("--app")?;
            let sha: Option<String> = args.value("--sha")?;
            stage::serve_forever(&addr, app.map(std::path::PathBuf::from), sha)
        }
        "help" | "--help" | "-h" => {
            println!("{}", include_str!("usage.txt"));
            Ok(())
        }
        other => bail!("unknown command `{other}`; see `cargo xtask help`"),
    }
}

/// A tiny argument reader: `--flag`, `--name value`, and positionals.
struct Args(Vec<String>);

impl Args {
    fn new(args: Vec<String>) -> Args {
        Args(args)
    }

    fn next_positional(&mut self) -> Option<String> {
        let index = self.0.iter().position(|a| !a.starts_with("--"))?;
        Some(self.0.remove(index))
    }

    fn flag(&mut self, name: &str) -> bool {
        let found = self.0.iter().position(|a| a == name);
        found.map(|i| self.0.remove(i)).is_some()
    }

    fn value<T: std::str::FromStr>(&mut self, name: &str) -> Result<Option<T>>
    where
        T::Err: std::fmt::Display,
    {
        let Some(index) = self.0.iter().position(|a| a == name) else { return Ok(None) };
        if index + 1 >= self.0.len() {
            bail!("{name} needs a value");
        }
        let raw = self.0.remove(index + 1);
        self.0.remove(index);
        raw.parse().map(Some).map_err(|e| anyhow::anyhow!("{name} {raw}: {e}"))
    }
}

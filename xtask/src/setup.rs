//! Installs what the build and the tests need when it is missing, so a fresh machine
//! needs nothing but `cargo xtask …`.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};

use crate::process::{self, cmd};

pub const WASM_TARGET: &str = "wasm32-unknown-unknown";
pub const CHROMIUM: &str = "/usr/bin/chromium";
pub const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// What building the extension needs: the wasm target, the matching wasm-bindgen CLI
/// and the npm tools (binaryen's wasm-opt and wasm2js).
pub fn for_build() -> Result<()> {
    wasm_target()?;
    wasm_bindgen_cli()?;
    node_modules()
}

/// What running Chromium needs, on top of the build.
pub fn for_browser() -> Result<()> {
    for_build()?;
    chromium()
}

fn wasm_target() -> Result<()> {
    rust_target(WASM_TARGET)
}

/// The standard library for `target`, added with rustup when missing.
pub fn rust_target(target: &str) -> Result<()> {
    let installed = process::output(cmd("rustup").args(["target", "list", "--installed"]))?;
    if installed.lines().any(|l| l.trim() == target) {
        return Ok(());
    }
    process::run(cmd("rustup").args(["target", "add", target]))
}

/// The wasm-bindgen CLI must be exactly the version of the crate in Cargo.lock.
pub fn wasm_bindgen() -> PathBuf {
    cargo_bin("wasm-bindgen")
}

/// The test runner that ships with the CLI (used as the wasm32 test runner).
pub fn wasm_bindgen_test_runner() -> PathBuf {
    cargo_bin("wasm-bindgen-test-runner")
}

fn wasm_bindgen_cli() -> Result<()> {
    let wanted = locked_version("wasm-bindgen")?;
    let have = process::output(std::process::Command::new(wasm_bindgen()).arg("--version")).ok();
    if have.as_deref().map(str::trim) == Some(&format!("wasm-bindgen {wanted}")) {
        return Ok(());
    }
    // `--locked` fails here: the CLI's lock file pins a version the registry lacks.
    process::run(cmd("cargo").args(["install", "wasm-bindgen-cli", "--force", "--version", &wanted]))
}

/// The version Cargo.lock records for `package`.
pub fn locked_version(package: &str) -> Result<String> {
    let lock =
        std::fs::read_to_string(crate::workspace::root().join("Cargo.lock")).context("reading Cargo.lock")?;
    version_in_lock(&lock, package).with_context(|| format!("{package} is not in Cargo.lock"))
}

fn version_in_lock(lock: &str, package: &str) -> Option<String> {
    let wanted = format!("name = \"{package}\"");
    let mut lines = lock.lines();
    while let Some(line) = lines.next() {
        if line.trim() == wanted {
            let version = lines.next()?.trim().strip_prefix("version = \"")?.strip_suffix('"')?;
            return Some(version.to_owned());
        }
    }
    None
}

pub fn cargo_bin(name: &str) -> PathBuf {
    let home = std::env::var_os("CARGO_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| Path::new(&h).join(".cargo")))
        .unwrap_or_else(|| PathBuf::from(".cargo"));
    home.join("bin").join(name)
}

/// npm packages from the committed package-lock.json, installed with `npm ci`.
fn node_modules() -> Result<()> {
    npm_ci(&crate::workspace::root())
}

/// The anchors plugin's and its test apps' npm packages, each from its own lock file
/// (`cargo xtask test` only: the build and `start` do not need them).
pub fn for_anchors() -> Result<()> {
    let root = crate::workspace::root();
    // Downloads and unpacking, mostly: all at once, from the one npm cache (~/.npm).
    std::thread::scope(|scope| {
        let installs: Vec<_> = ANCHORS_PACKAGES
            .iter()
            .map(|dir| {
                let dir = root.join(dir);
                scope.spawn(move || npm_ci(&dir))
            })
            .collect();
        installs.into_iter().try_for_each(|install| install.join().expect("npm ci does not panic"))
    })
}

/// The folders with a package-lock.json of their own that the anchors tests install.
pub const ANCHORS_PACKAGES: [&str; 6] = [
    "plugins/redline-anchors",
    "tests/anchors/vite-app",
    "tests/anchors/vite-swc-app",
    "tests/anchors/next-app",
    "tests/anchors/vue-app",
    "tests/anchors/svelte-app",
];

/// `npm ci` in `dir`, unless its node_modules is newer than its lock file.
pub fn npm_ci(dir: &Path) -> Result<()> {
    if !process::exists("node") || !process::exists("npm") {
        bail!(
            "Node.js 20 and npm are needed for the build tools; install them (Debian: apt-get install nodejs npm)"
        );
    }
    let lock = dir.join("package-lock.json");
    let installed = dir.join("node_modules/.package-lock.json");
    let fresh = match (std::fs::metadata(&lock), std::fs::metadata(&installed)) {
        (Ok(lock), Ok(installed)) => installed.modified()? >= lock.modified()?,
        _ => false,
    };
    if fresh {
        return Ok(());
    }
    process::run(cmd("npm").args(["ci", "--no-audit", "--no-fund"]).current_dir(dir))
}

/// A binary from `node_modules/.bin`.
pub fn npm_bin(name: &str) -> PathBuf {
    crate::workspace::root().join("node_modules/.bin").join(name)
}

/// Debian's Chromium and ChromeDriver (never a downloaded browser build).
fn chromium() -> Result<()> {
    if Path::new(CHROMIUM).exists() && Path::new(CHROMEDRIVER).exists() {
        return Ok(());
    }
    let install = "apt-get update && apt-get install -y chromium chromium-driver";
    if !is_root() {
        bail!("Chromium is missing; install it with: sudo sh -c '{install}'");
    }
    process::run(cmd("sh").args(["-c", install]).env("DEBIAN_FRONTEND", "noninteractive"))
}

pub fn is_root() -> bool {
    process::output(std::process::Command::new("id").arg("-u")).is_ok_and(|uid| uid.trim() == "0")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_a_package_version_in_a_lock_file() {
        let lock = "[[package]]\nname = \"wasm-bindgen-futures\"\nversion = \"0.4.80\"\n\n\
                    [[package]]\nname = \"wasm-bindgen\"\nversion = \"0.2.130\"\n";
        assert_eq!(version_in_lock(lock, "wasm-bindgen").as_deref(), Some("0.2.130"));
        assert_eq!(version_in_lock(lock, "leptos"), None);
    }

    /// The exact version `manifest` pins `package` to (`package = "=X"`).
    fn pinned_version(manifest: &str, package: &str) -> Option<String> {
        manifest.lines().find_map(|line| {
            let (name, value) = line.split_once('=')?;
            let pin = value.trim().strip_prefix("\"=")?.strip_suffix('"')?;
            (name.trim() == package).then(|| pin.to_owned())
        })
    }

    #[test]
    fn finds_a_pin_in_a_manifest() {
        let manifest = "[workspace.dependencies]\nwasm-bindgen-futures = \"=0.4.1\"\nserde = \"1\"\n\
                        wasm-bindgen = \"=0.2.130\"\n";
        assert_eq!(pinned_version(manifest, "wasm-bindgen").as_deref(), Some("0.2.130"));
        assert_eq!(pinned_version(manifest, "serde"), None, "a range is not a pin");
        assert_eq!(pinned_version(manifest, "leptos"), None);
    }

    /// The CLI `cargo xtask` installs is the lock's version: it must be the one the
    /// workspace pins, or a `cargo update` could move the crate away from the CLI.
    #[test]
    fn the_workspace_pins_wasm_bindgen() {
        let manifest = std::fs::read_to_string(crate::workspace::root().join("Cargo.toml")).unwrap();
        let pinned =
            pinned_version(&manifest, "wasm-bindgen").expect("Cargo.toml pins wasm-bindgen with `=`");
        assert_eq!(locked_version("wasm-bindgen").unwrap(), pinned);
    }
}

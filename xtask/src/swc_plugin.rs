//! The anchors' SWC plugin (`plugins/redline-anchors/swc`, a workspace of its own): built
//! for wasm32-wasip1 and put where the npm package exports it (`redline-anchors/swc`).
//! The `.wasm` is a build artefact, not in git.

use std::path::PathBuf;

use anyhow::{Context, Result};

use crate::process::{self, cmd};
use crate::setup;

const TARGET: &str = "wasm32-wasip1";
const CRATE: &str = "plugins/redline-anchors/swc";
const WASM: &str = "redline_anchors_swc.wasm";

/// Where the npm package has the plugin.
pub fn wasm() -> PathBuf {
    crate::workspace::root().join(CRATE).join(WASM)
}

/// Builds the plugin (release: LTO, for size) and copies it into the package.
pub fn build() -> Result<()> {
    setup::rust_target(TARGET)?;
    let root = crate::workspace::root();
    let target_dir = root.join("target/redline-anchors-swc");
    let mut cargo = cmd("cargo");
    cargo.args(["build", "--release", "--locked", "--target", TARGET, "--manifest-path"]);
    cargo.arg(root.join(CRATE).join("Cargo.toml")).arg("--target-dir").arg(&target_dir);
    process::run(&mut cargo)?;
    let built = target_dir.join(TARGET).join("release").join(WASM);
    std::fs::copy(&built, wasm()).with_context(|| format!("copying {}", built.display()))?;
    Ok(())
}

//! Where the workspace is on disk, and where its native builds go.

use std::path::PathBuf;

/// The workspace root (the parent of this crate's directory).
pub fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask sits in the workspace").to_path_buf()
}

/// Where cargo puts native builds: `CARGO_TARGET_DIR` when set (engineers sharing a
/// machine share one), else `target/`.
pub fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root().join("target"))
}

//! A file's anchor path: relative to the root, with forward slashes, as
//! `../src/build-info.cjs`'s `anchorPath` gives it; none outside the root or in a
//! dependency.

use std::path::{Component, Path, PathBuf};

/// `filename` (absolute, or relative to `base`) relative to `root` (likewise).
pub fn anchor_path(filename: &str, root: &str, base: &str) -> Option<String> {
    if filename.contains("/node_modules/") || filename.contains("\\node_modules\\") {
        return None;
    }
    let base = Path::new(base);
    let file = normalize(&base.join(filename));
    let root = normalize(&base.join(root));
    let relative = file.strip_prefix(&root).ok()?;
    let parts: Vec<_> = relative.components().map(|c| c.as_os_str().to_string_lossy().into_owned()).collect();
    (!parts.is_empty()).then(|| parts.join("/"))
}

/// `a/./b/../c` → `a/c`, without asking the file system (a plugin has none).
fn normalize(path: &Path) -> PathBuf {
    let mut normal = PathBuf::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => {
                normal.pop();
            }
            other => normal.push(other),
        }
    }
    normal
}

//! The git checkout the CLI runs in: `done` records its branch and commit, and
//! `stage deploy` asks it whether a commit is contained in a deployed one.

use std::path::Path;
use std::process::Command;

/// The checkout's `HEAD`: the commit, and the branch unless `HEAD` is detached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    pub commit: String,
    pub branch: Option<String>,
}

fn git(dir: &Path, args: &[&str]) -> Option<(bool, String)> {
    let out = Command::new("git").args(args).current_dir(dir).output().ok()?;
    Some((out.status.success(), String::from_utf8_lossy(&out.stdout).trim().to_owned()))
}

/// `HEAD` of the checkout at `dir`, or `None` outside a checkout (or without git, or
/// before the first commit).
pub fn head(dir: &Path) -> Option<Head> {
    let (ok, commit) = git(dir, &["rev-parse", "--verify", "--quiet", "HEAD^{commit}"])?;
    if !ok || commit.is_empty() {
        return None;
    }
    // A detached HEAD is not a branch: `symbolic-ref` fails and no branch is recorded.
    let branch = match git(dir, &["symbolic-ref", "--quiet", "--short", "HEAD"]) {
        Some((true, b)) if !b.is_empty() => Some(b),
        _ => None,
    };
    Some(Head { commit, branch })
}

/// Whether `commit` is contained in (an ancestor of, or equal to) `tip`: `Some(true)`
/// or `Some(false)`, `None` when the checkout cannot tell (an unknown commit).
pub fn contains(dir: &Path, tip: &str, commit: &str) -> Option<bool> {
    let out = Command::new("git")
        .args(["merge-base", "--is-ancestor", commit, tip])
        .current_dir(dir)
        .output()
        .ok()?;
    match out.status.code() {
        Some(0) => Some(true),
        Some(1) => Some(false),
        _ => None,
    }
}

/// The full commit id of `rev` in the checkout at `dir`.
pub fn resolve(dir: &Path, rev: &str) -> Option<String> {
    match git(dir, &["rev-parse", "--verify", "--quiet", &format!("{rev}^{{commit}}")])? {
        (true, sha) if !sha.is_empty() => Some(sha),
        _ => None,
    }
}

/// The top folder of the checkout `dir` is in.
pub fn toplevel(dir: &Path) -> Option<std::path::PathBuf> {
    match git(dir, &["rev-parse", "--show-toplevel"])? {
        (true, top) if !top.is_empty() => Some(top.into()),
        _ => None,
    }
}

//! The git checkout the CLI runs in: `done` records its branch and commit,
//! `stage deploy` asks it whether a commit is contained in a deployed one, and
//! `doctor` whether it has a remote.

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

/// A remote of a checkout, and the URL it fetches from as configured (which may hold
/// credentials: see [`without_userinfo`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Remote {
    pub name: String,
    pub url: String,
}

/// The remotes of the checkout at `dir`; none outside a checkout.
pub fn remotes(dir: &Path) -> Vec<Remote> {
    match git(dir, &["remote", "-v"]) {
        Some((true, listed)) => parse_remotes(&listed),
        _ => Vec::new(),
    }
}

/// The `(fetch)` lines of `git remote -v`: `NAME<TAB>URL (fetch)`.
fn parse_remotes(listed: &str) -> Vec<Remote> {
    listed
        .lines()
        .filter_map(|line| {
            let (name, rest) = line.split_once('\t')?;
            let url = rest.strip_suffix(" (fetch)")?;
            Some(Remote { name: name.to_owned(), url: url.to_owned() })
        })
        .collect()
}

/// A remote URL without the user name and password it may carry, in the URL form
/// (`https://user:secret@host/path`) and the scp-like one (`user@host:path`): whatever
/// comes before the last `@` of the part ahead of the first `/` after the scheme. A
/// local path keeps its `@`s, as a `/` comes first.
pub fn without_userinfo(url: &str) -> String {
    let (scheme, rest) = match url.split_once("://") {
        Some((scheme, rest)) => (&url[..scheme.len() + 3], rest),
        None => ("", url),
    };
    let head = rest.split('/').next().unwrap_or_default();
    match head.rfind('@') {
        Some(at) => format!("{scheme}{}", &rest[at + 1..]),
        None => url.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_fetch_urls_of_remotes() {
        let listed = "origin\thttps://example.com/a.git (fetch)\norigin\thttps://example.com/a.git (push)\n\
                      up\tgit@example.com:team/a.git (fetch)\nup\tgit@example.com:team/a.git (push)";
        assert_eq!(
            parse_remotes(listed),
            [
                Remote { name: "origin".into(), url: "https://example.com/a.git".into() },
                Remote { name: "up".into(), url: "git@example.com:team/a.git".into() },
            ]
        );
        assert_eq!(parse_remotes(""), []);
    }

    #[test]
    fn remote_urls_lose_their_credentials() {
        for (url, shown) in [
            ("https://user:secret@example.com/team/app.git", "https://example.com/team/app.git"),
            ("https://tok@en:p@ss@example.com:8443/a", "https://example.com:8443/a"),
            ("ssh://git@example.com/team/app.git", "ssh://example.com/team/app.git"),
            ("git@github.com:team/app.git", "github.com:team/app.git"),
            ("https://example.com/team/app.git", "https://example.com/team/app.git"),
            ("https://example.com/a@b/app.git", "https://example.com/a@b/app.git"),
            ("/srv/git/a@b.git", "/srv/git/a@b.git"),
            ("../a@b.git", "../a@b.git"),
        ] {
            assert_eq!(without_userinfo(url), shown, "{url}");
        }
    }
}

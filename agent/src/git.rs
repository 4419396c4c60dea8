//! The git checkout the CLI runs in: `done` records its branch and commit (found by
//! its trailer), `stage deploy` asks it whether a commit is contained in a deployed one,
//! changesets are branches in worktrees of their own, merged back with `--no-ff`,
//! `doctor` asks whether it has a remote, and `done` reads the remote's URL and its
//! commit's trailers for the links `forge.rs` makes, and `anchors.rs` follows filed lines
//! through diffs from their commit to `HEAD`. Thin adapters over the `git` command; what
//! they print is read by `changeset.rs`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// The checkout's `HEAD`: the commit, and the branch unless `HEAD` is detached.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Head {
    pub commit: String,
    pub branch: Option<String>,
}

/// Runs git in `dir`. Every value that comes from a person or the server follows
/// `--end-of-options` (or `--`, or is an option's own argument), so that none is read as
/// an option, whatever it holds.
fn run(dir: &Path, args: &[&str]) -> std::io::Result<std::process::Output> {
    #[cfg(test)]
    tests::RAN.with_borrow_mut(|ran| ran.push(args.iter().map(|a| a.to_string()).collect()));
    Command::new("git").args(args).current_dir(dir).output()
}

fn git(dir: &Path, args: &[&str]) -> Option<(bool, String)> {
    let out = run(dir, args).ok()?;
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
    let out = run(dir, &["merge-base", "--is-ancestor", "--end-of-options", commit, tip]).ok()?;
    match out.status.code() {
        Some(0) => Some(true),
        Some(1) => Some(false),
        _ => None,
    }
}

/// The full commit id of `rev` in the checkout at `dir`.
pub fn resolve(dir: &Path, rev: &str) -> Option<String> {
    match git(dir, &["rev-parse", "--verify", "--quiet", "--end-of-options", &format!("{rev}^{{commit}}")])? {
        (true, sha) if !sha.is_empty() => Some(sha),
        _ => None,
    }
}

/// The top folder of the checkout `dir` is in.
pub fn toplevel(dir: &Path) -> Option<PathBuf> {
    match git(dir, &["rev-parse", "--show-toplevel"])? {
        (true, top) if !top.is_empty() => Some(top.into()),
        _ => None,
    }
}

/// Whether commit `sha` has `path` (from the top of the checkout).
pub fn has_path(dir: &Path, sha: &str, path: &str) -> bool {
    git(dir, &["cat-file", "-e", "--end-of-options", &format!("{sha}:{path}")]).is_some_and(|(ok, _)| ok)
}

/// `git diff --name-status -z -M FROM TO`: every file changed between two commits, with
/// renames found.
pub fn name_status(dir: &Path, from: &str, to: &str) -> Result<String, String> {
    checked(dir, &["diff", "--name-status", "-z", "-M", "--no-ext-diff", "--end-of-options", from, to, "--"])
}

/// The diff of `paths` from commit `from` to `to` with no context lines (renames found
/// among `paths`), prefixes `a/` and `b/` whatever the config says, paths unquoted.
pub fn diff_hunks(dir: &Path, from: &str, to: &str, paths: &[&str]) -> Result<String, String> {
    let mut args = vec![
        "-c",
        "core.quotePath=false",
        "diff",
        "-U0",
        "-M",
        "--no-color",
        "--no-ext-diff",
        "--no-textconv",
        "--src-prefix=a/",
        "--dst-prefix=b/",
        "--end-of-options",
        from,
        to,
        "--",
    ];
    args.extend(paths);
    checked(dir, &args)
}

/// The commits after `from` up to `to` on `to`'s first-parent line that touched `paths`,
/// oldest first.
pub fn first_parent_commits(dir: &Path, from: &str, to: &str, paths: &[&str]) -> Result<Vec<String>, String> {
    let range = format!("{from}..{to}");
    let mut args = vec!["rev-list", "--first-parent", "--reverse", "--end-of-options", &range, "--"];
    args.extend(paths);
    Ok(checked(dir, &args)?.lines().map(str::to_owned).collect())
}

/// Runs git in `dir`; its standard output, or what it said on failure.
fn checked(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = run(dir, args).map_err(|e| format!("running git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        let said = String::from_utf8_lossy(&out.stderr);
        let said = if said.trim().is_empty() { String::from_utf8_lossy(&out.stdout) } else { said };
        Err(format!("git {} failed: {}", args.first().unwrap_or(&""), said.trim()))
    }
}

/// The commits of the current branch, newest first, each as its id, a NUL and its
/// trailer lines (unfolded), ended by an RS (0x1e).
pub fn trailers_log(dir: &Path) -> Result<String, String> {
    checked(dir, &["log", "-z", "--format=%H%n%(trailers:only,unfold)", "HEAD", "--"])
}

/// The trailer lines (unfolded) of commit `sha`, e.g. `PR: #12`.
pub fn commit_trailers(dir: &Path, sha: &str) -> Option<String> {
    match git(dir, &["log", "-1", "--format=%(trailers:only,unfold)", "--end-of-options", sha, "--"])? {
        (true, trailers) => Some(trailers),
        _ => None,
    }
}

/// The URL of the remote that `branch` pushes to: its upstream's remote
/// (`branch.<name>.remote`), else `origin`; `None` without one.
pub fn remote_url(dir: &Path, branch: Option<&str>) -> Option<String> {
    let upstream = branch
        .and_then(|b| git(dir, &["config", "--get", "--", &format!("branch.{b}.remote")]))
        .filter(|(ok, name)| *ok && !name.is_empty() && name != ".")
        .map(|(_, name)| name);
    let name = upstream.as_deref().unwrap_or("origin");
    match git(dir, &["remote", "get-url", "--", name])? {
        (true, url) if !url.is_empty() => Some(url),
        _ => None,
    }
}

/// Whether the branch `name` exists.
pub fn branch_exists(dir: &Path, name: &str) -> bool {
    git(dir, &["show-ref", "--verify", "--quiet", "--end-of-options", &format!("refs/heads/{name}")])
        .is_some_and(|(ok, _)| ok)
}

/// Makes branch `branch` at `HEAD`, checked out in a new worktree at `path`.
pub fn add_worktree(dir: &Path, path: &Path, branch: &str) -> Result<(), String> {
    let path = path.to_str().ok_or_else(|| format!("{} is not UTF-8", path.display()))?;
    checked(dir, &["worktree", "add", "--quiet", "-b", branch, "--", path, "HEAD"]).map(drop)
}

/// `git worktree list --porcelain`.
pub fn worktree_list(dir: &Path) -> Result<String, String> {
    checked(dir, &["worktree", "list", "--porcelain"])
}

/// Removes the worktree at `path` (refused while it has changes not committed).
pub fn remove_worktree(dir: &Path, path: &Path) -> Result<(), String> {
    let path = path.to_str().ok_or_else(|| format!("{} is not UTF-8", path.display()))?;
    checked(dir, &["worktree", "remove", "--", path]).map(drop)
}

/// Deletes branch `name` when it is merged into `HEAD` (`git branch -d`).
pub fn delete_merged_branch(dir: &Path, name: &str) -> Result<(), String> {
    checked(dir, &["branch", "--quiet", "-d", "--", name]).map(drop)
}

/// Sets `key` in the repository's config (shared by all its worktrees).
pub fn set_config(dir: &Path, key: &str, value: &str) -> Result<(), String> {
    checked(dir, &["config", "--", key, value]).map(drop)
}

/// The config entries whose names match `pattern`, as `name value` lines (none: empty).
pub fn config_matching(dir: &Path, pattern: &str) -> Result<String, String> {
    match git(dir, &["config", "--get-regexp", "--", pattern]) {
        Some((_, lines)) => Ok(lines),
        None => Err("running git failed".to_owned()),
    }
}

/// Merges `branch` into the current branch as one merge commit with `message`; on a
/// conflict the merge is undone, so the checkout is left as it was.
pub fn merge_no_ff(dir: &Path, branch: &str, message: &str) -> Result<(), String> {
    let merged = checked(dir, &["merge", "--no-ff", "--no-edit", "-m", message, "--end-of-options", branch]);
    if merged.is_err() {
        let _ = checked(dir, &["merge", "--abort"]);
    }
    merged.map(drop)
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
    use std::cell::RefCell;

    use super::*;

    thread_local! {
        /// The arguments of each git run on this thread.
        pub(super) static RAN: RefCell<Vec<Vec<String>>> = const { RefCell::new(Vec::new()) };
    }

    /// Every adapter that passes a value on runs git with the value where no option can
    /// be: after `--end-of-options` or `--`, or as the argument of `-b` or `-m`. The values
    /// here look like options (`-X…`); git refuses them or finds nothing, harmlessly.
    #[test]
    fn values_are_never_read_as_options() {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let path = d.join("-Xw");
        RAN.with_borrow_mut(Vec::clear);
        let _ = contains(d, "-Xt", "-Xc");
        let _ = resolve(d, "-Xr");
        let _ = commit_trailers(d, "-Xs");
        let _ = remote_url(d, Some("-Xu"));
        let _ = branch_exists(d, "-Xe");
        let _ = add_worktree(d, &path, "-Xa");
        let _ = remove_worktree(d, &path);
        let _ = delete_merged_branch(d, "-Xd");
        let _ = set_config(d, "-Xk", "-Xv");
        let _ = config_matching(d, "-Xp");
        let _ = merge_no_ff(d, "-Xm", "-Xmessage");
        let _ = has_path(d, "-Xh", "-Xf");
        let _ = name_status(d, "-Xn", "-Xo");
        let _ = diff_hunks(d, "-Xi", "-Xj", &["-Xq"]);
        let _ = first_parent_commits(d, "-Xx", "-Xy", &["-Xz"]);
        let ran = RAN.with_borrow(Clone::clone);
        let mut seen = 0;
        for args in &ran {
            let end = args.iter().position(|a| a == "--end-of-options" || a == "--").unwrap_or(args.len());
            for (i, arg) in args.iter().enumerate().filter(|(_, a)| a.contains("-X")) {
                seen += 1;
                let guarded = i > end || matches!(args[i - 1].as_str(), "-b" | "-m");
                assert!(guarded, "{arg:?} may be read as an option in {args:?}");
            }
        }
        assert!(seen >= 21, "only {seen} values were passed in {ran:?}");
    }

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

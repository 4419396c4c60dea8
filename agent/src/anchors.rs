//! Source anchors followed through the code: an element filed as `src/app.tsx:42` on
//! build `a91c4e2` is looked for at the checkout's `HEAD`, through git's own history.
//!
//! The core is pure: [`parse_anchor`], [`parse_fates`] (which files were renamed or
//! deleted, from `git diff --name-status -z -M`), [`parse_patches`] (the hunks of a
//! `git diff -U0`) and [`map_line`] (a line through a file's hunks). [`Follower`] runs
//! git through [`crate::git`] and caches its answers per (commit, file) for one command.
//! A line inside a hunk that replaced lines maps to the line at the same place in the
//! replacement ("edited"); it is gone when the replacement is shorter, or none. The commit
//! that removed a line is found by bisection over the first-parent commits that touched
//! its file, mapping the line through the diff from the filed commit to each.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use redline_protocol::Change;
use serde::Serialize;
use serde_json::Value;

use super::git;

/// Where a filed anchor's line is at `HEAD` (`sourceAnchorNow` in `--json`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum AnchorNow {
    /// The line is at `file:line` (`edited`: a hunk rewrote it).
    At {
        file: String,
        line: u32,
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        edited: bool,
    },
    /// The line was removed, in `commit` when it could be named.
    Gone { gone: bool, commit: Option<String> },
    /// It could not be followed, and why (e.g. the commit is not in this checkout).
    Unknown { unknown: String },
}

impl AnchorNow {
    fn gone(commit: Option<String>) -> AnchorNow {
        AnchorNow::Gone { gone: true, commit }
    }

    fn unknown(why: impl Into<String>) -> AnchorNow {
        AnchorNow::Unknown { unknown: why.into() }
    }
}

/// What follows `FILE:LINE as of SHA` in `show`: ` → now FILE:LINE`, ` → unchanged`,
/// ` → gone (…)`, or why it was not followed.
pub fn now_text(filed: &str, now: &AnchorNow) -> String {
    match now {
        AnchorNow::At { file, line, edited } => {
            let said = if *edited { " (the line was edited since)" } else { "" };
            match parse_anchor(filed) {
                Some((f, l)) if f == file && l == *line && *edited => format!(" → still {file}:{line}{said}"),
                Some((f, l)) if f == file && l == *line => " → unchanged".to_owned(),
                _ => format!(" → now {file}:{line}{said}"),
            }
        }
        AnchorNow::Gone { commit: Some(c), .. } => format!(" → gone (the line was removed in {})", short(c)),
        AnchorNow::Gone { commit: None, .. } => " → gone (the line was removed since)".to_owned(),
        AnchorNow::Unknown { unknown } => format!(" (as filed: {unknown})"),
    }
}

fn short(sha: &str) -> &str {
    sha.get(..7).unwrap_or(sha)
}

/// `path/to/file.tsx:42` (or `…:42:7`, a column after the line) as its path and line.
pub fn parse_anchor(anchor: &str) -> Option<(&str, u32)> {
    let number = |s: &str| s.parse::<u32>().ok().filter(|n| *n > 0 && s.bytes().all(|b| b.is_ascii_digit()));
    let (head, last) = anchor.trim().rsplit_once(':')?;
    number(last)?;
    let (file, line) = match head.rsplit_once(':') {
        Some((file, line)) if number(line).is_some() => (file, number(line)?),
        _ => (head, number(last)?),
    };
    let file = file.trim_start_matches("./");
    (!file.is_empty()).then_some((file, line))
}

/// What became of a file between two commits, by its path in the first.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fate {
    Modified,
    Renamed(String),
    Deleted,
}

/// The files `git diff --name-status -z -M A B` lists, by their path in `A` (added
/// files are not in `A`, so not here). A file not listed is the same in both.
pub fn parse_fates(z: &str) -> HashMap<String, Fate> {
    let mut fates = HashMap::new();
    let mut fields = z.split('\0');
    while let Some(status) = fields.next().filter(|s| !s.is_empty()) {
        let Some(path) = fields.next() else { break };
        match status.as_bytes()[0] {
            b'R' => {
                let Some(to) = fields.next() else { break };
                fates.insert(path.to_owned(), Fate::Renamed(to.to_owned()));
            }
            // A copy leaves its source where it was; only the source is in `A`.
            b'C' => {
                fields.next();
                fates.entry(path.to_owned()).or_insert(Fate::Modified);
            }
            b'D' => {
                fates.insert(path.to_owned(), Fate::Deleted);
            }
            b'A' => {}
            _ => {
                fates.insert(path.to_owned(), Fate::Modified);
            }
        }
    }
    fates
}

/// One hunk of a unified diff: `@@ -old_start,old_count +new_start,new_count @@`. With a
/// count of 0, its start is the line before the (empty) range, as git writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Hunk {
    pub old_start: u32,
    pub old_count: u32,
    pub new_start: u32,
    pub new_count: u32,
}

/// One file's patch in a `git diff` (run with `--src-prefix=a/ --dst-prefix=b/`): its
/// path before and after (`None`: added, or deleted) and its hunks in order.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Patch {
    pub old: Option<String>,
    pub new: Option<String>,
    pub hunks: Vec<Hunk>,
}

/// The patches of a `git diff`'s output. Paths are read from `rename from/to` and the
/// `---`/`+++` lines, else from the `diff --git a/P b/P` line (a pure mode change).
pub fn parse_patches(diff: &str) -> Vec<Patch> {
    let mut patches: Vec<Patch> = Vec::new();
    let mut in_hunks = false;
    for line in diff.lines() {
        if let Some(rest) = line.strip_prefix("diff --git ") {
            let same = rest.strip_prefix("a/").and_then(|r| {
                let half = r.len().checked_sub(3)? / 2;
                let (p, q) = (r.get(..half)?, r.get(half..)?);
                (q.strip_prefix(" b/")? == p).then(|| p.to_owned())
            });
            patches.push(Patch { old: same.clone(), new: same, hunks: Vec::new() });
            in_hunks = false;
            continue;
        }
        let Some(patch) = patches.last_mut() else { continue };
        if line.starts_with("@@") {
            in_hunks = true;
            patch.hunks.extend(parse_hunk_header(line));
        } else if in_hunks {
            // A hunk's body: `-`, `+`, ` ` and `\ No newline` lines, never a header.
        } else if let Some(p) = line.strip_prefix("rename from ") {
            patch.old = Some(p.to_owned());
        } else if let Some(p) = line.strip_prefix("rename to ") {
            patch.new = Some(p.to_owned());
        } else if line.starts_with("deleted file mode") {
            patch.new = None;
        } else if line.starts_with("new file mode") {
            patch.old = None;
        } else if let Some(p) = line.strip_prefix("--- ") {
            patch.old = p.strip_prefix("a/").map(str::to_owned);
        } else if let Some(p) = line.strip_prefix("+++ ") {
            patch.new = p.strip_prefix("b/").map(str::to_owned);
        }
    }
    patches
}

/// `@@ -12,3 +14 @@ …`: a count left out is 1.
fn parse_hunk_header(line: &str) -> Option<Hunk> {
    let mut parts = line.split(' ');
    let (_, old, new) = (parts.next()?, parts.next()?.strip_prefix('-')?, parts.next()?.strip_prefix('+')?);
    let range = |r: &str| -> Option<(u32, u32)> {
        match r.split_once(',') {
            Some((start, count)) => Some((start.parse().ok()?, count.parse().ok()?)),
            None => Some((r.parse().ok()?, 1)),
        }
    };
    let ((old_start, old_count), (new_start, new_count)) = (range(old)?, range(new)?);
    Some(Hunk { old_start, old_count, new_start, new_count })
}

/// Where a line is after a file's hunks (in order, as git writes them).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mapped {
    Line { line: u32, edited: bool },
    Gone,
}

/// Maps `line` of the old file through `hunks` to the new file.
pub fn map_line(hunks: &[Hunk], line: u32) -> Mapped {
    let mut shift: i64 = 0;
    for h in hunks {
        if h.old_count == 0 {
            // Lines inserted after `old_start`: the lines after it move down.
            if line <= h.old_start {
                break;
            }
        } else if line < h.old_start {
            break;
        } else if line < h.old_start + h.old_count {
            let offset = line - h.old_start;
            return if offset < h.new_count {
                Mapped::Line { line: h.new_start + offset, edited: true }
            } else {
                Mapped::Gone
            };
        }
        shift += i64::from(h.new_count) - i64::from(h.old_count);
    }
    Mapped::Line { line: (i64::from(line) + shift) as u32, edited: false }
}

/// Where a file of a commit is at `HEAD`, and the hunks between.
#[derive(Clone, Debug)]
enum FileAtHead {
    /// `HEAD` has it, at this path, through these hunks (none: the same text).
    At(String, Vec<Hunk>),
    Deleted,
}

/// Follows anchors from their commits to the `HEAD` of one checkout, caching git's
/// answers per commit and per (commit, file).
pub struct Follower {
    dir: PathBuf,
    /// The checkout's top folder and `HEAD`, or why there is none (once asked).
    checkout: Option<Result<(PathBuf, String), String>>,
    commits: HashMap<String, Option<String>>,
    fates: HashMap<String, Result<HashMap<String, Fate>, String>>,
    files: HashMap<(String, String), Result<FileAtHead, String>>,
}

impl Follower {
    /// A follower for the checkout `dir` is in (none: every anchor is "as filed"); git
    /// is first run when an anchor is followed.
    pub fn new(dir: &Path) -> Follower {
        Follower {
            dir: dir.to_owned(),
            checkout: None,
            commits: HashMap::new(),
            fates: HashMap::new(),
            files: HashMap::new(),
        }
    }

    /// A follower for the checkout the current directory is in.
    pub fn here() -> Follower {
        Follower::new(&std::env::current_dir().unwrap_or_default())
    }

    /// Where `anchor`, filed on build `sha`, is at `HEAD`.
    pub fn follow(&mut self, sha: Option<&str>, anchor: &str) -> AnchorNow {
        let dir = &self.dir;
        let checkout = self.checkout.get_or_insert_with(|| match (git::toplevel(dir), git::head(dir)) {
            (Some(top), Some(head)) => Ok((top, head.commit)),
            _ => Err("not in a git checkout".to_owned()),
        });
        let (top, head) = match checkout {
            Ok((top, head)) => (top.clone(), head.clone()),
            Err(why) => return AnchorNow::unknown(why.clone()),
        };
        let Some(sha) = sha.map(str::trim).filter(|s| !s.is_empty()) else {
            return AnchorNow::unknown("the item names no build commit");
        };
        // A commit id, never a branch or tag name that would resolve to something else.
        if sha.len() < 4 || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
            return AnchorNow::unknown(format!("the build {sha:?} is not a commit id"));
        }
        let Some((file, line)) = parse_anchor(anchor) else {
            return AnchorNow::unknown("not a file:line anchor");
        };
        let full = self.commits.entry(sha.to_owned()).or_insert_with(|| git::resolve(&top, sha)).clone();
        let Some(full) = full else {
            return AnchorNow::unknown(format!(
                "commit {} is not in this checkout (a shallow clone?)",
                short(sha)
            ));
        };
        match self.file_at_head(&top, &full, &head, file) {
            Err(why) => AnchorNow::unknown(why),
            Ok(FileAtHead::Deleted) => AnchorNow::gone(removed_in(&top, &full, &head, &[file], line)),
            Ok(FileAtHead::At(path, hunks)) => match map_line(&hunks, line) {
                Mapped::Line { line, edited } => AnchorNow::At { file: path, line, edited },
                // Under its name at `sha`, then at `HEAD` when it was renamed.
                Mapped::Gone if path == file => {
                    AnchorNow::gone(removed_in(&top, &full, &head, &[file], line))
                }
                Mapped::Gone => AnchorNow::gone(removed_in(&top, &full, &head, &[file, &path], line)),
            },
        }
    }

    fn file_at_head(&mut self, top: &Path, sha: &str, head: &str, file: &str) -> Result<FileAtHead, String> {
        let key = (sha.to_owned(), file.to_owned());
        if let Some(known) = self.files.get(&key) {
            return known.clone();
        }
        let fates = self
            .fates
            .entry(sha.to_owned())
            .or_insert_with(|| git::name_status(top, sha, head).map(|z| parse_fates(&z)))
            .clone();
        let found = fates.and_then(|fates| file_between(top, sha, head, file, fates.get(file)));
        self.files.insert(key, found.clone());
        found
    }

    /// Each element's anchor at `HEAD`, in order (`None`: the element has none).
    pub fn follow_change(&mut self, c: &Change) -> Vec<Option<AnchorNow>> {
        let elements = c.capture.as_ref().map(|cap| cap.elements.as_slice()).unwrap_or_default();
        elements
            .iter()
            .map(|e| e.source_anchor.as_deref().map(|a| self.follow(c.git_sha.as_deref(), a)))
            .collect()
    }

    /// The source anchors of `c`'s elements, each as filed and at `HEAD`.
    pub fn filed_anchors<'a>(&mut self, c: &'a Change) -> Vec<FiledAnchor<'a>> {
        let elements = c.capture.as_ref().map(|cap| cap.elements.as_slice()).unwrap_or_default();
        let sha = c.git_sha.as_deref();
        elements
            .iter()
            .filter_map(|e| e.source_anchor.as_deref())
            .map(|a| FiledAnchor { source_anchor: a, as_of: sha, source_anchor_now: self.follow(sha, a) })
            .collect()
    }

    /// Adds `sourceAnchorNow` beside each element's `sourceAnchor` in `value`, wherever
    /// an item (an object with `capture.elements`, its build in `gitSha`) is in it.
    pub fn annotate(&mut self, value: &mut Value) {
        match value {
            Value::Array(items) => items.iter_mut().for_each(|v| self.annotate(v)),
            Value::Object(map) => {
                let sha = map.get("gitSha").and_then(Value::as_str).map(str::to_owned);
                if let Some(Value::Array(elements)) =
                    map.get_mut("capture").and_then(|c| c.get_mut("elements"))
                {
                    for e in elements.iter_mut().filter_map(Value::as_object_mut) {
                        if let Some(anchor) = e.get("sourceAnchor").and_then(Value::as_str).map(str::to_owned)
                        {
                            let now = self.follow(sha.as_deref(), &anchor);
                            e.insert(
                                "sourceAnchorNow".to_owned(),
                                serde_json::to_value(now).expect("serialises"),
                            );
                        }
                    }
                }
                map.values_mut().for_each(|v| self.annotate(v));
            }
            _ => {}
        }
    }
}

/// A source anchor as filed (`demo/index.html:12` as of the item's build) and where
/// that line is now: what `redline run`'s work file lists for each item.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct FiledAnchor<'a> {
    pub source_anchor: &'a str,
    pub as_of: Option<&'a str>,
    pub source_anchor_now: AnchorNow,
}

/// Where `file` of `sha` is at `to`, given its fate in `git diff --name-status`.
fn file_between(
    top: &Path,
    sha: &str,
    to: &str,
    file: &str,
    fate: Option<&Fate>,
) -> Result<FileAtHead, String> {
    let paths: Vec<&str> = match fate {
        None if git::has_path(top, sha, file) => return Ok(FileAtHead::At(file.to_owned(), Vec::new())),
        None => return Err(format!("{file} is not in commit {}", short(sha))),
        Some(Fate::Deleted) => return Ok(FileAtHead::Deleted),
        Some(Fate::Modified) => vec![file],
        Some(Fate::Renamed(new)) => vec![file, new],
    };
    let patches = parse_patches(&git::diff_hunks(top, sha, to, &paths)?);
    Ok(match patches.into_iter().find(|p| p.old.as_deref() == Some(file)) {
        None => FileAtHead::At(file.to_owned(), Vec::new()),
        Some(Patch { new: None, .. }) => FileAtHead::Deleted,
        Some(Patch { new: Some(new), hunks, .. }) => FileAtHead::At(new, hunks),
    })
}

/// The first commit after `sha` on `head`'s first-parent line at which `line` of
/// `paths[0]` is gone, found by bisection over the commits that touched `paths` (the
/// file's name at `sha`, and at `head` when it was renamed); `None` when git cannot say.
fn removed_in(top: &Path, sha: &str, head: &str, paths: &[&str], line: u32) -> Option<String> {
    let file = paths[0];
    let commits = git::first_parent_commits(top, sha, head, paths).ok()?;
    let gone_at = |commit: &str| -> Option<bool> {
        let patches = parse_patches(&git::diff_hunks(top, sha, commit, paths).ok()?);
        Some(match patches.into_iter().find(|p| p.old.as_deref() == Some(file)) {
            None => false,
            Some(Patch { new: None, .. }) => true,
            Some(p) => map_line(&p.hunks, line) == Mapped::Gone,
        })
    };
    // Present at `sha` (before the first), gone at the last: find the first gone.
    let (mut lo, mut hi) = (0, commits.len().checked_sub(1)?);
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        if gone_at(&commits[mid])? {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    gone_at(&commits[lo])?.then(|| commits[lo].clone())
}

#[cfg(test)]
mod tests;

//! Changesets: a claimed group's work on a branch of its own, `changeset/<slug of the
//! group title>`, checked out in a worktree beside the checkout
//! (`<checkout>-changesets/<slug>`), and merged back in one `--no-ff` commit whose
//! trailer is `Changeset: <groupId>` once every item of the group is done.
//!
//! Which branch holds a group is kept in the repository's own config
//! (`branch.<branch>.redline-group = <groupId>`), shared by all its worktrees and removed
//! with the branch; the worktree is the one `git worktree list` shows on that branch.
//!
//! Also here: finding an item's commit by its trailer (`Change-Id: <uuid>` or
//! `Change: #N`), which `done` records instead of `HEAD`.

use std::path::{Path, PathBuf};

use redline_protocol::{
    Change, ChangeStatus, Group, ListChangesInput, ListChangesOutput, ReleaseGroup, ReleaseGroupInput,
    is_lease_live,
};
use serde::Serialize;

use super::client::{Error, exit};
use super::format::{self, shell_word};
use super::git;
use super::session::{Ctx, now};

/// The longest slug a changeset's branch and folder are named with.
const SLUG_MAX: usize = 48;
/// The config key (under `branch.<name>.`) naming the group a changeset branch holds.
const GROUP_KEY: &str = "redline-group";
/// Branches of changesets are named `changeset/<slug>`.
const BRANCH_PREFIX: &str = "changeset/";

/// A group's changeset: its branch and the worktree it is checked out in (none once
/// the worktree was removed by hand).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Changeset {
    pub group_id: String,
    pub branch: String,
    pub worktree: Option<PathBuf>,
}

/// `title` as a branch and folder name: lower-case ASCII letters and digits, each run
/// of anything else one `-`, at most `max` characters, never starting or ending in `-`
/// ("changes" when nothing is left).
pub fn slug(title: &str, max: usize) -> String {
    let mut out = String::new();
    for ch in title.chars() {
        if ch.is_ascii_alphanumeric() {
            out.push(ch.to_ascii_lowercase());
        } else if !out.is_empty() && !out.ends_with('-') {
            out.push('-');
        }
    }
    out.truncate(max);
    let trimmed = out.trim_end_matches('-');
    if trimmed.is_empty() { "changes".to_owned() } else { trimmed.to_owned() }
}

/// The slug of a group's changeset: the title's, or (when that name is taken) the
/// title's shortened to leave room for `-` and the first 8 letters or digits of the
/// group id.
pub fn changeset_slug(title: &str, group_id: &str, taken: bool) -> String {
    if !taken {
        return slug(title, SLUG_MAX);
    }
    let suffix: String = group_id.chars().filter(char::is_ascii_alphanumeric).take(8).collect();
    let suffix = suffix.to_ascii_lowercase();
    format!("{}-{suffix}", slug(title, SLUG_MAX - suffix.len() - 1))
}

/// The folder changesets of the checkout at `top` are made in: beside it, named after
/// it with `-changesets`.
pub fn changesets_dir(top: &Path) -> PathBuf {
    let name = top.file_name().map_or_else(|| "checkout".into(), |n| n.to_string_lossy().into_owned());
    top.with_file_name(format!("{name}-changesets"))
}

/// The commit of `log` ([`git::trailers_log`]'s output) whose trailers name the item:
/// the newest whose `Change-Id:` is `change_id` (any case), else the newest whose
/// `Change:` is exactly `#<short_id>` (or without `#`) and whose `Change-Id:`, if it has
/// one, is this item's. So `Change: #1` never takes #12's commit, a commit of another
/// item (its `Change-Id:` says so) or a `#1` in any other trailer. Each commit is a
/// NUL-separated record, its id on the first line: trailers are unfolded, so no value
/// makes a line of its own, and a commit message holds no NUL.
pub fn commit_with_trailer(log: &str, change_id: &str, short_id: &str) -> Option<String> {
    let commits: Vec<(&str, Vec<(String, &str)>)> = log
        .split('\0')
        .filter_map(|record| {
            let (sha, trailers) = record.split_once('\n').unwrap_or((record, ""));
            let sha = sha.trim();
            let is_commit_id = matches!(sha.len(), 40 | 64) && sha.bytes().all(|b| b.is_ascii_hexdigit());
            let trailers = trailers
                .lines()
                .filter_map(|line| line.split_once(':'))
                .map(|(key, value)| (key.trim().to_ascii_lowercase(), value.trim()))
                .collect();
            is_commit_id.then_some((sha, trailers))
        })
        .collect();
    let has = |trailers: &[(String, &str)], wanted: &str, matches: &dyn Fn(&str) -> bool| {
        trailers.iter().any(|(key, value)| key == wanted && matches(value))
    };
    let this_id = |v: &str| v.eq_ignore_ascii_case(change_id);
    let by_id = commits.iter().find(|(_, t)| has(t, "change-id", &this_id));
    let by_number = || {
        commits.iter().find(|(_, t)| {
            has(t, "change", &|v| v.strip_prefix('#').unwrap_or(v) == short_id)
                && !has(t, "change-id", &|v| !this_id(v))
        })
    };
    by_id.or_else(by_number).map(|(sha, _)| (*sha).to_owned())
}

/// Why `done` refuses an item with no commit naming it, and the commit to make.
pub fn no_commit_message(c: &Change) -> String {
    format!(
        "no commit on this branch is #{n} (\"{title}\"). Commit its fix with the trailer\n  \
         Change-Id: {id}\nand the subject `type(scope): #{n} subject` (one item, one commit), e.g.\n  \
         git commit -m \"fix(orders): #{n} what changed\" -m \"Change-Id: {id}\"\nor pass --commit SHA.",
        n = c.short_id,
        title = format::terminal_safe(&c.title),
        id = c.change_id,
    )
}

/// The message of a changeset's merge commit: its title, the items, the trailer.
pub fn merge_message(group: &Group, items: &[Change]) -> String {
    let numbers: Vec<String> = items.iter().map(|c| format!("#{}", c.short_id)).collect();
    let list = if numbers.is_empty() { String::new() } else { format!(" ({})", numbers.join(", ")) };
    format!("Merge changeset \"{}\"{list}\n\nChangeset: {}", group.title, group.group_id)
}

/// The items of a group that keep its changeset from merging: those not done (a
/// dismissed item is settled too: only its filer may reopen it).
pub fn unfinished(items: &[Change]) -> Vec<&Change> {
    items.iter().filter(|c| !matches!(c.status, ChangeStatus::Done | ChangeStatus::Dismissed)).collect()
}

/// The branch of `git config --get-regexp` output (`branch.<name>.redline-group <id>`
/// lines) that holds `group_id`.
pub fn branch_of_group(config: &str, group_id: &str) -> Option<String> {
    config.lines().find_map(|line| {
        let (key, value) = line.split_once(' ')?;
        let branch = key.strip_prefix("branch.")?.strip_suffix(&format!(".{GROUP_KEY}"))?;
        (value.trim() == group_id).then(|| branch.to_owned())
    })
}

/// The folder `git worktree list --porcelain` shows `branch` checked out in.
pub fn worktree_of(porcelain: &str, branch: &str) -> Option<PathBuf> {
    let want = format!("branch refs/heads/{branch}");
    porcelain.split("\n\n").find_map(|block| {
        let path = block.lines().find_map(|l| l.strip_prefix("worktree "))?;
        block.lines().any(|l| l == want).then(|| PathBuf::from(path))
    })
}

/// The top folder of the checkout `cwd` is in; an error outside one.
pub fn checkout_top(cwd: &Path) -> Result<PathBuf, Error> {
    git::toplevel(cwd).ok_or_else(|| {
        Error::local(format!("{} is not in a git checkout: changesets are branches of one", cwd.display()))
    })
}

/// The current directory.
pub fn current_dir() -> Result<PathBuf, Error> {
    std::env::current_dir().map_err(|e| Error::local(format!("reading the current directory: {e}")))
}

/// Makes `group`'s changeset: branch `changeset/<slug>` at the checkout's `HEAD`, in a
/// worktree beside the checkout at `top`; or the one it already has.
pub fn create(top: &Path, group: &Group) -> Result<Changeset, Error> {
    if let Some(existing) = find(top, &group.group_id)? {
        return Ok(existing);
    }
    let dir = changesets_dir(top);
    let free =
        |slug: &str| !git::branch_exists(top, &format!("{BRANCH_PREFIX}{slug}")) && !dir.join(slug).exists();
    let mut slug = changeset_slug(&group.title, &group.group_id, false);
    if !free(&slug) {
        slug = changeset_slug(&group.title, &group.group_id, true);
    }
    let branch = format!("{BRANCH_PREFIX}{slug}");
    let path = dir.join(&slug);
    git::add_worktree(top, &path, &branch).map_err(Error::Local)?;
    git::set_config(top, &format!("branch.{branch}.{GROUP_KEY}"), &group.group_id).map_err(Error::Local)?;
    Ok(Changeset { group_id: group.group_id.clone(), branch, worktree: Some(path) })
}

/// The changeset of `group_id` in the repository of `dir`, if it has one.
pub fn find(dir: &Path, group_id: &str) -> Result<Option<Changeset>, Error> {
    let pattern = format!("^branch\\..*\\.{GROUP_KEY}$");
    let config = git::config_matching(dir, &pattern).map_err(Error::Local)?;
    let Some(branch) = branch_of_group(&config, group_id) else { return Ok(None) };
    let worktrees = git::worktree_list(dir).map_err(Error::Local)?;
    let worktree = worktree_of(&worktrees, &branch);
    Ok(Some(Changeset { group_id: group_id.to_owned(), branch, worktree }))
}

/// A group's items, done ones included, and the group.
pub async fn group_items(ctx: &Ctx, group_id: &str) -> Result<(Vec<Change>, Option<Group>), Error> {
    let input = ListChangesInput {
        group_id: Some(group_id.to_owned()),
        include_done: true,
        limit: Some(redline_protocol::LIST_LIMIT_MAX),
        ..Default::default()
    };
    let ListChangesOutput { changes, groups, .. } = ctx.list_all(input).await?;
    let group = groups.into_iter().find(|g| g.group_id == group_id);
    Ok((changes, group))
}

/// What a merge did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Merged {
    pub changeset: Changeset,
    /// The branch it was merged into.
    pub into: String,
    /// The merge commit.
    pub commit: String,
    /// Why the worktree (and so the branch) was kept, when it was.
    pub kept: Option<String>,
}

/// Merges `cs` into the branch the checkout at `dir` is on, once every item is done
/// (see [`unfinished`]); then removes its worktree and its branch. The lease is left
/// to lapse: the protocol has no call that ends a group's lease, and a lease on done
/// items keeps nothing from anyone.
pub fn merge(dir: &Path, cs: &Changeset, group: &Group, items: &[Change]) -> Result<Merged, Error> {
    let left = unfinished(items);
    if !left.is_empty() {
        let lines: Vec<String> = left
            .iter()
            .map(|c| format!("  #{} {} ({})", c.short_id, format::terminal_safe(&c.title), c.status.as_str()))
            .collect();
        return Err(Error::local(format!(
            "not merging {}: {} of group {} not done:\n{}",
            cs.branch,
            if left.len() == 1 { "1 item is".to_owned() } else { format!("{} items are", left.len()) },
            cs.group_id,
            lines.join("\n")
        )));
    }
    let into = git::head(dir).and_then(|h| h.branch).ok_or_else(|| {
        Error::local(format!(
            "{} is not on a branch: check out the branch to merge {} into",
            dir.display(),
            cs.branch
        ))
    })?;
    if into == cs.branch {
        return Err(Error::local(format!(
            "this checkout is on {} itself: run merge from the branch it goes into",
            cs.branch
        )));
    }
    git::merge_no_ff(dir, &cs.branch, &merge_message(group, items))
        .map_err(|e| Error::local(format!("merging {} into {into}: {e}", cs.branch)))?;
    let commit = git::head(dir).map(|h| h.commit).unwrap_or_default();
    let kept = cs
        .worktree
        .as_deref()
        .map(|path| git::remove_worktree(dir, path))
        .transpose()
        .and_then(|_| git::delete_merged_branch(dir, &cs.branch))
        .err();
    Ok(Merged { changeset: cs.clone(), into, commit, kept })
}

/// What a merge says.
pub fn merged_text(m: &Merged) -> String {
    let cs = &m.changeset;
    let kept = match &m.kept {
        Some(why) => format!("\nKept its worktree and branch: {why}"),
        None => "; removed its worktree and branch".to_owned(),
    };
    format!(
        "Merged {} into {} ({}, group {}){kept}.",
        cs.branch,
        m.into,
        &m.commit[..m.commit.len().min(7)],
        cs.group_id
    )
}

/// `redline merge --group-id G`.
pub async fn run_merge(ctx: &Ctx, group_id: &str) -> Result<i32, Error> {
    let cwd = current_dir()?;
    let top = checkout_top(&cwd)?;
    let cs = find(&top, group_id)?.ok_or_else(|| {
        Error::local(format!(
            "group {} has no changeset in this repository (make one with `redline claim --worktree`)",
            group_id
        ))
    })?;
    let (items, group) = group_items(ctx, group_id).await?;
    let group = group.ok_or_else(|| Error::local(format!("the server knows no group {}", group_id)))?;
    let merged = merge(&cwd, &cs, &group, &items)?;
    end_lease(ctx, &group).await;
    ctx.print(&merged, || merged_text(&merged));
    Ok(exit::OK)
}

/// Ends a merged group's lease if it is still live (the server ends it when the last
/// item is done; a renewal made before may outlast that on an older server). A server
/// that cannot (Fabric) lets it lapse.
async fn end_lease(ctx: &Ctx, group: &Group) {
    let (Some(claimed_by), true) = (&group.claimed_by, is_lease_live(group.claim_expires_at, now())) else {
        return;
    };
    let input = ReleaseGroupInput {
        project_id: ctx.project_id.clone(),
        group_id: group.group_id.clone(),
        claimed_by: claimed_by.clone(),
    };
    if let Err(e) = ctx.api.call::<ReleaseGroup>(input).await {
        tracing::debug!("the merged group's lease is left to lapse: {e}");
    }
}

/// What `claim --worktree` adds to its text.
pub fn worktree_text(cs: &Changeset) -> String {
    match &cs.worktree {
        Some(path) => format!(
            "Changeset: branch {} in {}\nWork there: cd {}",
            cs.branch,
            path.display(),
            shell_word(&path.display().to_string())
        ),
        None => format!("Changeset: branch {} (its worktree was removed)", cs.branch),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::tests::{NOW, change, group};

    #[test]
    fn slugs_are_short_lowercase_words() {
        assert_eq!(slug("Changes on /orders", SLUG_MAX), "changes-on-orders");
        assert_eq!(slug("  Fix: Ümlaut & tax!! ", SLUG_MAX), "fix-mlaut-tax");
        assert_eq!(slug("/", SLUG_MAX), "changes");
        let long = slug(&"word ".repeat(30), SLUG_MAX);
        assert!(long.len() <= SLUG_MAX && !long.ends_with('-'), "{long}");
    }

    #[test]
    fn a_taken_name_gets_the_group_ids_start() {
        let id = "0F1E2D3C-4B5A-4000-8000-000000000001";
        assert_eq!(changeset_slug("Changes on /a", id, false), "changes-on-a");
        assert_eq!(changeset_slug("Changes on /a", id, true), "changes-on-a-0f1e2d3c");
        let long = changeset_slug(&"x".repeat(80), id, true);
        assert_eq!(long.len(), SLUG_MAX);
        assert!(long.ends_with("-0f1e2d3c"), "{long}");
    }

    #[test]
    fn changesets_live_beside_the_checkout() {
        assert_eq!(changesets_dir(Path::new("/src/shop")), PathBuf::from("/src/shop-changesets"));
    }

    #[test]
    fn finds_the_newest_commit_naming_the_item_by_either_trailer() {
        let id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
        let [c0, c1, c2, c3] = ["0", "1", "2", "3"].map(|n| n.repeat(40));
        let log = format!(
            "{c3}\nSigned-off-by: A <a@example.com>\n\0\
             {c2}\nChange: #7\n\0\
             {c1}\nChange-Id: {}\nChange: #4\n\0\
             {c0}\n",
            id.to_uppercase()
        );
        let found = |log: &str, id: &str, n: &str| commit_with_trailer(log, id, n);
        assert_eq!(found(&log, id, "4"), Some(c1.clone()));
        assert_eq!(found(&log, "other", "7"), Some(c2.clone()));
        // `Change: 7` without `#` counts; #70 is not #7; other keys never count.
        assert_eq!(found(&format!("{c3}\nchange: 7\n"), "x", "7"), Some(c3.clone()));
        assert_eq!(found(&log, "other", "70"), None);
        assert_eq!(found(&format!("{c3}\nRefs: #7\n"), "x", "7"), None);
        assert_eq!(found("", id, "4"), None);
    }

    /// `Change: #1` never takes another item's commit: not #12's, not one whose
    /// `Change-Id:` names another item, not a `#1` in another trailer, not a record
    /// forged inside a trailer's value; an exact `Change-Id:` wins over a newer `Change:`.
    #[test]
    fn a_short_number_never_matches_another_items_commit() {
        let (mine, theirs) = ("3f2504e0-4f89-11d3-9a0c-0305e82c3301", "9a2504e0-4f89-11d3-9a0c-0305e82c3399");
        let [c0, c1, c2, c3, c4] = ["0", "1", "2", "3", "4"].map(|n| n.repeat(40));
        let log = format!(
            "{c4}\nChange: #12\nRefs: #1\nSee-Also: Change: #1\n\0\
             {c3}\nNote: x\x1e\n{c0}\x1eChange: #1\n\0\
             {c2}\nChange-Id: {theirs}\nChange: #1\n\0\
             {c1}\nChange: #1\n"
        );
        assert_eq!(commit_with_trailer(&log, mine, "1"), Some(c1.clone()));
        assert_eq!(commit_with_trailer(&log, mine, "12"), Some(c4.clone()));
        let exact = format!("{c4}\nChange: #1\n\0{c2}\nChange-Id: {mine}\n");
        assert_eq!(commit_with_trailer(&exact, mine, "1"), Some(c2));
    }

    #[test]
    fn a_missing_commit_is_explained_with_the_trailer_to_add() {
        let c = change(4);
        let said = no_commit_message(&c);
        assert!(said.starts_with("no commit on this branch is #4 (\"Item 4\")"), "{said}");
        assert!(said.contains(&format!("\n  Change-Id: {}\n", c.change_id)), "{said}");
        assert!(said.contains("the subject `type(scope): #4 subject`"), "{said}");
        let example =
            format!("git commit -m \"fix(orders): #4 what changed\" -m \"Change-Id: {}\"", c.change_id);
        assert!(said.contains(&example), "{said}");
    }

    #[test]
    fn the_merge_commit_names_the_items_and_carries_the_trailer() {
        let mut g = group("g-1", "agent-a", NOW);
        g.title = "Changes on /a".into();
        let msg = merge_message(&g, &[change(1), change(2)]);
        assert_eq!(msg, "Merge changeset \"Changes on /a\" (#1, #2)\n\nChangeset: g-1");
    }

    #[test]
    fn only_done_and_dismissed_items_let_a_changeset_merge() {
        let mut items = vec![change(1), change(2), change(3)];
        items[0].status = ChangeStatus::Done;
        items[1].status = ChangeStatus::Dismissed;
        items[2].status = ChangeStatus::NeedsAnswer;
        let left: Vec<&str> = unfinished(&items).iter().map(|c| c.short_id.as_str()).collect();
        assert_eq!(left, ["3"]);
    }

    #[test]
    fn reads_which_branch_and_worktree_hold_a_group() {
        let config = "branch.changeset/changes-on-a.redline-group g-1\n\
                      branch.changeset/changes-on-b.redline-group g-2\n";
        assert_eq!(branch_of_group(config, "g-2").as_deref(), Some("changeset/changes-on-b"));
        assert_eq!(branch_of_group(config, "g-3"), None);
        let porcelain = "worktree /src/shop\nHEAD abc\nbranch refs/heads/main\n\n\
                         worktree /src/shop-changesets/changes-on-b\nHEAD def\n\
                         branch refs/heads/changeset/changes-on-b\n\n";
        assert_eq!(
            worktree_of(porcelain, "changeset/changes-on-b"),
            Some(PathBuf::from("/src/shop-changesets/changes-on-b"))
        );
        assert_eq!(worktree_of(porcelain, "changeset/changes-on-a"), None);
    }
}

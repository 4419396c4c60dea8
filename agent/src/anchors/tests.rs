//! The anchor follower's tests: the pure core on hand-written and generated diffs, then
//! the whole follower on a real temporary git repository.

use std::path::Path;
use std::process::Command;

use proptest::prelude::*;
use serde_json::json;

use super::*;

fn hunk(old_start: u32, old_count: u32, new_start: u32, new_count: u32) -> Hunk {
    Hunk { old_start, old_count, new_start, new_count }
}

fn at(file: &str, line: u32) -> AnchorNow {
    AnchorNow::At { file: file.to_owned(), line, edited: false }
}

#[test]
fn reads_anchors_with_a_line_and_maybe_a_column() {
    assert_eq!(parse_anchor("src/routes/app.orders.tsx:42"), Some(("src/routes/app.orders.tsx", 42)));
    assert_eq!(parse_anchor("./demo/index.html:12:7"), Some(("demo/index.html", 12)));
    assert_eq!(parse_anchor("C:odd/name.ts:3"), Some(("C:odd/name.ts", 3)));
    for bad in ["src/app.tsx", "src/app.tsx:", "src/app.tsx:0", "src/app.tsx:+4", ":12", "app.tsx:x"] {
        assert_eq!(parse_anchor(bad), None, "{bad}");
    }
}

#[test]
fn reads_which_files_were_renamed_or_deleted() {
    let z = "M\0src/a.tsx\0R087\0old/b.tsx\0new/b.tsx\0D\0gone.tsx\0A\0added.tsx\0C100\0c.tsx\0copy.tsx\0T\0link\0";
    let fates = parse_fates(z);
    assert_eq!(fates.get("src/a.tsx"), Some(&Fate::Modified));
    assert_eq!(fates.get("old/b.tsx"), Some(&Fate::Renamed("new/b.tsx".into())));
    assert_eq!(fates.get("gone.tsx"), Some(&Fate::Deleted));
    assert_eq!(fates.get("added.tsx"), None);
    assert_eq!(fates.get("c.tsx"), Some(&Fate::Modified));
    assert_eq!(fates.get("link"), Some(&Fate::Modified));
    assert_eq!(fates.len(), 5);
    assert!(parse_fates("").is_empty());
}

#[test]
fn reads_the_patches_of_a_diff() {
    let diff = "\
diff --git a/src/a.tsx b/src/a.tsx
index 1..2 100644
--- a/src/a.tsx
+++ b/src/a.tsx
@@ -3 +3,2 @@ function App() {
-  <b>
+  <i>
+  <u>
@@ -10,0 +12 @@
+--- a/not a header
diff --git a/old name.tsx b/new name.tsx
similarity index 100%
rename from old name.tsx
rename to new name.tsx
diff --git a/gone.tsx b/gone.tsx
deleted file mode 100644
--- a/gone.tsx
+++ /dev/null
@@ -1,2 +0,0 @@
-a
-b
diff --git a/run.sh b/run.sh
old mode 100644
new mode 100755
";
    let patches = parse_patches(diff);
    let path = |p: &str| Some(p.to_owned());
    assert_eq!(
        patches,
        [
            Patch {
                old: path("src/a.tsx"),
                new: path("src/a.tsx"),
                hunks: vec![hunk(3, 1, 3, 2), hunk(10, 0, 12, 1)]
            },
            Patch { old: path("old name.tsx"), new: path("new name.tsx"), hunks: vec![] },
            Patch { old: path("gone.tsx"), new: None, hunks: vec![hunk(1, 2, 0, 0)] },
            Patch { old: path("run.sh"), new: path("run.sh"), hunks: vec![] },
        ]
    );
}

#[test]
fn maps_lines_through_hunks() {
    // Two lines inserted after line 2; line 5 replaced by two; lines 8-9 removed.
    let hunks = [hunk(2, 0, 3, 2), hunk(5, 1, 7, 2), hunk(8, 2, 9, 0)];
    let line = |line| Mapped::Line { line, edited: false };
    assert_eq!(map_line(&hunks, 1), line(1));
    assert_eq!(map_line(&hunks, 2), line(2));
    assert_eq!(map_line(&hunks, 3), line(5));
    assert_eq!(map_line(&hunks, 5), Mapped::Line { line: 7, edited: true });
    assert_eq!(map_line(&hunks, 6), line(9));
    assert_eq!(map_line(&hunks, 8), Mapped::Gone);
    assert_eq!(map_line(&hunks, 9), Mapped::Gone);
    assert_eq!(map_line(&hunks, 10), line(11));
    // Two lines become one: the second is gone.
    assert_eq!(map_line(&[hunk(4, 2, 4, 1)], 5), Mapped::Gone);
    assert_eq!(map_line(&[], 7), line(7));
}

/// An edit of a file of `old` numbered lines: each kept or dropped, and some new lines
/// put before each (and at the end). Returns the new file, as the numbers of the old
/// lines kept (`Some`) and new lines (`None`), and its `git diff -U0` hunks as text.
fn edit(keep: &[bool], inserts: &[u8]) -> (Vec<Option<u32>>, String) {
    let mut new = Vec::new();
    let mut text = String::new();
    let (mut old_line, mut new_line) = (0u32, 0u32);
    let mut i = 0;
    while i <= keep.len() {
        // A hunk: the dropped old lines from `i` and the new lines inserted among them.
        let (old_start, new_start) = (old_line, new_line);
        let mut body = String::new();
        let (mut removed, mut added) = (0, 0);
        while i <= keep.len() {
            for _ in 0..inserts[i] {
                added += 1;
                new_line += 1;
                new.push(None);
                body.push_str("+new\n");
            }
            if i < keep.len() && !keep[i] {
                removed += 1;
                old_line += 1;
                body.push_str(&format!("-old {old_line}\n"));
                i += 1;
            } else {
                break;
            }
        }
        if removed + added > 0 {
            let range = |start: u32, count: u32| match count {
                0 => format!("{start},0"),
                1 => format!("{}", start + 1),
                n => format!("{},{n}", start + 1),
            };
            text.push_str(&format!(
                "@@ -{} +{} @@\n{body}",
                range(old_start, removed),
                range(new_start, added)
            ));
        }
        if i < keep.len() {
            old_line += 1;
            new_line += 1;
            new.push(Some(old_line));
        }
        i += 1;
    }
    let diff = format!("diff --git a/f b/f\n--- a/f\n+++ b/f\n{text}");
    (new, diff)
}

proptest! {
    /// Whatever the edit, a kept line maps to where it is now, unedited; a dropped one
    /// is gone or maps to a new line of its own hunk, never onto a kept line.
    #[test]
    fn kept_lines_map_to_where_they_are_now(
        (keep, inserts) in (0usize..40).prop_flat_map(|n| {
            (proptest::collection::vec(any::<bool>(), n), proptest::collection::vec(0u8..3, n + 1))
        })
    ) {
        let (new, diff) = edit(&keep, &inserts);
        let patches = parse_patches(&diff);
        let hunks = patches.first().map(|p| p.hunks.clone()).unwrap_or_default();
        for (i, kept) in keep.iter().enumerate() {
            let old = i as u32 + 1;
            match map_line(&hunks, old) {
                Mapped::Line { line, edited } => {
                    let now = new.get(line as usize - 1).copied();
                    if *kept {
                        prop_assert_eq!((now, edited), (Some(Some(old)), false), "line {}", old);
                    } else {
                        prop_assert_eq!((now, edited), (Some(None), true), "line {}", old);
                    }
                }
                Mapped::Gone => prop_assert!(!kept, "kept line {} is gone", old),
            }
        }
    }
}

/// A temporary repository whose commits are made by `T <t@example.com>`.
struct Repo(tempfile::TempDir);

impl Repo {
    fn new() -> Repo {
        let repo = Repo(tempfile::tempdir().unwrap());
        repo.git(&["init", "-q", "-b", "main"]);
        repo
    }

    fn path(&self) -> &Path {
        self.0.path()
    }

    fn git(&self, args: &[&str]) -> String {
        let out = Command::new("git")
            .args(["-c", "user.name=T", "-c", "user.email=t@example.com"])
            .args(args)
            .current_dir(self.path())
            .output()
            .unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    }

    fn write(&self, file: &str, lines: &[String]) {
        let path = self.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, lines.iter().map(|l| format!("{l}\n")).collect::<String>()).unwrap();
    }

    fn commit(&self, message: &str) -> String {
        self.git(&["add", "-A"]);
        self.git(&["commit", "-q", "-m", message]);
        self.git(&["rev-parse", "HEAD"])
    }
}

fn numbered(prefix: &str, n: u32) -> Vec<String> {
    (1..=n).map(|i| format!("<p>{prefix} {i}</p>")).collect()
}

/// A page whose lines move (5 inserted above), then renamed, then one line removed; a
/// file left alone; a file deleted.
#[test]
fn follows_anchors_through_a_real_history() {
    let repo = Repo::new();
    let mut page = numbered("page", 20);
    repo.write("demo/index.html", &page);
    repo.write("demo/other.html", &numbered("other", 5));
    repo.write("demo/old.html", &numbered("old", 5));
    let filed = repo.commit("first");
    page.splice(0..0, numbered("new", 5));
    repo.write("demo/index.html", &page);
    repo.commit("five lines on top");
    repo.git(&["mv", "demo/index.html", "demo/home.html"]);
    repo.commit("renamed");
    page.retain(|l| l != "<p>page 15</p>");
    repo.write("demo/home.html", &page);
    let removed = repo.commit("line 15 removed");
    repo.git(&["rm", "-q", "demo/old.html"]);
    let deleted = repo.commit("old page deleted");
    let sha = Some(filed.as_str());
    let mut follower = Follower::new(&repo.path().join("demo"));

    assert_eq!(follower.follow(sha, "demo/index.html:12"), at("demo/home.html", 17));
    assert_eq!(follower.follow(sha, "demo/index.html:16"), at("demo/home.html", 20));
    assert_eq!(follower.follow(sha, "demo/index.html:15"), AnchorNow::gone(Some(removed.clone())));
    assert_eq!(follower.follow(sha, "demo/other.html:3"), at("demo/other.html", 3));
    assert_eq!(follower.follow(sha, "demo/old.html:2"), AnchorNow::gone(Some(deleted)));
    // A short sha is the same commit.
    assert_eq!(follower.follow(Some(&filed[..7]), "demo/index.html:1:4"), at("demo/home.html", 6));

    let unknown = follower.follow(Some("0123456789abcdef0123456789abcdef01234567"), "demo/index.html:12");
    assert_eq!(unknown, AnchorNow::unknown("commit 0123456 is not in this checkout (a shallow clone?)"));
    let missing = follower.follow(sha, "src/app.tsx:3");
    assert_eq!(missing, AnchorNow::unknown(format!("src/app.tsx is not in commit {}", &filed[..7])));
    assert_eq!(
        follower.follow(None, "demo/index.html:3"),
        AnchorNow::unknown("the item names no build commit")
    );
    let branch = follower.follow(Some("main"), "demo/index.html:3");
    assert_eq!(branch, AnchorNow::unknown("the build \"main\" is not a commit id"));
    let outside = tempfile::tempdir().unwrap();
    let far = Follower::new(outside.path()).follow(sha, "demo/index.html:12");
    assert_eq!(far, AnchorNow::unknown("not in a git checkout"));

    // What `show` prints after `FILE:LINE as of SHA`.
    let text = |anchor: &str, now: &AnchorNow| now_text(anchor, now);
    assert_eq!(text("demo/index.html:12", &at("demo/home.html", 17)), " → now demo/home.html:17");
    assert_eq!(text("demo/other.html:3", &at("demo/other.html", 3)), " → unchanged");
    let gone = text("demo/index.html:15", &AnchorNow::gone(Some(removed.clone())));
    assert_eq!(gone, format!(" → gone (the line was removed in {})", &removed[..7]));
    assert_eq!(
        text("x:1", &unknown),
        " (as filed: commit 0123456 is not in this checkout (a shallow clone?))"
    );
}

/// An edited line stays where it is, said to be edited; `--json` gets
/// `sourceAnchorNow` beside every `sourceAnchor` of every item in an answer.
#[test]
fn annotates_every_item_of_an_answer() {
    let repo = Repo::new();
    repo.write("a.html", &numbered("a", 4));
    let filed = repo.commit("first");
    let mut lines = numbered("a", 4);
    lines[1] = "<p>a 2, edited</p>".to_owned();
    lines.remove(3);
    repo.write("a.html", &lines);
    let removed = repo.commit("edited and removed");
    let mut answer = json!({"changes": [{
        "gitSha": filed,
        "capture": {"elements": [
            {"sourceAnchor": "a.html:1"},
            {"sourceAnchor": "a.html:2"},
            {"sourceAnchor": "a.html:4"},
            {"testId": "no-anchor"},
        ]}
    }, {"capture": {"elements": [{"sourceAnchor": "a.html:1"}]}}]});
    Follower::new(repo.path()).annotate(&mut answer);
    let now: Vec<_> = answer["changes"][0]["capture"]["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.get("sourceAnchorNow").cloned())
        .collect();
    assert_eq!(
        now,
        [
            Some(json!({"file": "a.html", "line": 1})),
            Some(json!({"file": "a.html", "line": 2, "edited": true})),
            Some(json!({"gone": true, "commit": removed})),
            None,
        ]
    );
    let unfiled = &answer["changes"][1]["capture"]["elements"][0]["sourceAnchorNow"];
    assert_eq!(unfiled, &json!({"unknown": "the item names no build commit"}));
    let edited = AnchorNow::At { file: "a.html".into(), line: 2, edited: true };
    assert_eq!(now_text("a.html:2", &edited), " → still a.html:2 (the line was edited since)");
}

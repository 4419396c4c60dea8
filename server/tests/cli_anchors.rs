//! Source anchors followed through the code (issue #35): `redline show` and `wait` (its
//! sent-back items; the claimable list carries no elements), run by the real binary in
//! a real git checkout against a real server, give each filed `file:line` where that
//! line is at the checkout's `HEAD`.

mod cli_support;
mod common;

use std::path::Path;

use cli_support::*;
use common::TestServer;
use serde_json::{Value, json};

fn lines(prefix: &str, n: u32) -> String {
    (1..=n).map(|i| format!("<p>{prefix} {i}</p>\n")).collect()
}

fn commit_all(dir: &Path, message: &str) -> String {
    git(dir, &["add", "-A"]);
    git(dir, &["-c", "user.name=T", "-c", "user.email=t@example.com", "commit", "-q", "-m", message]);
    git(dir, &["rev-parse", "HEAD"])
}

/// Files an item on build `sha` circling elements at `anchors`; returns its number.
async fn file_with_anchors(s: &TestServer, title: &str, sha: &str, anchors: &[&str]) -> String {
    let elements: Vec<Value> = anchors.iter().map(|a| json!({"sourceAnchor": a, "tag": "p"})).collect();
    let out = s
        .ok(
            &s.ann,
            "createChange",
            json!({
                "stageId": s.stage_id, "title": title, "route": "/", "gitSha": sha,
                "capture": {"stroke": [], "bounds": null, "elements": elements},
            }),
        )
        .await;
    out["change"]["shortId"].as_str().unwrap().to_owned()
}

/// A line moved by five inserted above, its file renamed, a line deleted, a file left
/// alone, and an item on a commit this checkout does not have.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_and_wait_give_each_anchor_at_head() {
    let s = TestServer::start().await;
    follow_real_time(&s.clock);
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    git(dir, &["init", "-q", "-b", "main"]);
    std::fs::create_dir(dir.join("demo")).unwrap();
    std::fs::write(dir.join("demo/index.html"), lines("page", 20)).unwrap();
    std::fs::write(dir.join("demo/about.html"), lines("about", 5)).unwrap();
    let filed = commit_all(dir, "first");
    std::fs::write(dir.join("demo/index.html"), lines("new", 5) + &lines("page", 20)).unwrap();
    commit_all(dir, "five lines on top");
    git(dir, &["mv", "demo/index.html", "demo/home.html"]);
    commit_all(dir, "renamed");
    let without_15 = (lines("new", 5) + &lines("page", 20)).replace("<p>page 15</p>\n", "");
    std::fs::write(dir.join("demo/home.html"), without_15).unwrap();
    let removed = commit_all(dir, "line 15 removed");

    let anchors = ["demo/index.html:12", "demo/index.html:15", "demo/about.html:3"];
    let n = file_with_anchors(&s, "Heading too big", &filed[..7], &anchors).await;
    let unknown = file_with_anchors(&s, "Old build", "0123456789abcdef", &["demo/index.html:12"]).await;
    release(&s, &s.ann).await;
    let agent = Agent::new(&s, &s.agent);

    let shown = agent.run_in(dir, &["show", &n, "--json"]).await.ok().json();
    let now: Vec<&Value> = shown["change"]["capture"]["elements"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| &e["sourceAnchorNow"])
        .collect();
    assert_eq!(
        now,
        [
            &json!({"file": "demo/home.html", "line": 17}),
            &json!({"gone": true, "commit": removed}),
            &json!({"file": "demo/about.html", "line": 3}),
        ]
    );
    assert_eq!(shown["change"]["capture"]["elements"][0]["sourceAnchor"], "demo/index.html:12");

    let text = agent.run_in(dir, &["show", &n]).await.ok().stdout;
    let short = &filed[..7];
    for expected in [
        format!("source:    demo/index.html:12 as of {short} → now demo/home.html:17\n"),
        format!(
            "source:    demo/index.html:15 as of {short} → gone (the line was removed in {})\n",
            &removed[..7]
        ),
        format!("source:    demo/about.html:3 as of {short} → unchanged\n"),
    ] {
        assert!(text.contains(&expected), "missing {expected:?} in:\n{text}");
    }

    // A commit the checkout does not have: said so, the anchor shown as filed.
    let old = agent.run_in(dir, &["show", &unknown, "--json"]).await.ok().json();
    let why = "commit 0123456 is not in this checkout (a shallow clone?)";
    assert_eq!(old["change"]["capture"]["elements"][0]["sourceAnchorNow"], json!({"unknown": why}));
    let old = agent.run_in(dir, &["show", &unknown]).await.ok().stdout;
    assert!(
        old.contains(&format!("source:    demo/index.html:12 as of 0123456 (as filed: {why})\n")),
        "{old}"
    );

    // An item sent back as still wrong comes back to `wait --json` with the same.
    agent.run_in(dir, &["claim", "--change-ids", &n, "--claimed-by", "agent-a"]).await.ok();
    agent.run_in(dir, &["done", &n, "--commit", &removed]).await.ok();
    let verdict =
        json!({"changeId": n, "projectId": s.project_id, "verdict": "still_wrong", "body": "Still big"});
    s.ok(&s.ann, "verifyChange", verdict).await;
    let waited =
        agent.run_in(dir, &["wait", "--claimed-by", "agent-a", "--once", "--json"]).await.ok().json();
    let back = &waited["sentBack"][0]["change"];
    assert_eq!(back["shortId"], n.as_str(), "{waited}");
    assert_eq!(
        back["capture"]["elements"][0]["sourceAnchorNow"],
        json!({"file": "demo/home.html", "line": 17})
    );
}

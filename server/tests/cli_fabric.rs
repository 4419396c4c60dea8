//! The agent commands in the forms `pikku fabric changes …` takes, verbatim with
//! `redline` in its place, run as the real binary against a real server: an agent
//! following a Fabric skill text works without reading `--help`.

mod cli_support;
mod common;

use cli_support::*;
use serde_json::json;

/// Every Fabric form, in the order an agent meets them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fabric_forms_work_verbatim() {
    let s = real_time_server().await;
    for title in ["Header too dark", "Footer overlaps", "Logo blurry"] {
        file(&s, &s.ann, title, "/").await;
    }
    release(&s, &s.ann).await;
    let agent = Agent::new(&s, &s.agent);

    // `wait` is `next`; --once wins over --timeout; an interval under 5 s is taken.
    let out =
        agent.run(&["wait", "--stage", "main", "--interval", "2", "--timeout", "5", "--once"]).await.ok();
    assert!(out.stdout.starts_with("3 items to claim:"), "{}", out.stdout);
    let claimed = agent
        .run(&[
            "claim",
            "--change-ids",
            "1,2",
            "--title",
            "Header and footer",
            "--claimed-by",
            "agent-1",
            "--lease-minutes",
            "10",
            "--json",
        ])
        .await
        .ok()
        .json();
    assert_eq!(claimed["group"]["title"], "Header and footer");
    assert_eq!(claimed["changes"].as_array().unwrap().len(), 2);
    let out = agent
        .run(&[
            "next",
            "--claim",
            "--claimed-by",
            "agent-2",
            "--stage",
            "main",
            "--interval",
            "5",
            "--timeout",
            "10",
        ])
        .await
        .ok();
    assert!(out.stdout.starts_with("Claimed 1 item as \"Changes on /\" for agent-2"), "{}", out.stdout);

    let out = agent.run(&["show", "--change-id", "1"]).await.ok();
    assert!(out.stdout.starts_with("#1 Header too dark\n"), "{}", out.stdout);

    let asked = agent
        .run(&[
            "ask",
            "--change-id",
            "1",
            "--question",
            "Which header?",
            "--option",
            "Dark",
            "--option",
            "Light",
            "--author-name",
            "agent-1",
            "--json",
        ])
        .await
        .ok()
        .json();
    assert_eq!(asked["message"]["body"], "Which header?");
    assert_eq!(asked["message"]["authorName"], "agent-1");
    assert_eq!(asked["message"]["type"], "question");
    let image = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(image.path(), png_bytes()).unwrap();
    let image_path = image.path().to_str().unwrap();
    let shot = agent
        .run(&[
            "shot",
            "--change-id",
            "1",
            "--label",
            "Dark",
            "--kind",
            "option",
            "--image",
            image_path,
            "--author-name",
            "agent-1",
            "--json",
        ])
        .await
        .ok()
        .json();
    assert_eq!(shot["message"]["attachments"][0]["kind"], "option");
    let out = agent.run(&["show", "--change-id", "1"]).await.ok();
    assert!(out.stdout.contains("Question (open, waiting for the filer): Which header?"), "{}", out.stdout);
    assert!(out.stdout.contains("1. Dark  (key "), "{}", out.stdout);
    assert!(out.stdout.contains("  image "), "the option's image is saved and named: {}", out.stdout);
    assert!(out.stdout.contains("2. Light  (key "), "{}", out.stdout);

    let replied = agent
        .run(&[
            "reply",
            "--change-id",
            "3",
            "--message",
            "Looking at it",
            "--image",
            image_path,
            "--image-label",
            "Now",
            "--author-name",
            "agent-2",
            "--json",
        ])
        .await
        .ok()
        .json();
    assert_eq!(replied["message"]["attachments"][0]["label"], "Now");
    agent.run(&["reply", "--change-id", "3", "-m", "Short form", "--author", "agent-2"]).await.ok();

    let (repo, _) = git_repo();
    let sha = commit(repo.path(), "fix: #2\n\nChange: #2");
    let done = agent
        .run_in(
            repo.path(),
            &["done", "--change-id", "2", "--note", "Fixed", "--author-name", "agent-1", "--json"],
        )
        .await
        .ok()
        .json();
    assert_eq!(done["change"]["status"], "done");
    assert_eq!(done["change"]["headCommit"], sha.as_str());
    let done = agent
        .run_in(repo.path(), &["done", "--change-id", "3", "--head-commit", &sha, "--author-name", "agent-2"])
        .await
        .ok();
    assert!(done.stdout.starts_with("#3 is done in "), "{}", done.stdout);
    let listed = agent.run(&["list", "--include-done", "--json"]).await.ok().json();
    assert_eq!(listed["changes"].as_array().unwrap().len(), 3);
}

/// An item given both ways, or neither, is a usage error that says so (exit 1: 2 means
/// "no work").
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_given_twice_or_not_at_all_is_a_usage_error() {
    let s = real_time_server().await;
    let agent = Agent::new(&s, &s.agent);
    for args in [
        &["show", "1", "--change-id", "1"][..],
        &["done", "2", "--change-id", "1"],
        &["ask", "--change-id", "1", "Q", "--question", "Q"],
    ] {
        let out = agent.run(args).await;
        assert_eq!(out.code, 1, "{args:?}: {out:?}");
        assert!(out.stderr.contains("cannot be used with"), "{args:?}: {}", out.stderr);
    }
    for args in
        [&["show"][..], &["done", "--note", "x"], &["ask", "--change-id", "1"], &["shot", "--label", "x"]]
    {
        let out = agent.run(args).await;
        assert_eq!(out.code, 1, "{args:?}: {out:?}");
        assert!(out.stderr.contains("required arguments were not provided"), "{args:?}: {}", out.stderr);
    }
    // The help shows the Fabric form.
    let help = agent.run(&["show", "--help"]).await.ok();
    assert!(help.stdout.contains("--change-id <ITEM>"), "{}", help.stdout);
    let help = agent.run(&["--help"]).await.ok();
    assert!(help.stdout.contains("redline ask --change-id N --question Q"), "{}", help.stdout);
}

/// What a page or a filer wrote reaches the agent's terminal without control characters:
/// no escape sequence can retitle, clear or rewrite the terminal.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_prints_no_terminal_control_characters() {
    let s = real_time_server().await;
    let stage_id = s.stage_id.clone();
    s.ok(
        &s.ann,
        "createChange",
        json!({
            "stageId": stage_id,
            "title": "Total \u{1b}]0;owned\u{7} wrong",
            "body": "line\r\u{1b}[2Koverwritten \u{202e}reversed",
            "consoleErrors": ["\u{1b}[31mred\u{1b}[0m"],
            "capture": {"stroke": [], "bounds": null, "elements": [{
                "text": "a\u{9b}31mb", "cssPath": "div\u{1b}[1m", "tag": "div"
            }]}
        }),
    )
    .await;
    release(&s, &s.ann).await;
    let agent = Agent::new(&s, &s.agent);
    let out = agent.run(&["show", "1"]).await.ok();
    assert!(
        !out.stdout.chars().any(|c| (c.is_control() && c != '\n') || ('\u{202a}'..='\u{202e}').contains(&c)),
        "{:?}",
        out.stdout
    );
    assert!(out.stdout.contains("#1 Total ]0;owned wrong"), "{}", out.stdout);
    let listed = agent.run(&["list"]).await.ok();
    assert!(!listed.stdout.contains('\u{1b}'), "{:?}", listed.stdout);
    // JSON keeps the text as filed, escaped.
    let json = agent.run(&["show", "1", "--json"]).await.ok();
    assert!(json.stdout.contains("\\u001b]0;owned"), "{}", json.stdout);
}

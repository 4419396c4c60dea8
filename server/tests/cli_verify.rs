//! The agent's side of checking a fix on the stage, with the real binary against a real
//! server: `list` shows verified items as such; a `still_wrong` verdict wakes
//! `next --claimed-by` of the agent that completed the item, which prints the person's
//! words and saves the after-screenshot; `--claim` takes the item back; `show` prints
//! the verdict in the thread.

mod cli_support;
mod common;

use std::path::Path;
use std::time::Duration;

use cli_support::*;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_still_wrong_verdict_comes_back_to_the_agent_that_did_the_work() {
    let s = real_time_server().await;
    file(&s, &s.ann, "Total is red", "/orders").await;
    file(&s, &s.ann, "Save button is grey", "/orders").await;
    release(&s, &s.ann).await;
    let agent = Agent::new(&s, &s.agent);
    agent.run(&["next", "--claim", "--claimed-by", "agent-a", "--once"]).await.ok();
    for n in ["1", "2"] {
        agent.run(&["done", n, "--commit", "a91c4e2", "--note", "Fixed the colour"]).await.ok();
    }

    // `fixed`: list shows who verified it.
    s.ok(&s.ann, "verifyChange", json!({"changeId": "1", "projectId": s.project_id, "verdict": "fixed"}))
        .await;
    let out = agent.run(&["list", "--all"]).await.ok();
    assert!(
        out.stdout
            .contains("#1    done         Total is red  /orders  (done in a91c4e2, live, verified by Ann)"),
        "{}",
        out.stdout
    );
    assert!(out.stdout.contains("Save button is grey  /orders  (done in a91c4e2, live)\n"), "{}", out.stdout);

    // `still_wrong`'s event wakes the waiting agent, with the words and the shot.
    let mut waiting = agent.spawn(&["next", "--claimed-by", "agent-a", "--timeout", "30"]);
    waiting.wait_until_only_an_event_wakes_it().await;
    let key = s
        .ok(
            &s.ann,
            "uploadShot",
            json!({"projectId": s.project_id, "contentType": "image/png", "imageBase64": PNG_B64}),
        )
        .await["screenshotKey"]
        .clone();
    let verdict = json!({"changeId": "2", "projectId": s.project_id, "verdict": "still_wrong",
                         "body": "Still grey on mobile", "screenshotKey": key});
    s.ok(&s.ann, "verifyChange", verdict).await;
    let (out, seen) = waiting.finish(Duration::from_secs(10)).await;
    assert_eq!(out.code, 0, "{out:?}");
    assert!(seen.iter().any(|l| l.contains("event wakes next")), "woken by the verdict's event: {seen:#?}");
    assert!(
        out.stdout.starts_with(
            "1 item sent back as still wrong, checked on the stage:\n  #2  Save button is grey\n    \
             Ann: Still wrong: Still grey on mobile\n    after-screenshot: "
        ),
        "{}",
        out.stdout
    );
    let path = out.stdout.lines().find_map(|l| l.strip_prefix("    after-screenshot: ")).unwrap();
    assert_eq!(std::fs::read(path).unwrap(), png_bytes());
    assert!(
        out.stdout.contains("\nClaim: redline claim --change-ids 2 --claimed-by agent-a\n"),
        "{}",
        out.stdout
    );

    // Another agent is not told: for it the item is only claimable work.
    let other = agent.run(&["next", "--claimed-by", "agent-b", "--once"]).await.ok();
    assert!(other.stdout.starts_with("1 item to claim:\n  #2"), "{}", other.stdout);
    // show says it was sent back, with the shot, and the thread has the verdict.
    let shown = agent.run(&["show", "2"]).await.ok();
    assert!(
        shown
            .stdout
            .contains(&format!(" by Ann: Still wrong: Still grey on mobile\n  after-screenshot: {path}\n")),
        "{}",
        shown.stdout
    );
    assert!(shown.stdout.contains("Ann (verdict): Still wrong: Still grey on mobile"), "{}", shown.stdout);
    assert!(shown.stdout.contains("Status:   open (claimable now)"), "{}", shown.stdout);

    // The verdict was shown to agent-a: it does not come back as news, and --claim
    // takes the item as the claimable work it now is.
    let out = agent.run(&["next", "--claim", "--claimed-by", "agent-a", "--once", "--json"]).await.ok();
    let json = out.json();
    assert!(json.get("sentBack").is_none(), "shown once: {json}");
    assert_eq!(json["changes"][0]["shortId"], "2");
    assert_eq!(json["changes"][0]["status"], "claimed");
    assert_eq!(json["group"]["claimedBy"], "agent-a");
    let shown = agent.run(&["show", "2"]).await.ok();
    assert!(!shown.stdout.contains("Sent back at"), "{}", shown.stdout);
    assert!(shown.stdout.contains("Ann (verdict): Still wrong"), "{}", shown.stdout);
    // Nothing more comes back: it is being worked on again.
    let out = agent.run(&["next", "--claimed-by", "agent-a", "--once"]).await;
    assert_eq!(out.code, 2, "{out:?}");

    // Done again and sent back again: a wait with --claim that has not shown this
    // verdict takes the item back at once, as sent back.
    agent.run(&["done", "2", "--commit", "a91c4e2"]).await.ok();
    let again = json!({"changeId": "2", "projectId": s.project_id, "verdict": "still_wrong",
                       "body": "Still grey on tablets", "screenshotKey": key});
    s.ok(&s.ann, "verifyChange", again).await;
    let (repo, _) = git_repo();
    let args = ["wait", "--claim", "--worktree", "--claimed-by", "agent-a", "--once", "--json"];
    let out = agent.run_in(repo.path(), &args).await.ok();
    let json = out.json();
    let worktree = json["worktree"].as_str().expect("the changeset's worktree");
    assert!(Path::new(worktree).join(".git").exists(), "{json}");
    assert_eq!(json["sentBack"][0]["change"]["shortId"], "2");
    assert_eq!(json["sentBack"][0]["change"]["status"], "claimed");
    assert_eq!(json["claimed"]["group"]["claimedBy"], "agent-a");
    assert!(json["sentBack"][0]["imagePaths"][key.as_str().unwrap()].is_string(), "{json}");
}

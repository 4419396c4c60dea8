//! The agent CLI over pages (docs/protocol-additions.md, "Lists are summaries"): `list`
//! prints one page and the cursor of the next, `show` reads a long thread's older pages.

mod cli_support;
mod common;

use cli_support::*;
use common::TestServer;
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_pages_and_show_reads_the_whole_thread() {
    let s = TestServer::start_with(|state| {
        state.rate_limit = redline_server::limit::RateLimit { per_second: 1e9, burst: 1e9 };
    })
    .await;
    follow_real_time(&s.clock);
    for i in 0..5 {
        s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": format!("item {i}")})).await;
    }
    release(&s, &s.ann).await;
    let agent = Agent::new(&s, &s.agent);
    let first = agent.run(&["list", "--limit", "2"]).await.ok();
    let lines: Vec<&str> = first.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{}", first.stdout);
    assert_eq!(lines[2], "(2 of 5 shown; the next page: redline list --cursor 2)");
    let last = agent.run(&["list", "--limit", "2", "--cursor", "4"]).await.ok();
    assert_eq!(last.stdout.lines().count(), 1, "{}", last.stdout);
    assert!(last.stdout.starts_with("#5 "), "{}", last.stdout);

    // 250 messages: more than a page of 200, all read.
    for i in 0..250 {
        let reply = json!({"changeId": "#1", "body": format!("message {i}"), "authorName": "a"});
        s.ok(&s.agent, "replyToChange", reply).await;
    }
    let shown = agent.run(&["show", "1"]).await.ok();
    assert!(shown.stdout.contains("Thread (250):"), "{}", shown.stdout);
    assert!(
        shown.stdout.contains("message 0\n") && shown.stdout.contains("message 249\n"),
        "{}",
        shown.stdout
    );
    let json = agent.run(&["show", "1", "--json"]).await.ok().json();
    assert_eq!((json["thread"].as_array().unwrap().len(), &json["messageCount"]), (250, &json!(250)));
    assert_eq!(json["thread"][0]["body"], "message 0");
}

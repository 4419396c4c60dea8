//! Answers bounded however much a project holds, and agents trusted only as far as their
//! tokens go, against a real server (issue #37): a release of a batch and a renewal of a
//! group past 200 items, an answer to a question older than a page of its thread, the
//! shown messages of a long thread, `getStats` over ten years of a large project,
//! acknowledgements into another's lease, wait streams naming another's agent, and
//! routes that would lead off the stage.

mod common;

use common::TestServer;
use redline_protocol::Scope;
use redline_server::admin;
use redline_server::limit::RateLimit;
use serde_json::{Value, json};

/// A server whose tokens may call as fast as a test files.
async fn fast_server() -> TestServer {
    TestServer::start_with(|state| state.rate_limit = RateLimit::per_second(10_000.0)).await
}

/// Files `n` items as Ann (one batch: the manual clock stands still inside the grace
/// window); returns their ids.
async fn file_batch(s: &TestServer, n: usize) -> Vec<String> {
    let mut ids = Vec::new();
    for i in 0..n {
        let out = s
            .ok(
                &s.ann,
                "createChange",
                json!({"stageId": s.stage_id, "title": format!("item {i}"), "route": "/orders"}),
            )
            .await;
        ids.push(out["change"]["changeId"].as_str().unwrap().to_owned());
    }
    ids
}

fn short_ids(changes: &Value) -> Vec<u64> {
    changes.as_array().unwrap().iter().map(|c| c["shortId"].as_str().unwrap().parse().unwrap()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_release_and_a_renewal_answer_at_most_200_items_and_act_on_all() {
    let s = fast_server().await;
    file_batch(&s, 205).await;
    let released = s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    assert_eq!(short_ids(&released["changes"]), (1..=200).collect::<Vec<_>>(), "the batch's oldest 200");
    let counts = s.ok(&s.ann, "countChanges", json!({"projectId": s.project_id})).await;
    assert_eq!((counts["held"].as_u64(), counts["byStatus"]["open"].as_u64()), (Some(0), Some(205)));

    // A group of 200 named items, renewed naming the other 5: 205 in the group.
    let first: Vec<String> = (1..=200).map(|n| n.to_string()).collect();
    let claim = json!({"projectId": s.project_id, "changeIds": first, "claimedBy": "agent-1"});
    let group = s.ok(&s.agent, "claimChanges", claim).await["group"]["groupId"].clone();
    let rest: Vec<String> = (201..=205).map(|n| n.to_string()).collect();
    let renew =
        json!({"projectId": s.project_id, "groupId": group, "changeIds": rest, "claimedBy": "agent-1"});
    let renewed = s.ok(&s.agent, "claimChanges", renew).await;
    assert_eq!(short_ids(&renewed["changes"]), (1..=200).collect::<Vec<_>>(), "the group's oldest 200");
    let listed =
        s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id, "groupId": group, "limit": 1})).await;
    assert_eq!(listed["total"], 205, "every named item joined the group");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_a_long_thread_an_answer_finds_its_question_and_shown_ids_stay_bounded() {
    let s = fast_server().await;
    let id = file_batch(&s, 1).await.remove(0);
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let claim = json!({"projectId": s.project_id, "changeIds": [id], "claimedBy": "agent-1"});
    s.ok(&s.agent, "claimChanges", claim).await;
    let ask = json!({"changeId": id, "question": "Which blue?", "option": ["Navy", "Sky"], "authorName": "agent-1"});
    s.ok(&s.agent, "askChangeQuestion", ask).await;
    // An option shot of a new label, then more replies than a page of the thread.
    let png = base64_png();
    let shot = json!({"changeId": id, "label": "Teal", "kind": "option", "contentType": "png", "imageBase64": png, "authorName": "agent-1"});
    let teal = s.ok(&s.agent, "attachChangeShot", shot).await["key"].clone();
    for i in 0..210 {
        let reply = json!({"changeId": id, "body": format!("note {i}"), "authorName": "agent-1"});
        s.ok(&s.agent, "replyToChange", reply).await;
    }
    let answer = json!({"changeId": id, "chosenOption": teal, "body": ""});
    let answered = s.ok(&s.ann, "answerChangeQuestion", answer).await;
    assert_eq!(answered["message"]["body"], "Teal", "the choice found 211 messages back");
    assert_eq!(answered["message"]["chosenOption"], teal);

    // 212 messages shown, acknowledged in two calls: each answer is the latest 200.
    let page = s.ok(&s.agent, "getChange", json!({"changeId": id, "messageLimit": 200})).await;
    let older = page["olderCursor"].as_str().unwrap().to_owned();
    let mut all: Vec<String> = Vec::new();
    let head =
        s.ok(&s.agent, "getChange", json!({"changeId": id, "before": older, "messageLimit": 200})).await;
    for m in head["thread"].as_array().unwrap().iter().chain(page["thread"].as_array().unwrap()) {
        all.push(m["messageId"].as_str().unwrap().to_owned());
    }
    assert_eq!(all.len(), 213);
    let ack = |ids: &[String]| json!({"changeId": id, "claimedBy": "agent-1", "messageIds": ids});
    s.ok(&s.agent, "acknowledgeChangeMessages", ack(&all[..200])).await;
    let shown =
        s.ok(&s.agent, "acknowledgeChangeMessages", ack(&all[200..])).await["shownMessageIds"].clone();
    let mut latest = all[13..].to_vec();
    latest.sort();
    assert_eq!(shown.as_array().unwrap().len(), 200);
    assert_eq!(shown, json!(latest), "the latest 200 shown, by id");
    // `getChange` says which of its page were shown, and only those.
    let small =
        s.ok(&s.agent, "getChange", json!({"changeId": id, "claimedBy": "agent-1", "messageLimit": 3})).await;
    let mut tail = all[210..].to_vec();
    tail.sort();
    assert_eq!(small["shownMessageIds"], json!(tail));
}

/// A 1×1 PNG, base64.
fn base64_png() -> String {
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==".into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stats_over_ten_years_of_a_large_project_ask_for_fewer_days() {
    let s = TestServer::start().await;
    file_batch(&s, 1).await;
    // 50,000 more items filed 100 days ago, copied from the first in one statement.
    let hundred_days = 100 * 24 * 3_600_000_i64;
    sqlx::query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 50000) \
         INSERT INTO changes (change_id, project_id, short_id, stage_id, title, status, source, filed_by, \
           filer_user_id, created_at, payload_hash) \
         SELECT c.change_id || '-' || n.i, c.project_id, c.short_id + n.i, c.stage_id, c.title, 'done', c.source, \
           c.filed_by, c.filer_user_id, c.created_at - $1, c.payload_hash FROM changes c, n",
    )
    .bind(hundred_days)
    .execute(s.store.pool())
    .await
    .unwrap();
    let body = s
        .err(&s.reader, "getStats", json!({"projectId": s.project_id, "sinceDays": 3650}), 400, "bad_input")
        .await;
    let message = body["message"].as_str().unwrap();
    assert!(message.starts_with("sinceDays: ") && message.contains("more than 50000 items"), "{message}");
    let month = s.ok(&s.reader, "getStats", json!({"projectId": s.project_id, "sinceDays": 30})).await;
    assert_eq!(month["total"]["filed"], 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn acknowledging_into_another_claimants_live_lease_is_refused() {
    let s = TestServer::start().await;
    let id = file_batch(&s, 1).await.remove(0);
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let claim = json!({"projectId": s.project_id, "changeIds": [id], "claimedBy": "agent-1"});
    s.ok(&s.agent, "claimChanges", claim).await;
    let reply = json!({"changeId": id, "body": "looking", "authorName": "agent-1"});
    let message = s.ok(&s.agent, "replyToChange", reply).await["message"]["messageId"].clone();
    let ack = |by: &str| json!({"changeId": id, "claimedBy": by, "messageIds": [message]});
    s.err(&s.agent, "acknowledgeChangeMessages", ack("agent-2"), 409, "lease_lost").await;
    let shown = s.ok(&s.agent, "acknowledgeChangeMessages", ack("agent-1")).await;
    assert_eq!(shown["shownMessageIds"], json!([message]));
    // A token without the write scope cannot acknowledge at all.
    let (status, _) = s.call(&s.reader, "acknowledgeChangeMessages", ack("agent-1")).await;
    assert_eq!(status, 403);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn only_a_write_token_of_the_agents_own_person_marks_it_waiting() {
    let s = TestServer::start().await;
    let id = file_batch(&s, 1).await.remove(0);
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let claim = json!({"projectId": s.project_id, "changeIds": [id], "claimedBy": "agent-1"});
    s.ok(&s.agent, "claimChanges", claim).await;
    let other =
        admin::create_token(&s.store, "demo", &[Scope::Read, Scope::Write], "Olga", None, common::START)
            .await
            .unwrap()
            .token;
    let wait = |token: &str, name: &str| {
        s.http
            .get(format!("{}/events/changes:{}?claimedBy={name}", s.base, s.project_id))
            .bearer_auth(token)
            .header("accept", "text/event-stream")
            .send()
    };
    let mine = wait(&s.agent, "agent-1").await.unwrap();
    assert_eq!(mine.status(), 200);
    let agents = || async {
        let listed = s.ok(&s.reader, "listAgents", json!({"projectId": s.project_id})).await;
        listed["agents"]
            .as_array()
            .unwrap()
            .iter()
            .map(|a| (a["name"].clone(), a["waiting"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(agents().await, [(json!("agent-1"), json!(true))]);
    // A read token, and another person's write token, may not mark agent-1 at all.
    for token in [&s.reader, &other] {
        let refused = wait(token, "agent-1").await.unwrap();
        assert_eq!(refused.status(), 403);
        let body: Value = refused.json().await.unwrap();
        assert!(body["message"].as_str().unwrap().starts_with("claimedBy: "), "{body}");
    }
    assert_eq!(agents().await, [(json!("agent-1"), json!(true))], "agent-1 is still waiting");
    // A name of one's own is fine.
    let own = wait(&other, "agent-olga").await.unwrap();
    assert_eq!(own.status(), 200);
    drop((mine, own));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_route_is_only_a_path_on_the_stage() {
    let s = TestServer::start().await;
    let file = |route: &str| json!({"stageId": s.stage_id, "title": "Menu", "route": route});
    for route in [
        "javascript:alert(1)",
        "https://evil.example/x",
        "//evil.example/x",
        "/\\evil.example",
        "/a b",
        "/a\u{7}",
        "",
    ] {
        let body = s.err(&s.ann, "createChange", file(route), 400, "bad_input").await;
        assert!(body["message"].as_str().unwrap().starts_with("route: "), "{route:?}: {body}");
    }
    for route in ["/", "/orders/7", "/orders?page=2#top", "/a:b"] {
        let out = s.ok(&s.ann, "createChange", file(route)).await;
        assert_eq!(out["change"]["route"], route);
    }
}

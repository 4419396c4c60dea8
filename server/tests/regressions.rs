//! `reportRegression` (ours, docs/protocol-additions.md, "Regressions"): only a verified
//! done item regresses; bad input is refused naming its field.

mod common;

use common::TestServer;
use serde_json::json;

#[tokio::test]
async fn only_a_verified_item_regresses_and_bad_input_names_its_field() {
    let s = TestServer::start().await;
    let filed = json!({"stageId": s.stage_id, "title": "Export is red"});
    let n = s.ok(&s.ann, "createChange", filed).await["change"]["shortId"].as_str().unwrap().to_owned();
    let report = |sha: &str, key: Option<&str>| json!({"changeId": n, "projectId": s.project_id, "gitSha": sha, "body": "gone", "verifiedKey": key});
    s.err(&s.agent, "reportRegression", report("a91c4e2", None), 409, "wrong_status").await;
    s.advance_secs(61);
    s.ok(
        &s.agent,
        "completeChange",
        json!({"changeId": n, "projectId": s.project_id, "headCommit": "a91c4e2"}),
    )
    .await;
    s.err(&s.agent, "reportRegression", report("a91c4e2", None), 409, "wrong_status").await;
    s.ok(&s.ann, "verifyChange", json!({"changeId": n, "projectId": s.project_id, "verdict": "fixed"})).await;

    let (status, body) = s.call(&s.agent, "reportRegression", report("not-a-sha", None)).await;
    assert_eq!((status, body["message"].as_str().unwrap().starts_with("gitSha")), (400, true), "{body}");
    let (status, body) = s.call(&s.agent, "reportRegression", report("a91c4e2", Some("nokey"))).await;
    assert_eq!(status, 404, "{body}");
    s.err(&s.ann, "reportRegression", report("a91c4e2", None), 403, "forbidden").await;

    let out = s.ok(&s.agent, "reportRegression", report("A91C4E2F00", None)).await;
    assert_eq!(out["change"]["status"], "open");
    assert_eq!(out["message"]["type"], "verdict");
    assert_eq!(out["message"]["body"], "Regressed in a91c4e2: gone");
    s.err(&s.agent, "reportRegression", report("a91c4e2", None), 409, "wrong_status").await;
}

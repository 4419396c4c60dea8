//! Checking a fix on the stage (`shared/protocol.md`, "Verify (ours)"): only a `done`
//! item can be verified; `fixed` records who and when; `still_wrong` needs words and
//! reopens the item at once (no hold, no group), so the next claim takes it; both add a
//! `verdict` message (with the after-screenshot as evidence) and send a `verified` event.

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{START, TestServer, connect, data_lines, read_sse};
use serde_json::{Value, json};

fn png() -> String {
    STANDARD.encode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-not-a-real-image-but-the-magic-is-right")
}

impl TestServer {
    /// Files an item, releases it, claims it as `agent-a` and completes it with a
    /// commit; returns its `changeId`.
    async fn done_item(&self, title: &str) -> Value {
        let id = self.ok(&self.ann, "createChange", json!({"stageId": self.stage_id, "title": title})).await
            ["change"]["changeId"]
            .clone();
        self.ok(&self.ann, "releaseChanges", json!({"stageId": self.stage_id})).await;
        let claim = json!({"projectId": self.project_id, "changeIds": [id], "claimedBy": "agent-a"});
        self.ok(&self.agent, "claimChanges", claim).await;
        let done =
            json!({"changeId": id, "headCommit": "a91c4e2", "branch": "main", "authorName": "agent-a"});
        let change = self.ok(&self.agent, "completeChange", done).await["change"].clone();
        assert_eq!((change["status"].as_str(), change["live"].as_bool()), (Some("done"), Some(true)));
        assert_eq!(change["completedBy"], "agent-a");
        id
    }

    async fn upload(&self) -> String {
        let input = json!({"projectId": self.project_id, "contentType": "image/png", "imageBase64": png()});
        self.ok(&self.ann, "uploadShot", input).await["screenshotKey"].as_str().unwrap().to_owned()
    }

    async fn get(&self, id: &Value) -> Value {
        self.ok(&self.agent, "getChange", json!({"changeId": id})).await
    }
}

#[tokio::test]
async fn fixed_records_who_and_when_with_the_after_screenshot() {
    let s = TestServer::start().await;
    let id = s.done_item("total is red").await;
    s.advance_secs(90);
    let key = s.upload().await;
    let out =
        s.ok(&s.ann, "verifyChange", json!({"changeId": id, "verdict": "fixed", "screenshotKey": key})).await;
    let change = &out["change"];
    assert_eq!(change["status"], "done");
    assert_eq!(change["verifiedBy"], "Ann");
    assert_eq!(change["verifiedAt"], json!(START.plus_millis(90_000)));
    assert_eq!((change["live"].as_bool(), change["headCommit"].as_str()), (Some(true), Some("a91c4e2")));
    let message = &out["message"];
    assert_eq!(message["type"], "verdict");
    assert_eq!((message["authorKind"].as_str(), message["authorName"].as_str()), (Some("user"), Some("Ann")));
    assert_eq!(message["body"], "Fixed");
    let attachment = &message["attachments"][0];
    assert_eq!(
        (attachment["key"].as_str(), attachment["kind"].as_str()),
        (Some(key.as_str()), Some("evidence"))
    );
    assert_eq!(attachment["label"], "after");
    assert!(attachment["url"].as_str().is_some_and(|u| u.contains(&format!("/blobs/{key}?exp="))));

    // The read path shows the same, and the image link works.
    let got = s.get(&id).await;
    assert_eq!(got["change"]["verifiedBy"], "Ann");
    let last = got["thread"].as_array().unwrap().last().unwrap().clone();
    assert_eq!((last["type"].as_str(), last["body"].as_str()), (Some("verdict"), Some("Fixed")));
    let url = last["attachments"][0]["url"].as_str().unwrap();
    assert_eq!(s.http.get(url).send().await.unwrap().status(), 200);
    // A verified item is done, so it is not claimable.
    let list = s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id, "pickupOnly": true})).await;
    assert_eq!(list["changes"], json!([]));

    // Words go after the verdict; no screenshot means no attachment.
    let out = s
        .ok(&s.bob, "verifyChange", json!({"changeId": id, "verdict": "fixed", "body": " looks right "}))
        .await;
    assert_eq!(out["message"]["body"], "Fixed: looks right");
    assert_eq!(out["message"]["attachments"], json!([]));
    assert_eq!(out["change"]["verifiedBy"], "Bob");
}

#[tokio::test]
async fn still_wrong_needs_words_and_reopens_the_item_at_once() {
    let s = TestServer::start().await;
    let id = s.done_item("total is red").await;
    for body in [json!(null), json!(""), json!("   ")] {
        let input = json!({"changeId": id, "verdict": "still_wrong", "body": body});
        let err = s.err(&s.ann, "verifyChange", input, 400, "bad_input").await;
        assert!(err["message"].as_str().unwrap().contains("body"), "{err}");
    }
    assert_eq!(s.get(&id).await["change"]["status"], "done", "a refused verdict changes nothing");

    // A fixed verdict first, then a second look finds it wrong after all.
    s.ok(&s.ann, "verifyChange", json!({"changeId": id, "verdict": "fixed"})).await;
    let key = s.upload().await;
    let input = json!({"changeId": id, "verdict": "still_wrong", "body": "Still red on mobile",
                       "screenshotKey": key});
    let out = s.ok(&s.ann, "verifyChange", input).await;
    let change = &out["change"];
    assert_eq!(change["status"], "open");
    for field in ["groupId", "heldUntil", "resolvedAt", "live", "verifiedAt", "verifiedBy"] {
        assert_eq!(change[field], Value::Null, "{field}: {change}");
    }
    assert_eq!(change["held"], false);
    assert_eq!(change["completedBy"], "agent-a", "who did the work is kept");
    assert_eq!(change["headCommit"], "a91c4e2", "the commit stays on record, as on any reopen");
    let message = &out["message"];
    assert_eq!(message["type"], "verdict");
    assert_eq!(message["body"], "Still wrong: Still red on mobile");
    assert_eq!(message["attachments"][0]["kind"], "evidence");

    // Claimable at once, by anyone; the lease of the first claim does not hold it back.
    let list = s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id, "pickupOnly": true})).await;
    assert_eq!(list["changes"][0]["changeId"], id);
    let claim = json!({"projectId": s.project_id, "claimedBy": "agent-b"});
    let claimed = s.ok(&s.agent, "claimChanges", claim).await;
    assert_eq!(claimed["changes"][0]["changeId"], id);
    assert_eq!(claimed["changes"][0]["status"], "claimed");
    // Done again, it can be verified again.
    let done = json!({"changeId": id, "headCommit": "b2c3d4e", "authorName": "agent-b"});
    let change = s.ok(&s.agent, "completeChange", done).await["change"].clone();
    assert_eq!(change["completedBy"], "agent-b");
    s.ok(&s.ann, "verifyChange", json!({"changeId": id, "verdict": "fixed"})).await;
}

#[tokio::test]
async fn completed_by_falls_back_to_the_claimant() {
    let s = TestServer::start().await;
    let id = s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t"})).await["change"]
        ["changeId"]
        .clone();
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let claim = json!({"projectId": s.project_id, "claimedBy": "agent-c"});
    let group = s.ok(&s.agent, "claimChanges", claim).await["group"]["groupId"].clone();
    // No authorName: the write names the group instead.
    let done = json!({"changeId": id, "groupId": group});
    let change = s.ok(&s.agent, "completeChange", done).await["change"].clone();
    assert_eq!(change["completedBy"], "agent-c");
}

#[tokio::test]
async fn only_done_items_can_be_verified() {
    let s = TestServer::start().await;
    let id = s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t"})).await["change"]
        ["changeId"]
        .clone();
    let fixed = json!({"changeId": id, "verdict": "fixed"});
    let wrong = json!({"changeId": id, "verdict": "still_wrong", "body": "no"});
    s.err(&s.ann, "verifyChange", fixed.clone(), 409, "wrong_status").await; // open, held
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    s.ok(&s.agent, "claimChanges", json!({"projectId": s.project_id, "claimedBy": "a"})).await;
    s.err(&s.ann, "verifyChange", wrong.clone(), 409, "wrong_status").await; // claimed
    s.ok(&s.agent, "askChangeQuestion", json!({"changeId": id, "question": "q", "authorName": "a"})).await;
    s.err(&s.ann, "verifyChange", fixed.clone(), 409, "wrong_status").await; // needs_answer
    s.ok(&s.ann, "answerChangeQuestion", json!({"changeId": id, "body": "b"})).await;
    s.err(&s.ann, "verifyChange", fixed.clone(), 409, "wrong_status").await; // in_progress
    s.ok(&s.ann, "setChangeStatus", json!({"changeId": id, "status": "dismissed"})).await;
    s.err(&s.ann, "verifyChange", wrong, 409, "wrong_status").await; // dismissed
    let thread = s.get(&id).await["thread"].clone();
    assert!(thread.as_array().unwrap().iter().all(|m| m["type"] != "verdict"), "{thread}");
}

#[tokio::test]
async fn reopening_a_verified_item_clears_the_verification() {
    let s = TestServer::start().await;
    let id = s.done_item("t").await;
    s.ok(&s.ann, "verifyChange", json!({"changeId": id, "verdict": "fixed"})).await;
    let change =
        s.ok(&s.ann, "setChangeStatus", json!({"changeId": id, "status": "open"})).await["change"].clone();
    assert_eq!((change["verifiedAt"].clone(), change["verifiedBy"].clone()), (Value::Null, Value::Null));
}

#[tokio::test]
async fn verifying_needs_the_file_scope_and_good_input() {
    let s = TestServer::start().await;
    let id = s.done_item("t").await;
    let fixed = json!({"changeId": id, "verdict": "fixed"});
    // An agent token (read + write, no file scope) and a reader may not.
    s.err(&s.agent, "verifyChange", fixed.clone(), 403, "forbidden").await;
    s.err(&s.reader, "verifyChange", fixed.clone(), 403, "forbidden").await;
    s.err("", "verifyChange", fixed.clone(), 401, "unauthorized").await;
    s.err(&s.ann, "verifyChange", json!({"changeId": id, "verdict": "maybe"}), 400, "bad_input").await;
    s.err(&s.ann, "verifyChange", json!({"changeId": id}), 400, "bad_input").await;
    s.err(&s.ann, "verifyChange", json!({"verdict": "fixed"}), 400, "bad_input").await;
    s.err(&s.ann, "verifyChange", json!({"changeId": "nonsense", "verdict": "fixed"}), 400, "bad_input")
        .await;
    s.err(&s.ann, "verifyChange", json!({"changeId": "#99", "verdict": "fixed"}), 404, "not_found").await;
    let other = json!({"changeId": "1", "projectId": "someone-else", "verdict": "fixed"});
    s.err(&s.ann, "verifyChange", other, 403, "forbidden").await;
    let bad_key = json!({"changeId": id, "verdict": "fixed", "screenshotKey": "0123.png"});
    let err = s.err(&s.ann, "verifyChange", bad_key, 404, "not_found").await;
    assert!(err["message"].as_str().unwrap().starts_with("screenshotKey:"), "{err}");
    assert_eq!(s.get(&id).await["change"]["verifiedAt"], Value::Null, "a refused verdict records nothing");
    // `#1` and `1` name the item too; a file-only token may verify.
    let out = s.ok(&s.file_only, "verifyChange", json!({"changeId": "#1", "verdict": "fixed"})).await;
    assert_eq!(out["change"]["verifiedBy"], "Fay");
}

#[tokio::test]
async fn both_verdicts_send_a_verified_event() {
    let s = TestServer::start().await;
    let first = s.done_item("one").await;
    let second = s.done_item("two").await;
    let mut stream = connect(&s, None, false).await;
    let mut text = String::new();
    read_sse(&mut stream, &mut text, |t| t.contains(": connected")).await;
    s.ok(&s.ann, "verifyChange", json!({"changeId": first, "verdict": "fixed"})).await;
    let wrong = json!({"changeId": second, "verdict": "still_wrong", "body": "no"});
    s.ok(&s.ann, "verifyChange", wrong).await;
    read_sse(&mut stream, &mut text, |t| t.matches("\"verified\"").count() == 2).await;
    let events: Vec<Value> =
        data_lines(&text).into_iter().filter(|e| e["changeId"] == first || e["changeId"] == second).collect();
    let seen: Vec<(&Value, &str)> =
        events.iter().map(|e| (&e["changeId"], e["type"].as_str().unwrap())).collect();
    assert_eq!(seen, [(&first, "verified"), (&second, "verified")]);
}

/// Migration 0009 gives items done before it the claimant of their group as
/// `completedBy` (its backfill statement, run again here on an item without one).
#[tokio::test]
async fn migration_0009_backfills_completed_by_from_the_group() {
    let s = TestServer::start().await;
    let id = s.done_item("done before 0009").await;
    let open = s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "open"})).await;
    let pool = s.store.pool();
    sqlx::query("UPDATE changes SET completed_by = NULL").execute(pool).await.unwrap();
    let sql = include_str!("../migrations/sqlite/0009_verified.sql");
    assert_eq!(sql, include_str!("../migrations/postgres/0009_verified.sql"), "one text for both engines");
    let backfill = sql.split(';').map(str::trim).rfind(|s| !s.is_empty()).unwrap();
    assert!(backfill.starts_with("UPDATE changes SET completed_by"), "{backfill}");
    sqlx::query(sqlx::AssertSqlSafe(backfill.to_owned())).execute(pool).await.unwrap();
    assert_eq!(s.get(&id).await["change"]["completedBy"], "agent-a");
    let open_id = &open["change"]["changeId"];
    assert_eq!(s.get(open_id).await["change"]["completedBy"], Value::Null, "only done items");
}

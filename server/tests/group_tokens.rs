//! Group tokens (docs/protocol-additions.md, "A token for one group"): a token limited
//! to one claimed group reads and writes that group's items only, calls nothing else,
//! and ends when the group's lease lapses or it is revoked.

mod common;

use common::TestServer;
use serde_json::{Value, json};

/// Files and releases `n` items (`#1`…`#n`).
async fn released(s: &TestServer, n: usize) {
    for i in 1..=n {
        s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": format!("Item {i}")})).await;
    }
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
}

/// Claims `items` as a group of agent `a` (a 5-minute lease); returns the group.
async fn claim(s: &TestServer, items: &[&str]) -> Value {
    let input = json!({"projectId": s.project_id, "changeIds": items, "claimedBy": "a", "leaseMinutes": 5});
    s.ok(&s.agent, "claimChanges", input).await["group"].clone()
}

async fn group_token(s: &TestServer, group: &Value) -> Value {
    s.ok(&s.agent, "createGroupToken", json!({"projectId": s.project_id, "groupId": group["groupId"]})).await
}

#[tokio::test]
async fn a_group_token_reaches_its_groups_items_only() {
    let s = TestServer::start().await;
    released(&s, 3).await;
    let mine = claim(&s, &["1"]).await;
    let theirs = claim(&s, &["2"]).await;
    let made = group_token(&s, &mine).await;
    let token = made["token"].as_str().unwrap();
    assert_eq!(made["groupId"], mine["groupId"]);
    let lease = |item: &str| {
        json!({"changeId": item, "projectId": s.project_id, "body": "hi", "authorName": "a",
               "groupId": mine["groupId"], "fence": mine["fence"]})
    };

    // Its own item: read and written.
    s.ok(token, "getChange", json!({"changeId": "1"})).await;
    s.ok(token, "replyToChange", lease("1")).await;
    s.ok(token, "getSession", json!({})).await;
    let listed =
        s.ok(token, "listChanges", json!({"projectId": s.project_id, "groupId": mine["groupId"]})).await;
    assert_eq!(listed["changes"].as_array().unwrap().len(), 1);

    // Another group's item, or one in no group: refused, and nothing written.
    for other in ["2", "3"] {
        let (status, body) = s.call(token, "getChange", json!({"changeId": other})).await;
        assert_eq!(status, 403, "{body}");
        assert!(body["message"].as_str().unwrap().contains("limited to the items of group"), "{body}");
        assert_eq!(s.call(token, "replyToChange", lease(other)).await.0, 403);
    }
    let under_theirs =
        json!({"changeId": "2", "body": "hi", "authorName": "a", "groupId": theirs["groupId"]});
    assert_eq!(s.call(token, "replyToChange", under_theirs).await.0, 400, "groupId must be its own");
    let thread = s.ok(&s.agent, "getChange", json!({"changeId": "2"})).await["thread"].clone();
    assert!(thread.as_array().unwrap().iter().all(|m| m["body"] != "hi"), "{thread}");

    // Nothing else: other RPCs, lists beyond its group, another token, the event stream.
    for (rpc, input, refused) in [
        ("listChanges", json!({"projectId": s.project_id}), 400),
        ("claimChanges", json!({"projectId": s.project_id, "changeIds": ["3"], "claimedBy": "a"}), 403),
        ("createGroupToken", json!({"projectId": s.project_id, "groupId": mine["groupId"]}), 403),
        ("countChanges", json!({"projectId": s.project_id}), 403),
    ] {
        let (status, body) = s.call(token, rpc, input).await;
        assert_eq!(status, refused, "{rpc}: {body}");
    }
    let stream = s
        .http
        .get(format!("{}/events/changes:{}", s.base, s.project_id))
        .bearer_auth(token)
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 403);
}

#[tokio::test]
async fn a_group_token_ends_with_its_lease_or_when_revoked() {
    let s = TestServer::start().await;
    released(&s, 2).await;
    let first = claim(&s, &["1"]).await;
    let revoked = group_token(&s, &first).await;
    let lapsing = group_token(&s, &first).await;
    let read = json!({"changeId": "1"});
    s.ok(revoked["token"].as_str().unwrap(), "getChange", read.clone()).await;
    let revoke = json!({"projectId": s.project_id, "tokenId": revoked["tokenId"]});
    s.ok(&s.agent, "revokeGroupToken", revoke.clone()).await;
    s.ok(&s.agent, "revokeGroupToken", revoke).await;
    // A check is reused for a second: past it, the revocation is seen.
    s.advance_secs(2);
    assert_eq!(s.call(revoked["token"].as_str().unwrap(), "getChange", read.clone()).await.0, 401);
    s.ok(lapsing["token"].as_str().unwrap(), "getChange", read.clone()).await;
    let person = json!({"projectId": s.project_id, "tokenId": "no-such-token"});
    assert_eq!(s.call(&s.agent, "revokeGroupToken", person).await.0, 404);

    // The lease lapses: the token ends, and no new one is made for the group.
    s.advance_secs(5 * 60 + 1);
    let (status, body) = s.call(lapsing["token"].as_str().unwrap(), "getChange", read).await;
    assert_eq!(status, 401, "{body}");
    assert!(body.to_string().contains("group has ended"), "{body}");
    let again = json!({"projectId": s.project_id, "groupId": first["groupId"]});
    assert_eq!(s.call(&s.agent, "createGroupToken", again).await.0, 409);
}

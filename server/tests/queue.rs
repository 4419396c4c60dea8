//! The queue's rules over a real listener: filing and the grace window, edits while
//! held, lists, claims and leases, the thread, completion and statuses.

mod common;

use common::{START, TestServer, connect, data_lines, read_sse};
use redline_protocol::Scope;
use redline_server::admin;
use serde_json::{Value, json};

impl TestServer {
    async fn file(&self, token: &str, title: &str) -> Value {
        self.ok(token, "createChange", json!({"stageId": self.stage_id, "title": title})).await["change"]
            .clone()
    }

    async fn list(&self, extra: Value) -> Vec<Value> {
        let mut data = json!({"projectId": self.project_id});
        data.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        self.ok(&self.agent, "listChanges", data).await["changes"].as_array().unwrap().clone()
    }

    async fn claim(&self, who: &str, ids: &[&Value]) -> (u16, Value) {
        let ids: Vec<&Value> = ids.iter().map(|c| &c["changeId"]).collect();
        self.call(
            &self.agent,
            "claimChanges",
            json!({"projectId": self.project_id, "changeIds": ids, "claimedBy": who}),
        )
        .await
    }

    async fn get(&self, id: &Value) -> Value {
        self.ok(&self.agent, "getChange", json!({"changeId": id})).await
    }

    /// Files an item and lets its hold end.
    async fn file_released(&self, title: &str) -> Value {
        let change = self.file(&self.ann, title).await;
        self.ok(&self.ann, "releaseChanges", json!({"stageId": self.stage_id})).await;
        change
    }
}

fn ts(seconds_after_start: i64) -> String {
    START.plus_seconds(seconds_after_start).to_string()
}

#[tokio::test]
async fn filing_holds_the_item_and_stamps_the_stage_build() {
    let s = TestServer::start().await;
    let c = s
        .ok(
            &s.ann,
            "createChange",
            json!({
                "stageId": s.stage_id, "title": "  Button is misaligned ", "body": "see the footer",
                "route": "/orders", "locale": "en-GB", "viewport": {"width": 1280, "height": 720},
                "capture": {"stroke": [{"x": 1, "y": 2}], "bounds": null, "elements": [{"testId": "save", "tag": "button"}],
                            "devicePixelRatio": 2, "scroll": {"x": 0, "y": 10}},
                "consoleErrors": ["TypeError: x is undefined"]
            }),
        )
        .await["change"]
        .clone();
    assert_eq!(c["shortId"], "1");
    assert_eq!(c["title"], "Button is misaligned");
    assert_eq!(c["status"], "open");
    assert_eq!((c["held"].as_bool(), c["heldUntil"].as_str()), (Some(true), Some(ts(60).as_str())));
    assert_eq!(
        (c["gitSha"].as_str(), c["source"].as_str(), c["filedBy"].as_str()),
        (Some("a91c4e2"), Some("extension"), Some("Ann"))
    );
    assert_eq!(c["capture"]["elements"][0]["testId"], "save");
    assert_eq!(c["capture"]["devicePixelRatio"], 2.0);
    assert_eq!(c["consoleErrors"], json!(["TypeError: x is undefined"]));
    assert_eq!(c["groupId"], Value::Null);
    assert_eq!(c["screenshotUrl"], Value::Null);
    assert_eq!(s.file(&s.ann, "second").await["shortId"], "2");
    // The page's own build wins over the stage's.
    let own =
        s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t", "gitSha": "fff"})).await;
    assert_eq!(own["change"]["gitSha"], "fff");
    // `source` (ours) says where the item was filed from; it is stored, not only echoed.
    let cli =
        s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t", "source": "cli"})).await;
    assert_eq!(cli["change"]["source"], "cli");
    let got = s.ok(&s.agent, "getChange", json!({"changeId": cli["change"]["changeId"]})).await;
    assert_eq!(got["change"]["source"], "cli");
}

/// What the page gave at filing is stored apart from the item's row (which claims and
/// status changes rewrite) and is in every answer that shows the one item; answers that
/// list items carry summaries with its counts instead (tests/lists.rs).
#[tokio::test]
async fn the_capture_and_console_errors_are_in_every_answer_that_shows_the_item() {
    let s = TestServer::start().await;
    let capture = json!({"stroke": [{"x": 1.0, "y": 2.0}], "bounds": null,
        "elements": [{"testId": "save", "tag": "button", "text": "Save"}], "devicePixelRatio": 2.0});
    let errors = json!(["TypeError: x is undefined"]);
    let filed = |title: &'static str| {
        let (capture, errors) = (capture.clone(), errors.clone());
        let s = &s;
        async move {
            s.ok(
                &s.ann,
                "createChange",
                json!({"stageId": s.stage_id, "title": title, "capture": capture, "consoleErrors": errors}),
            )
            .await["change"]
                .clone()
        }
    };
    let (first, second) = (filed("first").await, filed("second").await);
    let bare = s.file(&s.ann, "bare").await;
    let sent = |c: &Value| (c["capture"].clone(), c["consoleErrors"].clone());
    let counted = |c: &Value| (c["elementCount"].clone(), c["consoleErrorCount"].clone());
    let summaries = |answer: &Value| -> Vec<_> {
        let changes = answer["changes"].as_array().unwrap();
        assert!(changes.iter().all(|c| sent(c) == (Value::Null, json!([]))), "{answer}");
        changes.iter().map(counted).collect()
    };
    assert_eq!(first["capture"]["elements"][0]["text"], "Save");
    assert_eq!(first["consoleErrors"], errors);
    assert_eq!(sent(&bare), (Value::Null, json!([])));

    let released = s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    assert_eq!(summaries(&released), [(json!(1), json!(1)), (json!(1), json!(1)), (json!(0), json!(0))]);
    let listed = s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id})).await;
    assert_eq!(summaries(&listed), summaries(&released));

    let claim = |ids: Value| json!({"projectId": s.project_id, "changeIds": ids, "claimedBy": "agent-a"});
    let claimed = s.ok(&s.agent, "claimChanges", claim(json!([first["changeId"], bare["changeId"]]))).await;
    assert_eq!(summaries(&claimed), [(json!(1), json!(1)), (json!(0), json!(0))]);
    let group_id =
        s.ok(&s.agent, "getChange", json!({"changeId": first["changeId"]})).await["change"]["groupId"]
            .clone();
    let renewed = s
        .ok(
            &s.agent,
            "claimChanges",
            json!({"projectId": s.project_id, "groupId": group_id, "claimedBy": "agent-a"}),
        )
        .await;
    assert_eq!(summaries(&renewed), summaries(&claimed));
    let done = json!({"changeId": first["changeId"], "authorName": "agent-a", "groupId": group_id});
    let done = s.ok(&s.agent, "completeChange", done).await;
    assert_eq!(sent(&done["change"]), sent(&first));
    let got = s.ok(&s.agent, "getChange", json!({"changeId": second["changeId"]})).await;
    assert_eq!(sent(&got["change"]), sent(&first));
}

#[tokio::test]
async fn filing_is_idempotent_on_change_id() {
    let s = TestServer::start().await;
    let id = "3f2504e0-4f89-11d3-9a0c-0305e82c3301";
    let input = json!({"stageId": s.stage_id, "title": "once", "changeId": id});
    let first = s.ok(&s.ann, "createChange", input.clone()).await;
    let again = s.ok(&s.ann, "createChange", input).await;
    assert_eq!(first, again);
    assert_eq!(first["change"]["changeId"], id);
    assert_eq!(s.list(json!({})).await.len(), 1);
    s.err(
        &s.ann,
        "createChange",
        json!({"stageId": s.stage_id, "title": "other", "changeId": id}),
        409,
        "id_reused",
    )
    .await;
}

/// Retries racing their original (the extension retries on a timeout) file once, and
/// every one of them answers the same item.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn concurrent_filings_of_one_change_id_file_once() {
    let s = TestServer::start().await;
    let input =
        json!({"stageId": s.stage_id, "title": "once", "changeId": "9b2f1c3e-0d6a-4c8e-8f00-1a2b3c4d5e6f"});
    let filings = (0..20).map(|_| s.ok(&s.ann, "createChange", input.clone()));
    let answers = futures_util::future::join_all(filings).await;
    assert!(answers.iter().all(|a| *a == answers[0]), "{answers:?}");
    assert_eq!(s.list(json!({})).await.len(), 1);
}

#[tokio::test]
async fn filing_validates_its_input() {
    let s = TestServer::start().await;
    let cases = [
        (json!({"stageId": s.stage_id, "title": "x".repeat(201)}), "title:"),
        (json!({"stageId": s.stage_id, "title": " "}), "title:"),
        (json!({"stageId": s.stage_id, "title": "t", "changeId": "nope"}), "changeId:"),
        (
            json!({"stageId": s.stage_id, "title": "t", "capture": {"elements": vec![json!({"tag": "a"}); 501]}}),
            "capture.elements:",
        ),
        (
            json!({"stageId": s.stage_id, "title": "t", "capture": {"stroke": vec![json!({"x": 0, "y": 0}); 10_001]}}),
            "capture.stroke:",
        ),
        (json!({"stageId": s.stage_id, "title": 5}), "title:"),
    ];
    for (input, field) in cases {
        let body = s.err(&s.ann, "createChange", input, 400, "bad_input").await;
        assert!(body["message"].as_str().unwrap().starts_with(field), "{body}");
    }
    s.err(&s.ann, "createChange", json!({"stageId": "elsewhere", "title": "t"}), 404, "not_found").await;
    // A key that names no upload is not there, like an unknown stage: 404 naming the field.
    let key =
        json!({"stageId": s.stage_id, "title": "t", "screenshotKey": "0123456789abcdef0123456789abcdef.png"});
    let body = s.err(&s.ann, "createChange", key, 404, "not_found").await;
    assert!(body["message"].as_str().unwrap().starts_with("screenshotKey:"), "{body}");
    s.err(&s.reader, "createChange", json!({"stageId": s.stage_id, "title": "t"}), 403, "forbidden").await;
}

#[tokio::test]
async fn the_grace_window_slides_per_filer_and_stage() {
    let s = TestServer::start().await;
    let a = s.file(&s.ann, "a").await;
    s.advance_secs(40);
    let b = s.file(&s.ann, "b").await;
    let bob = s.file(&s.bob, "bob's").await;
    s.advance_secs(30); // 70 s after a: a would have been released without b.
    let held = |list: &[Value], c: &Value| {
        list.iter().find(|x| x["changeId"] == c["changeId"]).unwrap()["held"].clone()
    };
    let list = s.list(json!({})).await;
    assert_eq!((held(&list, &a), held(&list, &b)), (json!(true), json!(true)));
    assert_eq!(list[0]["heldUntil"], ts(100));
    assert!(s.list(json!({"pickupOnly": true})).await.is_empty());
    s.advance_secs(31); // 101 s: everything released.
    let list = s.list(json!({})).await;
    assert!(list.iter().all(|c| c["held"] == false), "{list:?}");
    assert_eq!(s.list(json!({"pickupOnly": true})).await.len(), 3);
    let _ = bob;
}

#[tokio::test]
async fn only_the_filer_edits_or_withdraws_while_held() {
    let s = TestServer::start().await;
    let c = s.file(&s.ann, "typo").await;
    let id = c["changeId"].clone();
    let updated =
        s.ok(&s.ann, "updateChange", json!({"changeId": id, "title": "fixed", "body": "more"})).await;
    assert_eq!(
        (updated["change"]["title"].as_str(), updated["change"]["body"].as_str()),
        (Some("fixed"), Some("more"))
    );
    s.err(&s.bob, "updateChange", json!({"changeId": id, "title": "mine"}), 409, "not_filer").await;
    s.err(&s.bob, "withdrawChange", json!({"changeId": id}), 409, "not_filer").await;
    let w = s.ok(&s.ann, "withdrawChange", json!({"changeId": "#1", "projectId": s.project_id})).await;
    assert_eq!(
        (w["change"]["status"].as_str(), w["change"]["held"].as_bool()),
        (Some("dismissed"), Some(false))
    );
    assert!(s.list(json!({})).await.is_empty(), "withdrawn items are hidden");
    assert_eq!(s.list(json!({"includeDone": true})).await.len(), 1);

    let late = s.file(&s.ann, "late").await;
    s.advance_secs(61);
    s.err(&s.ann, "updateChange", json!({"changeId": late["changeId"], "title": "x"}), 409, "not_held").await;
    s.err(&s.ann, "withdrawChange", json!({"changeId": late["changeId"]}), 409, "not_held").await;
}

#[tokio::test]
async fn release_ends_only_the_callers_hold() {
    let s = TestServer::start().await;
    s.file(&s.ann, "a1").await;
    s.file(&s.ann, "a2").await;
    s.file(&s.bob, "b1").await;
    let released = s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let titles: Vec<&str> =
        released["changes"].as_array().unwrap().iter().map(|c| c["title"].as_str().unwrap()).collect();
    assert_eq!(titles, ["a1", "a2"]);
    assert!(released["changes"].as_array().unwrap().iter().all(|c| c["held"] == false));
    let again = s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    assert_eq!(again, json!({"changes": []}));
    let pickup: Vec<String> =
        s.list(json!({"pickupOnly": true})).await.iter().map(|c| c["title"].to_string()).collect();
    assert_eq!(pickup, ["\"a1\"", "\"a2\""]);
}

#[tokio::test]
async fn lists_filter_and_get_finds_by_short_id() {
    let s = TestServer::start().await;
    let a = s.file_released("a").await;
    s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "b", "route": "/b"})).await;
    assert_eq!(s.list(json!({"route": "/b"})).await.len(), 1);
    assert_eq!(s.list(json!({"limit": 1})).await.len(), 1);
    assert_eq!(s.list(json!({"status": ["open"]})).await.len(), 2);
    assert!(s.list(json!({"status": ["done"]})).await.is_empty());
    assert_eq!(s.list(json!({"stageId": s.stage_id})).await.len(), 2);
    s.err(&s.agent, "listChanges", json!({"projectId": s.project_id, "limit": 201}), 400, "bad_input").await;
    s.err(&s.agent, "listChanges", json!({"projectId": "other"}), 403, "forbidden").await;

    for r in ["#1", "1", a["changeId"].as_str().unwrap()] {
        let got = s.ok(&s.agent, "getChange", json!({"changeId": r, "projectId": s.project_id})).await;
        assert_eq!(got["change"]["changeId"], a["changeId"]);
        assert_eq!(got["thread"], json!([]));
        assert_eq!(got["stageUrl"], "https://demo.example.com");
    }
    s.err(&s.agent, "getChange", json!({"changeId": "#99"}), 404, "not_found").await;
    s.err(&s.agent, "getChange", json!({"changeId": "abc"}), 400, "bad_input").await;
    s.err(&s.agent, "getChange", json!({"changeId": "#1", "projectId": "other"}), 403, "forbidden").await;
}

#[tokio::test]
async fn claims_take_claimable_items_and_explain_the_rest() {
    let s = TestServer::start().await;
    let held = s.file(&s.ann, "held").await;
    let body = s
        .err(
            &s.agent,
            "claimChanges",
            json!({"projectId": s.project_id, "changeIds": [held["changeId"], "#42"], "claimedBy": "a"}),
            409,
            "not_claimable",
        )
        .await;
    assert_eq!(body["items"][0]["reason"], "not_found");
    assert_eq!(body["items"][0]["shortId"], "42");
    assert_eq!(body["items"][1]["reason"], "held");
    assert_eq!(body["items"][1]["claimableAt"], ts(60));

    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let (status, out) = s.claim("agent-a", &[&held]).await;
    assert_eq!(status, 200, "{out}");
    let group = &out["group"];
    assert_eq!((group["claimedBy"].as_str(), group["fence"].as_u64()), (Some("agent-a"), Some(1)));
    assert_eq!(group["claimExpiresAt"], ts(30 * 60));
    assert_eq!(group["title"], "held");
    assert_eq!(out["changes"][0]["status"], "claimed");
    assert_eq!(out["changes"][0]["groupId"], group["groupId"]);
    let listed = s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id})).await;
    assert_eq!(listed["groups"][0]["groupId"], group["groupId"]);

    // Leased: another agent (or the same one) cannot claim it again.
    let (status, body) = s.claim("agent-b", &[&held]).await;
    assert_eq!(status, 409);
    assert_eq!(body["items"][0]["reason"], "leased");
    assert_eq!(body["items"][0]["claimedBy"], "agent-a");
    assert_eq!(body["items"][0]["claimableAt"], ts(30 * 60));
    assert!(s.list(json!({"pickupOnly": true})).await.is_empty());

    // A lapsed lease makes it claimable again, status unchanged, with a fresh fence.
    s.advance_secs(30 * 60);
    assert_eq!(s.list(json!({"pickupOnly": true})).await[0]["status"], "claimed");
    let (status, out_b) = s.claim("agent-b", &[&held]).await;
    assert_eq!(status, 200, "{out_b}");
    assert_eq!(out_b["group"]["fence"], 2);
    // The old claimant's write is refused.
    s.err(
        &s.agent,
        "replyToChange",
        json!({"changeId": held["changeId"], "body": "hi", "authorName": "agent-a", "groupId": group["groupId"], "fence": 1}),
        409,
        "lease_lost",
    )
    .await;
    s.err(
        &s.agent,
        "claimChanges",
        json!({"projectId": s.project_id, "groupId": group["groupId"], "claimedBy": "agent-a"}),
        409,
        "lease_lost",
    )
    .await;
}

#[tokio::test]
async fn claiming_without_names_takes_every_claimable_item() {
    let s = TestServer::start().await;
    for i in 0..3 {
        s.file(&s.ann, &format!("item {i}")).await;
    }
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    s.file(&s.bob, "still held").await;
    let out = s
        .ok(&s.agent, "claimChanges", json!({"projectId": s.project_id, "claimedBy": "a", "title": "batch"}))
        .await;
    assert_eq!(out["changes"].as_array().unwrap().len(), 3);
    assert_eq!(out["group"]["title"], "batch");
    let body = s
        .err(
            &s.agent,
            "claimChanges",
            json!({"projectId": s.project_id, "claimedBy": "a"}),
            409,
            "not_claimable",
        )
        .await;
    assert_eq!(body["items"], json!([]));
    s.err(&s.ann, "claimChanges", json!({"projectId": s.project_id, "claimedBy": "a"}), 403, "forbidden")
        .await;
}

#[tokio::test]
async fn renewing_extends_the_lease_and_keeps_the_fence() {
    let s = TestServer::start().await;
    let c = s.file_released("x").await;
    let (_, out) = s.claim("a", &[&c]).await;
    let group_id = out["group"]["groupId"].clone();
    s.advance_secs(20 * 60);
    let renewed = s
        .ok(
            &s.agent,
            "claimChanges",
            json!({"projectId": s.project_id, "groupId": group_id, "claimedBy": "a", "leaseMinutes": 10}),
        )
        .await;
    assert_eq!(renewed["group"]["claimExpiresAt"], ts(30 * 60));
    assert_eq!(renewed["group"]["fence"], out["group"]["fence"]);
    assert_eq!(renewed["changes"][0]["changeId"], c["changeId"]);
    s.err(
        &s.agent,
        "claimChanges",
        json!({"projectId": s.project_id, "groupId": group_id, "claimedBy": "b"}),
        409,
        "lease_lost",
    )
    .await;
}

/// "with `changeIds` too, it renews and adds those of them that are claimable to that
/// group": the items another claimant holds, or that are held or done, stay where they are.
#[tokio::test]
async fn renewing_with_items_adds_the_claimable_ones_to_the_group() {
    let s = TestServer::start().await;
    let first = s.file_released("first").await;
    let (_, out) = s.claim("a", &[&first]).await;
    let group_id = out["group"]["groupId"].clone();
    let free = s.file_released("free").await;
    let theirs = s.file_released("theirs").await;
    let (_, theirs_claim) = s.claim("b", &[&theirs]).await;
    s.advance_secs(60);
    let held = s.file(&s.bob, "held").await;
    let mut events = connect(&s, Some("0"), false).await;
    let ids = [&free["changeId"], &theirs["changeId"], &held["changeId"], &first["changeId"]];
    let renewed = s
        .ok(
            &s.agent,
            "claimChanges",
            json!({"projectId": s.project_id, "groupId": group_id, "changeIds": ids, "claimedBy": "a"}),
        )
        .await;
    assert_eq!(renewed["group"]["fence"], out["group"]["fence"], "the fence stays: writes keep matching");
    assert_eq!(renewed["group"]["claimExpiresAt"], ts(60 + 30 * 60));
    let mut in_group: Vec<&str> =
        renewed["changes"].as_array().unwrap().iter().map(|c| c["title"].as_str().unwrap()).collect();
    in_group.sort();
    assert_eq!(in_group, ["first", "free"]);
    assert_eq!(s.get(&free["changeId"]).await["change"]["status"], "claimed");
    assert_eq!(s.get(&theirs["changeId"]).await["change"]["groupId"], theirs_claim["group"]["groupId"]);
    assert_eq!(s.get(&held["changeId"]).await["change"]["groupId"], Value::Null);
    // The added item's claim is an event, as any claim's.
    let mut text = String::new();
    let free_id = free["changeId"].as_str().unwrap().to_owned();
    read_sse(&mut events, &mut text, |t| {
        data_lines(t).iter().filter(|e| e["type"] == "claimed").any(|e| e["changeId"] == free_id.as_str())
    })
    .await;
    // Renewing with only items that cannot be added still renews.
    let again = s
        .ok(
            &s.agent,
            "claimChanges",
            json!({"projectId": s.project_id, "groupId": group_id, "changeIds": [theirs["changeId"]], "claimedBy": "a"}),
        )
        .await;
    assert_eq!(again["changes"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn concurrent_claims_of_one_item_give_it_to_exactly_one() {
    let s = TestServer::start().await;
    let c = s.file_released("contended").await;
    let claims = (0..50).map(|i| {
        let (s, c) = (&s, &c);
        async move { s.claim(&format!("agent-{i}"), &[c]).await.0 }
    });
    let statuses = futures_util::future::join_all(claims).await;
    assert_eq!(statuses.iter().filter(|&&st| st == 200).count(), 1, "{statuses:?}");
    assert!(statuses.iter().all(|&st| st == 200 || st == 409), "{statuses:?}");
}

/// 50 agents at once, each naming three of 25 items, the sets overlapping: every item
/// ends in exactly one live group, the one whose claim answered it.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn fifty_agents_claiming_overlapping_sets_never_share_an_item() {
    let s = TestServer::start().await;
    let mut items = Vec::new();
    for i in 0..25 {
        items.push(s.file(&s.ann, &format!("item {i}")).await);
    }
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let claims = (0..50).map(|i| {
        let (s, items) = (&s, &items);
        async move {
            let set = [&items[i % 25], &items[(i + 3) % 25], &items[(i + 11) % 25]];
            (format!("agent-{i}"), s.claim(&format!("agent-{i}"), &set).await)
        }
    });
    let mut group_of = std::collections::HashMap::new();
    for (agent, (status, body)) in futures_util::future::join_all(claims).await {
        if status == 409 {
            assert_eq!(body["code"], "not_claimable", "{body}");
            continue;
        }
        assert_eq!((status, body["group"]["claimedBy"].as_str()), (200, Some(agent.as_str())), "{body}");
        let group_id = body["group"]["groupId"].as_str().unwrap().to_owned();
        for change in body["changes"].as_array().unwrap() {
            assert_eq!(change["groupId"], group_id.as_str());
            let id = change["changeId"].as_str().unwrap().to_owned();
            let earlier = group_of.insert(id, group_id.clone());
            assert!(
                earlier.is_none(),
                "{} was claimed twice: {earlier:?} and {group_id}",
                change["changeId"]
            );
        }
    }
    // Every item was named by some agent, so each is now in the one group that took it.
    assert_eq!(group_of.len(), 25);
    for change in s.list(json!({"limit": 200})).await {
        assert_eq!(change["status"], "claimed");
        assert_eq!(
            change["groupId"].as_str(),
            group_of.get(change["changeId"].as_str().unwrap()).map(String::as_str)
        );
    }
}

/// Claims arriving together are taken in one write: each still gets a group of its
/// own with its own fence, and each item taken one `claimed` event, numbered without a
/// gap.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn claims_taken_together_each_get_their_own_group_fence_and_events() {
    let s = TestServer::start().await;
    let mut items = Vec::new();
    for i in 0..20 {
        items.push(s.file(&s.ann, &format!("item {i}")).await);
    }
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let mut stream = connect(&s, None, false).await;
    let mut text = String::new();
    read_sse(&mut stream, &mut text, |t| t.contains(": connected")).await;

    let claims = items.iter().enumerate().map(|(i, item)| {
        let s = &s;
        async move { s.claim(&format!("agent-{i}"), &[item]).await }
    });
    let answers = futures_util::future::join_all(claims).await;
    let mut fences = Vec::new();
    for (i, (status, body)) in answers.iter().enumerate() {
        assert_eq!(*status, 200, "{body}");
        assert_eq!(body["group"]["claimedBy"], format!("agent-{i}"));
        assert_eq!(body["group"]["title"], format!("item {i}"));
        assert_eq!(body["changes"][0]["changeId"], items[i]["changeId"]);
        assert_eq!(body["changes"][0]["groupId"], body["group"]["groupId"]);
        fences.push(body["group"]["fence"].as_u64().unwrap());
    }
    fences.sort_unstable();
    assert_eq!(fences, (1..=20).collect::<Vec<u64>>());

    read_sse(&mut stream, &mut text, |t| t.matches("\"claimed\"").count() == 20).await;
    let claimed: Vec<Value> = data_lines(&text).into_iter().filter(|e| e["type"] == "claimed").collect();
    let seqs: Vec<i64> = claimed.iter().map(|e| e["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[1] == w[0] + 1), "{seqs:?}");
    let mut ids: Vec<&str> = claimed.iter().map(|e| e["changeId"].as_str().unwrap()).collect();
    ids.sort_unstable();
    let mut filed: Vec<&str> = items.iter().map(|c| c["changeId"].as_str().unwrap()).collect();
    filed.sort_unstable();
    assert_eq!(ids, filed);
}

#[tokio::test]
async fn writes_into_another_claimants_live_lease_are_refused() {
    let s = TestServer::start().await;
    let c = s.file_released("x").await;
    s.claim("agent-a", &[&c]).await;
    let reply = |author: &str| json!({"changeId": c["changeId"], "body": "on it", "authorName": author});
    s.err(&s.agent, "replyToChange", reply("agent-b"), 409, "lease_lost").await;
    s.ok(&s.agent, "replyToChange", reply("agent-a")).await;
    s.err(&s.agent, "completeChange", json!({"changeId": c["changeId"]}), 409, "lease_lost").await;
}

#[tokio::test]
async fn the_thread_asks_answers_and_completes() {
    let s = TestServer::start().await;
    let c = s.file_released("which colour?").await;
    let (_, claimed) = s.claim("agent-a", &[&c]).await;
    let (group_id, fence) = (claimed["group"]["groupId"].clone(), claimed["group"]["fence"].clone());
    let id = c["changeId"].clone();

    s.err(&s.ann, "answerChangeQuestion", json!({"changeId": id, "body": "?"}), 409, "wrong_status").await;
    let too_many = json!({"changeId": id, "question": "q", "authorName": "agent-a", "option": ["1","2","3","4","5","6","7"]});
    s.err(&s.agent, "askChangeQuestion", too_many, 400, "bad_input").await;
    let asked = s
        .ok(
            &s.agent,
            "askChangeQuestion",
            json!({"changeId": id, "question": "Red or blue?", "authorName": "agent-a",
            "option": ["Red", "Blue"], "groupId": group_id, "fence": fence}),
        )
        .await["message"]
        .clone();
    assert_eq!(
        (asked["authorKind"].as_str(), asked["authorName"].as_str()),
        (Some("agent"), Some("agent-a"))
    );
    let options = asked["attachments"].as_array().unwrap();
    assert_eq!(options.len(), 2);
    assert!(options.iter().all(|o| o["kind"] == "option" && o["url"].is_null()));
    let got = s.ok(&s.agent, "getChange", json!({"changeId": id})).await;
    assert_eq!(got["change"]["status"], "needs_answer");

    s.err(
        &s.ann,
        "answerChangeQuestion",
        json!({"changeId": id, "body": "x", "chosenOption": "nope"}),
        400,
        "bad_input",
    )
    .await;
    let answer = s
        .ok(
            &s.ann,
            "answerChangeQuestion",
            json!({"changeId": id, "body": "Blue please", "chosenOption": options[1]["key"]}),
        )
        .await["message"]
        .clone();
    assert_eq!((answer["authorKind"].as_str(), answer["authorName"].as_str()), (Some("user"), Some("Ann")));
    assert_eq!(answer["chosenOption"], options[1]["key"]);
    assert_eq!(s.ok(&s.agent, "getChange", json!({"changeId": id})).await["change"]["status"], "in_progress");

    s.ok(
        &s.agent,
        "replyToChange",
        json!({"changeId": id, "body": "Working on it", "authorName": "agent-a"}),
    )
    .await;
    assert_eq!(s.ok(&s.agent, "getChange", json!({"changeId": id})).await["change"]["status"], "in_progress");

    let done = s
        .ok(
            &s.agent,
            "completeChange",
            json!({"changeId": id, "branch": "fix/colour", "headCommit": "a91c4e2",
            "note": "Made it blue", "authorName": "agent-a", "groupId": group_id, "fence": fence}),
        )
        .await["change"]
        .clone();
    assert_eq!(done["status"], "done");
    assert_eq!(done["resolvedAt"], ts(0));
    assert_eq!(
        (done["branch"].as_str(), done["headCommit"].as_str(), done["live"].as_bool()),
        (Some("fix/colour"), Some("a91c4e2"), Some(true))
    );
    let thread = s.ok(&s.agent, "getChange", json!({"changeId": id})).await["thread"].clone();
    let bodies: Vec<&str> = thread.as_array().unwrap().iter().map(|m| m["body"].as_str().unwrap()).collect();
    assert_eq!(bodies, ["Red or blue?", "Blue please", "Working on it", "Made it blue"]);
    assert!(s.list(json!({})).await.is_empty(), "done items are hidden");
    s.err(&s.agent, "completeChange", json!({"changeId": id, "authorName": "agent-a"}), 409, "wrong_status")
        .await;
}

/// `headCommit` is a commit id, 7 to 40 hex digits, as `/openapi.json` states: git is
/// asked about it (`stage deploy`), so nothing else is stored.
#[tokio::test]
async fn live_follows_the_stage_deploying_the_head_commit() {
    let s = TestServer::start().await;
    let c = s.file_released("x").await;
    let done = s
        .ok(&s.agent, "completeChange", json!({"changeId": c["changeId"], "headCommit": " BEEFCAFE\n"}))
        .await;
    assert_eq!(done["change"]["headCommit"], "beefcafe", "trimmed and lower-cased, as git prints it");
    assert_eq!(done["change"]["live"], false);
    let mut events = connect(&s, None, false).await;
    let mut seen = String::new();
    read_sse(&mut events, &mut seen, |t| t.contains(": connected")).await;
    let spec = admin::StageSpec {
        project: "demo",
        branch: "main",
        url: "https://demo.example.com",
        stage_type: None,
        git_sha: Some("beefcafe"),
        changes_enabled: None,
    };
    admin::add_stage(&s.store, spec, START).await.unwrap();
    let got = s.ok(&s.agent, "getChange", json!({"changeId": c["changeId"]})).await;
    assert_eq!(got["change"]["live"], true);
    // Written to the store, not through the server: its streams still hear of it.
    read_sse(&mut events, &mut seen, |t| t.contains("\"status\"")).await;
    assert_eq!(data_lines(&seen).last().unwrap()["changeId"], c["changeId"]);
}

#[tokio::test]
async fn users_dismiss_and_reopen() {
    let s = TestServer::start().await;
    let c = s.file_released("x").await;
    let id = c["changeId"].clone();
    s.ok(&s.agent, "completeChange", json!({"changeId": id})).await;
    s.err(&s.ann, "setChangeStatus", json!({"changeId": id, "status": "done"}), 400, "bad_input").await;
    s.err(&s.agent, "setChangeStatus", json!({"changeId": id, "status": "open"}), 403, "forbidden").await;
    let reopened = s.ok(&s.ann, "setChangeStatus", json!({"changeId": id, "status": "open"})).await;
    assert_eq!(
        (reopened["change"]["status"].as_str(), reopened["change"]["resolvedAt"].as_str()),
        (Some("open"), None)
    );
    let dismissed = s.ok(&s.ann, "setChangeStatus", json!({"changeId": id, "status": "dismissed"})).await;
    assert_eq!(dismissed["change"]["status"], "dismissed");
    s.err(
        &s.agent,
        "replyToChange",
        json!({"changeId": id, "body": "b", "authorName": "a"}),
        409,
        "wrong_status",
    )
    .await;
}

#[tokio::test]
async fn agents_cannot_write_to_held_items() {
    let s = TestServer::start().await;
    let c = s.file(&s.ann, "x").await;
    s.err(
        &s.agent,
        "askChangeQuestion",
        json!({"changeId": c["changeId"], "question": "q", "authorName": "a"}),
        409,
        "wrong_status",
    )
    .await;
}

#[tokio::test]
async fn a_claim_takes_the_claimable_part_of_what_it_names() {
    let s = TestServer::start().await;
    let free = s.file_released("free").await;
    let held = s.file(&s.ann, "held").await;
    let (status, out) = s.claim("a", &[&free, &held]).await;
    assert_eq!(status, 200, "{out}");
    let taken: Vec<&Value> = out["changes"].as_array().unwrap().iter().map(|c| &c["changeId"]).collect();
    assert_eq!(taken, [&free["changeId"]]);
    assert_eq!(out["group"]["title"], "free");

    // Items in a conversation are the claimant's: reported as leased.
    s.ok(
        &s.agent,
        "askChangeQuestion",
        json!({"changeId": free["changeId"], "question": "q", "authorName": "a"}),
    )
    .await;
    let (status, body) = s.claim("b", &[&free]).await;
    assert_eq!(status, 409);
    assert_eq!(body["items"][0]["reason"], "leased");
    assert_eq!(body["items"][0]["claimedBy"], "a");
}

#[tokio::test]
async fn another_projects_token_sees_nothing() {
    let s = TestServer::start().await;
    let c = s.file_released("private").await;
    admin::add_project(&s.store, "other", None, START).await.unwrap();
    let all = [Scope::Read, Scope::Write, Scope::File];
    let other = admin::create_token(&s.store, "other", &all, "Olga", None, START).await.unwrap().token;
    let id = c["changeId"].clone();
    s.err(&other, "getChange", json!({"changeId": id}), 404, "not_found").await;
    s.err(&other, "getChange", json!({"changeId": "#1", "projectId": s.project_id}), 403, "forbidden").await;
    s.err(&other, "listChanges", json!({"projectId": s.project_id}), 403, "forbidden").await;
    s.err(&other, "claimChanges", json!({"projectId": s.project_id, "claimedBy": "x"}), 403, "forbidden")
        .await;
    s.err(&other, "replyToChange", json!({"changeId": id, "body": "b", "authorName": "x"}), 404, "not_found")
        .await;
    s.err(&other, "setChangeStatus", json!({"changeId": id, "status": "dismissed"}), 404, "not_found").await;
    s.err(&other, "createChange", json!({"stageId": s.stage_id, "title": "t"}), 404, "not_found").await;
    s.err(&other, "releaseChanges", json!({"stageId": s.stage_id}), 404, "not_found").await;
    let mine = s.ok(&other, "listChanges", json!({"projectId": other_project(&s, &other).await})).await;
    assert_eq!(mine["changes"], json!([]));
    assert_eq!(s.list(json!({})).await.len(), 1, "the first project is untouched");
}

async fn other_project(s: &TestServer, token: &str) -> String {
    s.ok(token, "getSession", json!({})).await["projects"][0]["projectId"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn a_stage_can_refuse_new_items() {
    let s = TestServer::start().await;
    let off = admin::StageSpec {
        project: "demo",
        branch: "main",
        url: "https://demo.example.com",
        stage_type: None,
        git_sha: None,
        changes_enabled: Some(false),
    };
    let stage = admin::add_stage(&s.store, off, START).await.unwrap();
    assert!(!stage.changes_enabled);
    assert_eq!(stage.git_sha.as_deref(), Some("a91c4e2"), "an update keeps what it does not name");
    let body =
        s.err(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t"}), 403, "forbidden").await;
    assert!(body["message"].as_str().unwrap().contains("turned off"));
    let listed = s.ok(&s.ann, "listStages", json!({"projectId": s.project_id})).await;
    assert_eq!(listed["stages"][0]["changesEnabled"], false);
}

/// A filer's batch on a stage is held as one: each filing extends the whole batch, not
/// another filer's nor the same filer's on another stage; when the hold ends every item
/// of the batch reaches the agent at once, and the next filing begins a new batch,
/// leaving the old one as it was.
#[tokio::test]
async fn a_filing_extends_its_own_batch_and_only_that() {
    let s = TestServer::start().await;
    let spec = admin::StageSpec {
        project: "demo",
        branch: "next",
        url: "https://next.demo.example.com",
        stage_type: None,
        git_sha: None,
        changes_enabled: None,
    };
    let next_stage = admin::add_stage(&s.store, spec, START).await.unwrap().stage_id;
    let elsewhere =
        s.ok(&s.ann, "createChange", json!({"stageId": next_stage, "title": "on next"})).await["change"]
            .clone();
    let bobs = s.file(&s.bob, "bob's").await;
    let mut batch = Vec::new();
    for i in 0..5 {
        batch.push(s.file(&s.ann, &format!("a{i}")).await);
        s.advance_secs(10);
    }
    // 50 s: Ann's last filing, at 40 s, holds her whole batch on the stage until 100 s.
    let get = async |c: &Value| s.get(&c["changeId"]).await["change"].clone();
    for c in &batch {
        let c = get(c).await;
        assert_eq!(
            (c["held"].as_bool(), c["heldUntil"].as_str()),
            (Some(true), Some(ts(100).as_str())),
            "{c}"
        );
    }
    for c in [&elsewhere, &bobs] {
        assert_eq!(get(c).await["heldUntil"], ts(60), "another batch keeps its own window");
    }

    s.advance_secs(11); // 61 s
    let taken =
        s.ok(&s.agent, "claimChanges", json!({"projectId": s.project_id, "claimedBy": "a"})).await["changes"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["title"].clone())
            .collect::<Vec<_>>();
    assert_eq!(taken, ["on next", "bob's"], "the ended batches only");
    let (status, body) = s.claim("a", &[&batch[0]]).await;
    assert_eq!(
        (status, &body["items"][0]["reason"], &body["items"][0]["claimableAt"]),
        (409, &json!("held"), &json!(ts(100)))
    );

    s.advance_secs(39); // 100 s: the hold ends, for all five at once.
    let pickup: Vec<Value> =
        s.list(json!({"pickupOnly": true})).await.iter().map(|c| c["title"].clone()).collect();
    assert_eq!(pickup, ["a0", "a1", "a2", "a3", "a4"]);

    let new = s.file(&s.ann, "a5").await;
    assert_eq!((new["held"].as_bool(), new["heldUntil"].as_str()), (Some(true), Some(ts(160).as_str())));
    assert_eq!(get(&batch[0]).await["heldUntil"], ts(100), "an ended batch stays as it was");
    let out = s.ok(&s.agent, "claimChanges", json!({"projectId": s.project_id, "claimedBy": "b"})).await;
    assert_eq!(out["changes"].as_array().unwrap().len(), 5, "{out}");
    assert!(out["changes"].as_array().unwrap().iter().all(|c| c["heldUntil"] == ts(100)), "{out}");
    let released = s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let released: Vec<&Value> = released["changes"].as_array().unwrap().iter().map(|c| &c["title"]).collect();
    assert_eq!(released, ["a5"], "a release ends the new batch only");
}

/// Releasing ends the hold of every item of the batch at once, however many, with a
/// `released` event each, and an item withdrawn from the batch stays out of it.
#[tokio::test]
async fn a_release_ends_the_whole_batch_at_once() {
    let s = TestServer::start().await;
    let titles: Vec<String> = (0..30).map(|i| format!("item {i}")).collect();
    let batch: Vec<Value> = futures_util::future::join_all(titles.iter().map(|t| s.file(&s.ann, t))).await;
    s.ok(&s.ann, "withdrawChange", json!({"changeId": batch[3]["changeId"]})).await;
    s.advance_secs(30);
    s.file(&s.ann, "last").await;
    let mut events = connect(&s, Some("0"), false).await;
    let released = s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await["changes"].clone();
    let released = released.as_array().unwrap();
    assert_eq!(released.len(), 30);
    assert!(released.iter().all(|c| c["held"] == false && c["heldUntil"] == ts(30)), "{released:?}");
    assert!(released.iter().all(|c| c["changeId"] != batch[3]["changeId"]), "withdrawn stays out");
    let mut seen = String::new();
    read_sse(&mut events, &mut seen, |t| t.matches("\"released\"").count() == 30).await;
    let withdrawn = s.get(&batch[3]["changeId"]).await["change"].clone();
    assert_eq!((withdrawn["held"].as_bool(), &withdrawn["heldUntil"]), (Some(false), &Value::Null));
    assert_eq!(s.list(json!({"pickupOnly": true})).await.len(), 30);
}

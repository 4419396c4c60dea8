//! Lists are summaries, paged (docs/protocol-additions.md, "Lists are summaries"):
//! `listChanges`' keyset pages and filters, the summaries that lists, claims and releases
//! answer, `getChange`'s thread pages and `countChanges`.

mod common;

use common::TestServer;
use serde_json::{Value, json};

impl TestServer {
    /// Files `n` items as Ann and lets their hold end; returns them.
    async fn file_many(&self, n: usize, title: &str) -> Vec<Value> {
        let mut filed = Vec::new();
        for i in 0..n {
            let data = json!({"stageId": self.stage_id, "title": format!("{title} {i}")});
            filed.push(self.ok(&self.ann, "createChange", data).await["change"].clone());
        }
        self.ok(&self.ann, "releaseChanges", json!({"stageId": self.stage_id})).await;
        filed
    }

    async fn page(&self, extra: Value) -> Value {
        let mut data = json!({"projectId": self.project_id});
        data.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        self.ok(&self.agent, "listChanges", data).await
    }
}

fn shorts(page: &Value) -> Vec<u64> {
    page["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["shortId"].as_str().unwrap().parse().unwrap())
        .collect()
}

/// Reads every page of `extra`'s filter, calling `between` after each; returns the
/// short ids in the order read.
async fn read_all(s: &TestServer, extra: Value, mut between: impl AsyncFnMut(usize)) -> Vec<u64> {
    let (mut seen, mut cursor, mut pages) = (Vec::new(), None::<String>, 0);
    loop {
        let mut data = extra.clone();
        if let Some(c) = &cursor {
            data["cursor"] = json!(c);
        }
        let page = s.page(data).await;
        seen.extend(shorts(&page));
        pages += 1;
        between(pages).await;
        match page["nextCursor"].as_str() {
            Some(c) => cursor = Some(c.to_owned()),
            None => return seen,
        }
    }
}

#[tokio::test]
async fn pages_follow_short_ids_both_ways_and_filings_between_pages_neither_repeat_nor_shift() {
    let s = TestServer::start().await;
    s.file_many(120, "item").await;

    let first = s.page(json!({})).await;
    assert_eq!((shorts(&first).len(), first["total"].as_u64()), (50, Some(120)));
    assert_eq!(first["nextCursor"], "50");
    // Oldest first, with five filed after the first page: they come at the end.
    let oldest = read_all(&s, json!({"limit": 50}), async |page| {
        if page == 1 {
            s.file_many(5, "late").await;
        }
    })
    .await;
    assert_eq!(oldest, (1..=125).collect::<Vec<u64>>());
    // Newest first, with five filed after the first page: later pages go on below it.
    let newest = read_all(&s, json!({"limit": 50, "order": "newest"}), async |page| {
        if page == 1 {
            s.file_many(5, "later").await;
        }
    })
    .await;
    assert_eq!(newest, (1..=125).rev().collect::<Vec<u64>>());
    let last = s.page(json!({"order": "newest", "limit": 50, "cursor": "26"})).await;
    assert_eq!((shorts(&last), last.get("nextCursor")), ((1..=25).rev().collect(), None));
    assert_eq!(last["total"], 130, "total counts the filter, whatever the page");

    // Any cursor of the form is read: past the end, an empty page.
    let past = s.page(json!({"cursor": "999999999999999999"})).await;
    assert_eq!((shorts(&past), past.get("nextCursor"), &past["total"]), (vec![], None, &json!(130)));
    let below = s.page(json!({"cursor": "0", "order": "newest"})).await;
    assert_eq!(shorts(&below), Vec::<u64>::new());
    let top = s.page(json!({"cursor": "999999999999999999", "order": "newest", "limit": 2})).await;
    assert_eq!((shorts(&top), top["nextCursor"].as_str()), (vec![130, 129], Some("129")));
    for bad in [json!("x1"), json!("-1"), json!(""), json!("1234567890123456789")] {
        s.err(&s.agent, "listChanges", json!({"projectId": s.project_id, "cursor": bad}), 400, "bad_input")
            .await;
    }
}

#[tokio::test]
async fn change_ids_pick_items_by_any_reference_and_the_other_filters_still_apply() {
    let s = TestServer::start().await;
    let filed = s.file_many(12, "item").await;
    let nine = filed[8]["changeId"].as_str().unwrap().to_uppercase();
    let refs = json!(["#3", "7", nine, "#99999", "0190a1b2-0000-7000-8000-000000000000", " 3 "]);
    let page = s.page(json!({"changeIds": refs})).await;
    assert_eq!((shorts(&page), &page["total"]), (vec![3, 7, 9], &json!(3)));
    s.ok(&s.agent, "claimChanges", json!({"projectId": s.project_id, "changeIds": ["#7"], "claimedBy": "a"}))
        .await;
    let open = s.page(json!({"changeIds": refs, "status": ["open"]})).await;
    assert_eq!(shorts(&open), vec![3, 9]);
    let empty = json!({"projectId": s.project_id, "changeIds": []});
    s.err(&s.agent, "listChanges", empty, 400, "bad_input").await;
    let wrong = json!({"projectId": s.project_id, "changeIds": ["seven"]});
    s.err(&s.agent, "listChanges", wrong, 400, "bad_input").await;
}

#[tokio::test]
async fn lists_claims_and_releases_answer_summaries_with_counts() {
    let s = TestServer::start().await;
    let capture =
        json!({"stroke": [{"x": 1, "y": 2}], "elements": [{"tag": "a"}, {"tag": "b"}, {"tag": "c"}]});
    let data = json!({"stageId": s.stage_id, "title": "t", "body": "why", "capture": capture,
                      "consoleErrors": ["one", "two"]});
    let filed = s.ok(&s.ann, "createChange", data).await["change"].clone();
    assert_eq!(filed["capture"]["elements"][2]["tag"], "c", "a filing answers the item whole");
    let bare = s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "bare"})).await;
    let released = s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let summary = |c: &Value, elements: u64, errors: u64, messages: u64| {
        assert_eq!(
            (&c["capture"], &c["body"], &c["consoleErrors"]),
            (&Value::Null, &Value::Null, &json!([])),
            "{c}"
        );
        assert_eq!(
            (c["elementCount"].as_u64(), c["consoleErrorCount"].as_u64(), c["messageCount"].as_u64()),
            (Some(elements), Some(errors), Some(messages)),
            "{c}"
        );
    };
    summary(&released["changes"][0], 3, 2, 0);
    summary(&released["changes"][1], 0, 0, 0);
    let claim = json!({"projectId": s.project_id, "changeIds": ["#1"], "claimedBy": "a"});
    let claimed = s.ok(&s.agent, "claimChanges", claim).await;
    summary(&claimed["changes"][0], 3, 2, 0);
    let ask = json!({"changeId": "#1", "question": "which?", "authorName": "a"});
    s.ok(&s.agent, "askChangeQuestion", ask).await;
    s.ok(&s.agent, "replyToChange", json!({"changeId": "#1", "body": "looking", "authorName": "a"})).await;
    let page = s.page(json!({})).await;
    summary(&page["changes"][0], 3, 2, 2);
    summary(&page["changes"][1], 0, 0, 0);
    assert_eq!(page["changes"][1]["changeId"], bare["change"]["changeId"]);
    // Renewing answers the group's summaries too.
    let group = claimed["group"]["groupId"].clone();
    let renew = json!({"projectId": s.project_id, "groupId": group, "claimedBy": "a"});
    summary(&s.ok(&s.agent, "claimChanges", renew).await["changes"][0], 3, 2, 2);
    // The item itself is whole.
    let got = s.ok(&s.agent, "getChange", json!({"changeId": filed["changeId"]})).await;
    assert_eq!(
        (&got["change"]["body"], &got["change"]["consoleErrors"]),
        (&json!("why"), &json!(["one", "two"]))
    );
    assert_eq!(got["change"]["capture"], filed["capture"]);
    assert_eq!(got["change"].get("elementCount"), None);
}

#[tokio::test]
async fn a_thread_is_read_in_pages_from_its_end() {
    let s = TestServer::start().await;
    s.file_many(1, "item").await;
    for i in 0..7 {
        s.ok(
            &s.agent,
            "replyToChange",
            json!({"changeId": "#1", "body": format!("m{i}"), "authorName": "a"}),
        )
        .await;
    }
    let get = |extra: Value| {
        let mut data = json!({"changeId": "#1"});
        data.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        s.ok(&s.agent, "getChange", data)
    };
    fn bodies(out: &Value) -> Vec<&str> {
        out["thread"].as_array().unwrap().iter().map(|m| m["body"].as_str().unwrap()).collect()
    }
    let whole = get(json!({})).await;
    assert_eq!(
        (bodies(&whole).len(), whole.get("olderCursor"), &whole["messageCount"]),
        (7, None, &json!(7))
    );
    let latest = get(json!({"messageLimit": 3})).await;
    assert_eq!((bodies(&latest), latest["olderCursor"].as_str()), (vec!["m4", "m5", "m6"], Some("4")));
    let older = get(json!({"messageLimit": 3, "before": "4"})).await;
    assert_eq!((bodies(&older), older["olderCursor"].as_str()), (vec!["m1", "m2", "m3"], Some("1")));
    let first = get(json!({"messageLimit": 3, "before": "1"})).await;
    assert_eq!((bodies(&first), first.get("olderCursor")), (vec!["m0"], None));
    let none = get(json!({"before": "0"})).await;
    assert_eq!((bodies(&none).len(), &none["messageCount"]), (0, &json!(7)));
    let past = get(json!({"messageLimit": 2, "before": "999999999999999999"})).await;
    assert_eq!(bodies(&past), vec!["m5", "m6"]);
    for bad in [json!({"messageLimit": 0}), json!({"messageLimit": 201}), json!({"before": "4a"})] {
        let mut data = json!({"changeId": "#1"});
        data.as_object_mut().unwrap().extend(bad.as_object().unwrap().clone());
        s.err(&s.agent, "getChange", data, 400, "bad_input").await;
    }
}

#[tokio::test]
async fn count_changes_counts_statuses_holds_and_what_waits_for_the_caller() {
    let s = TestServer::start().await;
    // #1–#6 Ann's, released; #7 Bob's; #8 Ann's, still held.
    s.file_many(6, "ann").await;
    s.ok(&s.bob, "createChange", json!({"stageId": s.stage_id, "title": "bob"})).await;
    s.ok(&s.bob, "releaseChanges", json!({"stageId": s.stage_id})).await;
    s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "held"})).await;
    let claim =
        json!({"projectId": s.project_id, "changeIds": ["1", "2", "3", "4", "5", "7"], "claimedBy": "a"});
    s.ok(&s.agent, "claimChanges", claim).await;
    for n in ["#1", "#7"] {
        s.ok(&s.agent, "askChangeQuestion", json!({"changeId": n, "question": "q", "authorName": "a"})).await;
    }
    // #2 is live (the stage serves a91c4e2), #3 not yet, #4 live and checked.
    for (n, sha) in [("#2", "a91c4e2"), ("#3", "b000000"), ("#4", "a91c4e2")] {
        s.ok(&s.agent, "completeChange", json!({"changeId": n, "headCommit": sha, "authorName": "a"})).await;
    }
    s.ok(&s.ann, "verifyChange", json!({"changeId": "#4", "verdict": "fixed"})).await;
    s.ok(&s.agent, "replyToChange", json!({"changeId": "#5", "body": "on it", "authorName": "a"})).await;

    async fn count(s: &TestServer, token: &str) -> Value {
        s.ok(token, "countChanges", json!({"projectId": s.project_id})).await
    }
    let ann = count(&s, &s.ann).await;
    assert_eq!(
        ann["byStatus"],
        json!({"open": 2, "claimed": 1, "needs_answer": 2, "in_progress": 0, "done": 3, "dismissed": 0})
    );
    assert_eq!(ann["held"], 1);
    let waiting = |out: &Value| -> Vec<(String, String)> {
        out["waiting"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| (w["shortId"].as_str().unwrap().to_owned(), w["reason"].as_str().unwrap().to_owned()))
            .collect()
    };
    let pair = |n: &str, why: &str| (n.to_owned(), why.to_owned());
    assert_eq!(
        (waiting(&ann), &ann["waitingTotal"]),
        (vec![pair("2", "check"), pair("1", "question")], &json!(2))
    );
    let bob = count(&s, &s.bob).await;
    assert_eq!(waiting(&bob), vec![pair("7", "question")]);
    assert_eq!(count(&s, &s.reader).await["waitingTotal"], 0, "Rita filed nothing");
    // An item whose filer is not known waits for everyone, as the extension has it.
    sqlx::query("UPDATE changes SET filed_by = NULL WHERE short_id = 1")
        .execute(s.store.pool())
        .await
        .unwrap();
    assert_eq!(waiting(&count(&s, &s.reader).await), vec![pair("1", "question")]);
    // A stage narrows everything.
    let other = json!({"projectId": s.project_id, "stageId": "no-such-stage"});
    let none = s.ok(&s.ann, "countChanges", other).await;
    assert_eq!(
        (none["held"].as_u64(), none["byStatus"]["open"].as_u64(), none["waitingTotal"].as_u64()),
        (Some(0), Some(0), Some(0))
    );
    s.err(&s.file_only, "countChanges", json!({"projectId": s.project_id}), 403, "forbidden").await;
}

#[tokio::test]
async fn count_changes_lists_the_newest_twenty_that_wait() {
    let s = TestServer::start().await;
    s.file_many(23, "ann").await;
    let ids: Vec<String> = (1..=23).map(|n| n.to_string()).collect();
    s.ok(&s.agent, "claimChanges", json!({"projectId": s.project_id, "changeIds": ids, "claimedBy": "a"}))
        .await;
    for n in 1..=22 {
        s.ok(
            &s.agent,
            "askChangeQuestion",
            json!({"changeId": n.to_string(), "question": "q", "authorName": "a"}),
        )
        .await;
    }
    let out = s.ok(&s.ann, "countChanges", json!({"projectId": s.project_id})).await;
    let listed: Vec<&str> =
        out["waiting"].as_array().unwrap().iter().map(|w| w["shortId"].as_str().unwrap()).collect();
    let newest: Vec<String> = (3..=22).rev().map(|n| n.to_string()).collect();
    assert_eq!((listed, &out["waitingTotal"]), (newest.iter().map(String::as_str).collect(), &json!(22)));
}

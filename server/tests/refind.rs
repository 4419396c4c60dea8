//! Items re-found on a new build (docs/protocol-additions.md): the filer's page records
//! what it found of an item's elements on a later build (`recordRefind`), the latest
//! replacing the one before, and `getChange` answers it so the agent sees it; bad input
//! is refused naming the field.

mod common;

use common::{START, TestServer};
use serde_json::{Value, json};

async fn filed(s: &TestServer) -> Value {
    let capture = json!({"stroke": [], "elements": [
        {"testId": "orders.export", "cssPath": ".toolbar > button", "tag": "button"},
        {"testId": "orders.summary", "cssPath": "p.summary", "tag": "p"},
    ]});
    let input = json!({"stageId": s.stage_id, "title": "Export and summary", "route": "/", "gitSha": "a91c4e2", "capture": capture});
    s.ok(&s.ann, "createChange", input).await["change"].clone()
}

fn found(sha: &str) -> Vec<Value> {
    vec![
        json!({"label": "orders.export", "whereabouts": "moved", "cssPath": ".section-head > button"}),
        // A path sent with a gone element says nothing and is not kept.
        json!({"label": "orders.summary", "whereabouts": "gone", "cssPath": "p.summary"}),
        json!({"label": format!("on {sha}"), "whereabouts": "in_place", "cssPath": "#x"}),
    ]
}

#[tokio::test]
async fn the_filers_finding_is_kept_per_item_and_the_agent_reads_it_with_the_item() {
    let s = TestServer::start().await;
    let change = filed(&s).await;
    let id = change["changeId"].clone();
    let before = s.ok(&s.agent, "getChange", json!({"changeId": id})).await;
    assert_eq!(before.get("refind"), None, "nothing found yet");

    s.advance_secs(60);
    let input = json!({"changeId": id, "gitSha": " b2c3d4e ", "elements": found("b2c3d4e")});
    let recorded = s.ok(&s.ann, "recordRefind", input).await["refind"].clone();
    let expected = json!({
        "gitSha": "b2c3d4e",
        "elements": [
            {"label": "orders.export", "whereabouts": "moved", "cssPath": ".section-head > button"},
            {"label": "orders.summary", "whereabouts": "gone"},
            {"label": "on b2c3d4e", "whereabouts": "in_place", "cssPath": "#x"},
        ],
        "foundBy": "Ann",
        "foundAt": START.plus_millis(60_000),
    });
    assert_eq!(recorded, expected);
    let read = s.ok(&s.agent, "getChange", json!({"changeId": id})).await;
    assert_eq!(read["refind"], expected, "the agent reads it with the item");

    // Another filer on a later build, naming the item by its short id: it replaces it.
    s.advance_secs(60);
    let by_short = json!({"changeId": format!("#{}", change["shortId"].as_str().unwrap()), "projectId": s.project_id,
            "gitSha": "c3d4e5f", "elements": [{"label": "orders.export", "whereabouts": "gone"}]});
    s.ok(&s.bob, "recordRefind", by_short).await;
    let read = s.ok(&s.agent, "getChange", json!({"changeId": id})).await;
    assert_eq!(
        read["refind"],
        json!({"gitSha": "c3d4e5f", "elements": [{"label": "orders.export", "whereabouts": "gone"}],
            "foundBy": "Bob", "foundAt": START.plus_millis(120_000)})
    );
    // Lists stay summaries: no finding in them.
    let list = s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id})).await;
    assert_eq!(list["changes"][0].get("refind"), None);
}

#[tokio::test]
async fn bad_findings_are_refused_naming_the_field() {
    let s = TestServer::start().await;
    let id = filed(&s).await["changeId"].clone();
    let gone = json!([{"label": "x", "whereabouts": "gone"}]);
    for (input, field) in [
        (json!({"changeId": id, "gitSha": "b2", "elements": []}), "elements"),
        (json!({"changeId": id, "gitSha": "  ", "elements": gone}), "gitSha"),
        (
            json!({"changeId": id, "gitSha": "b2", "elements": [{"label": " ", "whereabouts": "gone"}]}),
            "elements[0].label",
        ),
        (
            json!({"changeId": id, "gitSha": "b2", "elements": [{"label": "x", "whereabouts": "lost"}]}),
            "elements",
        ),
        (
            json!({"changeId": id, "gitSha": "b2", "elements": vec![json!({"label": "x", "whereabouts": "gone"}); 51]}),
            "elements",
        ),
        (json!({"changeId": id, "gitSha": "x".repeat(201), "elements": gone}), "gitSha"),
        (
            json!({"changeId": id, "gitSha": "b2", "elements": [{"label": "x", "whereabouts": "moved", "cssPath": "p".repeat(501)}]}),
            "elements",
        ),
        (json!({"changeId": id, "elements": gone}), "gitSha"),
    ] {
        let error = s.err(&s.ann, "recordRefind", input.clone(), 400, "bad_input").await;
        let message = error["message"].as_str().unwrap();
        assert!(message.starts_with(field), "{input}: {message}");
    }
    let unknown = json!({"changeId": "#999", "gitSha": "b2", "elements": gone});
    s.err(&s.ann, "recordRefind", unknown, 404, "not_found").await;
    // Recording is the filer's side: an agent's or a reader's token may not.
    let input = json!({"changeId": id, "gitSha": "b2", "elements": gone});
    s.err(&s.agent, "recordRefind", input.clone(), 403, "forbidden").await;
    s.err(&s.reader, "recordRefind", input, 403, "forbidden").await;
    assert_eq!(s.ok(&s.agent, "getChange", json!({"changeId": id})).await.get("refind"), None);
}

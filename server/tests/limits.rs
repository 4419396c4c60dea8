//! Bounded memory and storage: each RPC's body cap (413 while reading), lists and
//! strings refused while they are read (400 naming the field), the per-project storage
//! quota (413), and the limits stated in `/openapi.json`.

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::TestServer;
use serde_json::{Value, json};

fn message(body: &Value) -> &str {
    body["message"].as_str().unwrap_or_default()
}

/// Calls `name` and expects a 400 whose message starts with `field: `.
async fn refused(s: &TestServer, token: &str, name: &str, data: Value, field: &str) -> String {
    let body = s.err(token, name, data, 400, "bad_input").await;
    let text = message(&body).to_owned();
    assert!(text.starts_with(&format!("{field}: ")), "{name}: {text}");
    text
}

#[tokio::test]
async fn oversized_lists_are_refused_naming_the_field() {
    let s = TestServer::start().await;
    let elements = vec![json!({}); 501];
    let text = refused(
        &s,
        &s.ann,
        "createChange",
        json!({"stageId": s.stage_id, "title": "t", "capture": {"elements": elements}}),
        "capture.elements",
    )
    .await;
    assert_eq!(text, "capture.elements: must have at most 500 entries");
    let stroke = vec![json!({"x": 1, "y": 2}); 10_001];
    refused(
        &s,
        &s.ann,
        "createChange",
        json!({"stageId": s.stage_id, "title": "t", "capture": {"stroke": stroke}}),
        "capture.stroke",
    )
    .await;
    let errors = vec!["TypeError"; 51];
    refused(
        &s,
        &s.ann,
        "createChange",
        json!({"stageId": s.stage_id, "title": "t", "consoleErrors": errors}),
        "consoleErrors",
    )
    .await;
    // Exactly at the limits is fine.
    let elements = vec![json!({}); 500];
    s.ok(
        &s.ann,
        "createChange",
        json!({"stageId": s.stage_id, "title": "t", "capture": {"elements": elements}}),
    )
    .await;

    let ids: Vec<String> = (1..=201).map(|n| n.to_string()).collect();
    refused(
        &s,
        &s.agent,
        "claimChanges",
        json!({"projectId": s.project_id, "claimedBy": "a", "changeIds": ids}),
        "changeIds",
    )
    .await;
    let statuses = vec!["open"; 7];
    refused(&s, &s.agent, "listChanges", json!({"projectId": s.project_id, "status": statuses}), "status")
        .await;
    let options = vec!["a"; 7];
    refused(
        &s,
        &s.agent,
        "askChangeQuestion",
        json!({"changeId": "#1", "question": "q", "authorName": "a", "option": options}),
        "option",
    )
    .await;
}

#[tokio::test]
async fn long_strings_are_refused_naming_the_field() {
    let s = TestServer::start().await;
    let file = |extra: Value| {
        let mut data = json!({"stageId": s.stage_id, "title": "t"});
        data.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
        data
    };
    let text = refused(&s, &s.ann, "createChange", file(json!({"body": "é".repeat(20_001)})), "body").await;
    assert_eq!(text, "body: must be at most 20000 characters");
    s.ok(&s.ann, "createChange", file(json!({"body": "é".repeat(20_000)}))).await;
    refused(
        &s,
        &s.ann,
        "createChange",
        file(json!({"consoleErrors": ["x".repeat(1_001)]})),
        "consoleErrors[0]",
    )
    .await;
    let element = json!({"text": "x".repeat(501)});
    refused(
        &s,
        &s.ann,
        "createChange",
        file(json!({"capture": {"elements": [{}, element]}})),
        "capture.elements[1].text",
    )
    .await;
    refused(&s, &s.ann, "createChange", file(json!({"title": "x".repeat(201)})), "title").await;
    refused(
        &s,
        &s.agent,
        "replyToChange",
        json!({"changeId": "#1", "body": "b", "authorName": "n".repeat(201)}),
        "authorName",
    )
    .await;
}

#[tokio::test]
async fn styles_and_failed_requests_are_kept_and_refused_past_their_limits() {
    let s = TestServer::start().await;
    let file = |capture: Value| json!({"stageId": s.stage_id, "title": "t", "capture": capture});
    let styles = json!({"changed": {"color": "rgb(255, 0, 0)"}, "unchanged": {"display": "block"}});
    let failed = json!([{"method": "GET", "url": "http://127.0.0.1:7879/api/totals", "status": 404}]);
    let filed = s
        .ok(
            &s.ann,
            "createChange",
            file(json!({"elements": [{"tag": "p", "styles": styles}], "failedRequests": failed})),
        )
        .await;
    let id = filed["change"]["changeId"].as_str().unwrap().to_owned();
    let read = s.ok(&s.agent, "getChange", json!({"changeId": id})).await;
    assert_eq!(read["change"]["capture"]["elements"][0]["styles"], styles);
    assert_eq!(read["change"]["capture"]["failedRequests"], failed);

    let long = json!({"changed": {"color": "x".repeat(101)}});
    let many: serde_json::Map<String, Value> = (0..17).map(|n| (format!("p{n}"), json!("0"))).collect();
    let request = |method: &str, status: Value| json!({"method": method, "url": "/x", "status": status});
    for (capture, field) in [
        (json!({"elements": [{}, {"styles": long}]}), "capture.elements[1].styles.changed.color"),
        (json!({"elements": [{"styles": {"unchanged": many}}]}), "capture.elements[0].styles.unchanged"),
        (json!({"failedRequests": [request("GET", json!(1000))]}), "capture.failedRequests[0].status"),
        (
            json!({"failedRequests": [request(&"M".repeat(21), json!(500))]}),
            "capture.failedRequests[0].method",
        ),
        (json!({"failedRequests": vec![request("GET", json!(404)); 51]}), "capture.failedRequests"),
        (json!({"failedRequests": [{"method": "GET", "url": "/x"}]}), "capture.failedRequests[0].status"),
    ] {
        refused(&s, &s.ann, "createChange", file(capture), field).await;
    }
}

#[tokio::test]
async fn bodies_over_their_rpcs_cap_get_413_naming_it() {
    let s = TestServer::start().await;
    // A small RPC: 64 KiB.
    let padded = format!(r#"{{"pad":"{}"}}"#, " ".repeat(64 * 1024));
    let (status, body) = s.post(&s.ann, "getSession", padded).await;
    assert_eq!((status, body["code"].as_str()), (413, Some("too_large")), "{body}");
    assert_eq!(message(&body), "the request body is over getSession's limit of 65536 bytes");
    // createChange: 5 MiB, whatever the body holds (here two million empty elements, ~6 MB).
    let millions = format!(
        r#"{{"stageId":"{}","title":"t","capture":{{"elements":[{}{{}}]}}}}"#,
        s.stage_id,
        "{},".repeat(2_000_000 - 1)
    );
    let (status, body) = s.post(&s.ann, "createChange", millions).await;
    assert_eq!(status, 413, "{body}");
    assert!(message(&body).contains("createChange's limit of 5242880 bytes"), "{body}");
    // The same list under the cap is refused at its 501st entry.
    let many = format!(
        r#"{{"stageId":"{}","title":"t","capture":{{"elements":[{}{{}}]}}}}"#,
        s.stage_id,
        "{},".repeat(600_000 - 1)
    );
    let (status, body) = s.post(&s.ann, "createChange", many).await;
    assert_eq!((status, message(&body)), (400, "capture.elements: must have at most 500 entries"));
    // Image RPCs take MiB: a 5 MiB image is not refused for its size.
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.resize(5 << 20, 0);
    let upload =
        json!({"projectId": s.project_id, "contentType": "image/png", "imageBase64": STANDARD.encode(&png)});
    s.ok(&s.ann, "uploadShot", upload).await;
}

/// The largest filing the extension makes fits `createChange`'s cap with room to spare:
/// 500 elements with 200-character texts and names, the first 20 with a whole compact
/// set of styles at its longest, a 10,000-point stroke at full precision, 50 console
/// errors of 500 characters, 50 failed requests with long addresses and a long body.
#[tokio::test]
async fn filing_bodies_fit_their_cap() {
    let s = TestServer::start().await;
    let element = |i: usize| {
        json!({
            "testId": format!("orders.table.row-{i}.cell"),
            "sourceAnchor": format!("src/routes/app.orders.tsx:{i}"),
            "cssPath": format!("main#content > section.orders > table.grid > tbody > tr:nth-child({i}) > td.amount > span"),
            "text": "x".repeat(200),
            "rect": {"x": 123.456789012345, "y": 4567.89012345678, "width": 98.7654321098765, "height": 21.3333333333333},
            "componentTestId": "orders.table",
            "role": "cell",
            "name": "n".repeat(200),
            "tag": "span",
            "styles": (i < 20).then(|| {
                let set = |from: usize, to: usize| -> serde_json::Map<String, Value> {
                    redline_protocol::styles::STYLE_PROPERTIES[from..to]
                        .iter()
                        .map(|(name, _)| ((*name).to_owned(), json!("v".repeat(100))))
                        .collect()
                };
                json!({"changed": set(0, 7), "unchanged": set(7, 14)})
            }),
        })
    };
    let stroke: Vec<Value> = (0..10_000)
        .map(|i| json!({"x": 1000.0 + f64::from(i) / 7.0, "y": 700.0 - f64::from(i) / 3.0}))
        .collect();
    let mut data = json!({
        "stageId": s.stage_id,
        "title": "t".repeat(200),
        "body": "b".repeat(2_000),
        "route": "/app/orders?page=2",
        "capture": {
            "stroke": stroke,
            "bounds": {"x": 1.5, "y": 2.5, "width": 300.25, "height": 200.75},
            "elements": (0..500).map(element).collect::<Vec<_>>(),
            "devicePixelRatio": 2,
            "scroll": {"x": 0, "y": 1234.5}
        },
        "consoleErrors": vec!["e".repeat(500); 50],
    });
    let failed: Vec<Value> = (0..50)
        .map(|i| json!({"method": "DELETE", "url": format!("https://api.example/{}/{i}", "p".repeat(500)), "status": 503}))
        .collect();
    data["capture"]["failedRequests"] = json!(failed);
    let size = json!({"rpcName": "createChange", "data": data}).to_string().len();
    println!("the largest extension filing is {size} bytes");
    assert!(size < 2 * 1024 * 1024 / 2 + 200 * 1024, "{size} bytes");
    s.ok(&s.ann, "createChange", data).await;
}

#[tokio::test]
async fn a_project_over_its_storage_quota_gets_413() {
    let s = TestServer::start_with(|state| state.services.project_quota_bytes = 45_000).await;
    let capture = |text: &str| json!({"elements": vec![json!({"text": text}); 50]});
    let file = |capture: Value| json!({"stageId": s.stage_id, "title": "t", "capture": capture});
    // ~19 KB of capture each (the stored JSON states every field): the second fits,
    // the third does not.
    s.ok(&s.ann, "createChange", file(capture(&"a".repeat(250)))).await;
    let stored = stored_bytes(&s).await;
    assert!((15_000..22_000).contains(&stored), "{stored}");
    s.ok(&s.ann, "createChange", file(capture(&"b".repeat(250)))).await;
    let body = s.err(&s.ann, "createChange", file(capture(&"c".repeat(250))), 413, "too_large").await;
    assert!(message(&body).contains("storage quota"), "{body}");
    assert_eq!(stored_bytes(&s).await, 2 * stored, "a refused write adds nothing");
    // A filing that stores nothing still goes through.
    s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "no capture"})).await;
    // Images count too.
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.resize(10_000, 0);
    let upload =
        json!({"projectId": s.project_id, "contentType": "image/png", "imageBase64": STANDARD.encode(&png)});
    let body = s.err(&s.ann, "uploadShot", upload, 413, "too_large").await;
    assert!(message(&body).contains("storage quota"), "{body}");
    assert_eq!(s.stored_images(0).await, Vec::<String>::new(), "a refused image leaves nothing behind");
}

#[tokio::test]
async fn thread_images_are_charged_and_a_refused_one_leaves_no_file() {
    let s = TestServer::start_with(|state| state.services.project_quota_bytes = 12_000).await;
    let id = s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t"})).await["change"]["changeId"]
        .as_str()
        .unwrap()
        .to_owned();
    s.advance_secs(61);
    let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
    png.resize(5_000, 0);
    let reply = json!({"changeId": id, "body": "see", "authorName": "agent", "contentType": "image/png", "imageBase64": STANDARD.encode(&png)});
    s.ok(&s.agent, "replyToChange", reply.clone()).await;
    let shot = json!({"changeId": id, "label": "A", "kind": "option", "authorName": "agent", "contentType": "image/png", "imageBase64": STANDARD.encode(&png)});
    s.ok(&s.agent, "attachChangeShot", shot.clone()).await;
    // The images, and the few bytes of the item's and the messages' text.
    let stored = stored_bytes(&s).await;
    assert!((10_000..10_300).contains(&stored), "{stored}");
    s.err(&s.agent, "attachChangeShot", shot, 413, "too_large").await;
    // A write refused after its image was written (here: no such item) leaves no file.
    let mut lost = reply;
    lost["changeId"] = json!("#99");
    s.err(&s.agent, "replyToChange", lost, 404, "not_found").await;
    assert_eq!(s.stored_images(2).await.len(), 2);
}

/// What people and agents write counts as well: an item's text, a filer's edits (what
/// they add, and back what they remove) and every message of its thread.
#[tokio::test]
async fn text_and_thread_messages_count_against_the_quota() {
    let s = TestServer::start_with(|state| state.services.project_quota_bytes = 6_000).await;
    let filing = json!({"stageId": s.stage_id, "title": "t", "body": "b".repeat(1_000), "route": "/orders"});
    let id = s.ok(&s.ann, "createChange", filing).await["change"]["changeId"].clone();
    let filed = stored_bytes(&s).await;
    assert_eq!(filed, 1 + 1_000 + 7 + "a91c4e2".len() as i64, "title, body, route and the build");
    s.ok(&s.ann, "updateChange", json!({"changeId": id, "body": "b".repeat(1_500)})).await;
    assert_eq!(stored_bytes(&s).await, filed + 500);
    s.ok(&s.ann, "updateChange", json!({"changeId": id, "body": "b".repeat(1_000)})).await;
    assert_eq!(stored_bytes(&s).await, filed);
    s.advance_secs(61);
    let reply = |body: String| json!({"changeId": id, "body": body, "authorName": "agent"});
    s.ok(&s.agent, "replyToChange", reply("r".repeat(2_000))).await;
    let replied = stored_bytes(&s).await;
    assert!(replied >= filed + 2_000 + "agent".len() as i64, "{replied}");
    let question = json!({"changeId": id, "question": "q".repeat(1_000), "authorName": "agent",
                          "option": ["Red", "Blue"]});
    s.ok(&s.agent, "askChangeQuestion", question).await;
    let asked = stored_bytes(&s).await;
    assert!(asked >= replied + 1_000 + "RedBlue".len() as i64, "{asked}");
    let body = s.err(&s.agent, "replyToChange", reply("r".repeat(2_000)), 413, "too_large").await;
    assert!(message(&body).contains("storage quota"), "{body}");
    let answer = json!({"changeId": id, "body": "a".repeat(2_000)});
    s.err(&s.ann, "answerChangeQuestion", answer, 413, "too_large").await;
    assert_eq!(stored_bytes(&s).await, asked, "a refused message adds nothing");
    let thread = s.ok(&s.agent, "getChange", json!({"changeId": id})).await["thread"].clone();
    assert_eq!(thread.as_array().unwrap().len(), 2, "{thread}");
}

async fn stored_bytes(s: &TestServer) -> i64 {
    sqlx::query_scalar("SELECT stored_bytes FROM projects WHERE project_id = $1")
        .bind(&s.project_id)
        .fetch_one(s.store.pool())
        .await
        .unwrap()
}

#[tokio::test]
async fn openapi_states_the_limits() {
    let s = TestServer::start().await;
    let doc: Value =
        s.http.get(format!("{}/openapi.json", s.base)).send().await.unwrap().json().await.unwrap();
    let schemas = &doc["components"]["schemas"];
    let create = &schemas["CreateChangeInput"]["properties"];
    assert_eq!(create["title"]["maxLength"], 200);
    assert_eq!(create["title"]["minLength"], 1);
    assert_eq!(create["title"]["pattern"], redline_protocol::patterns::NON_BLANK);
    assert_eq!(create["body"]["maxLength"], 20_000);
    assert_eq!(create["consoleErrors"]["maxItems"], 50);
    assert_eq!(create["consoleErrors"]["items"]["maxLength"], 1_000);
    assert_eq!(create["stageId"]["minLength"], 1);
    let capture = &schemas["Capture"]["properties"];
    assert_eq!(capture["elements"]["maxItems"], 500);
    assert_eq!(capture["stroke"]["maxItems"], 10_000);
    assert_eq!(schemas["Element"]["properties"]["text"]["maxLength"], 500);
    let list = &schemas["ListChangesInput"]["properties"];
    assert_eq!((&list["limit"]["minimum"], &list["limit"]["maximum"]), (&json!(1), &json!(200)));
    assert_eq!(list["status"]["maxItems"], 6);
    let claim = &schemas["ClaimChangesInput"]["properties"];
    assert_eq!(
        (&claim["leaseMinutes"]["minimum"], &claim["leaseMinutes"]["maximum"]),
        (&json!(1), &json!(1440))
    );
    assert_eq!((&claim["changeIds"]["minItems"], &claim["changeIds"]["maxItems"]), (&json!(1), &json!(200)));
    let ask = &schemas["AskChangeQuestionInput"]["properties"];
    assert_eq!(ask["option"]["maxItems"], 6);
    assert_eq!(ask["option"]["items"]["minLength"], 1);
    assert_eq!(ask["question"]["minLength"], 1);
    let paths = &doc["paths"];
    assert_eq!(paths["/rpc/createChange"]["post"]["x-max-body-bytes"], 5 * 1024 * 1024);
    let styles = &schemas["ElementStyles"]["properties"]["changed"];
    assert_eq!(styles["maxProperties"], 16);
    assert_eq!(styles["propertyNames"]["maxLength"], 32);
    assert_eq!(styles["additionalProperties"]["maxLength"], 100);
    assert_eq!(capture["failedRequests"]["maxItems"], 50);
    let request = &schemas["FailedRequest"]["properties"];
    assert_eq!((&request["method"]["maxLength"], &request["url"]["maxLength"]), (&json!(20), &json!(2048)));
    assert_eq!(request["status"]["maximum"], 999);
    assert_eq!(paths["/rpc/getSession"]["post"]["x-max-body-bytes"], 64 * 1024);
    assert!(paths["/rpc/uploadShot"]["post"]["x-max-body-bytes"].as_u64().unwrap() > 11 << 20);
}

#[tokio::test]
async fn head_commit_is_a_commit_id() {
    let s = TestServer::start().await;
    let c =
        s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "x"})).await["change"].clone();
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    for bad in ["beef", "--output=/tmp/x", "a91c4e2..HEAD", "a91c4e2 HEAD", "", &"a".repeat(41)] {
        let done = json!({"changeId": c["changeId"], "headCommit": bad});
        let e = s.err(&s.agent, "completeChange", done, 400, "bad_input").await;
        assert!(e["message"].as_str().unwrap().starts_with("headCommit: "), "{bad:?}: {e}");
    }
    let got = s.ok(&s.agent, "getChange", json!({"changeId": c["changeId"]})).await;
    assert_eq!(
        (got["change"]["status"].as_str(), &got["change"]["headCommit"]),
        (Some("open"), &json!(null))
    );
}

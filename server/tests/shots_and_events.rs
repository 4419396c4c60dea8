//! Images (uploadShot, thread images, signed links) and the change-event stream.

mod common;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{TestServer, connect, data_lines, read_sse};
use redline_server::store::blobs::{Collected, UNATTACHED_LIFETIME};
use serde_json::{Value, json};

fn png() -> String {
    STANDARD.encode(b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR-not-a-real-image-but-the-magic-is-right")
}

async fn fetch(s: &TestServer, url: &str) -> (u16, Vec<u8>, String) {
    let res = s.http.get(url).send().await.unwrap();
    let status = res.status().as_u16();
    let ctype = res.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned()).unwrap_or_default();
    (status, res.bytes().await.unwrap().to_vec(), ctype)
}

#[tokio::test]
async fn screenshots_upload_and_come_back_as_signed_links() {
    let s = TestServer::start().await;
    let key = s
        .ok(
            &s.ann,
            "uploadShot",
            json!({"projectId": s.project_id, "contentType": "image/png", "imageBase64": png()}),
        )
        .await["screenshotKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let change = s
        .ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t", "screenshotKey": key}))
        .await["change"]
        .clone();
    assert_eq!(change["screenshotKey"], key.as_str());
    let url = change["screenshotUrl"].as_str().unwrap().to_owned();
    assert!(url.starts_with(&format!("{}/blobs/{key}?exp=", s.base)), "{url}");
    let (status, bytes, ctype) = fetch(&s, &url).await;
    assert_eq!((status, ctype.as_str()), (200, "image/png"));
    assert!(bytes.starts_with(b"\x89PNG"));

    let tampered = format!("{}0", &url[..url.len() - 1]).replace("sig=", "sig=f");
    assert_eq!(fetch(&s, &tampered).await.0, 403);
    s.advance_secs(3601);
    assert_eq!(fetch(&s, &url).await.0, 403, "links expire");
    let fresh = s.ok(&s.agent, "getChange", json!({"changeId": change["changeId"]})).await;
    assert_eq!(fetch(&s, fresh["change"]["screenshotUrl"].as_str().unwrap()).await.0, 200);
}

#[tokio::test]
async fn images_are_checked() {
    let s = TestServer::start().await;
    let upload = |ctype: &str, data: String| json!({"projectId": s.project_id, "contentType": ctype, "imageBase64": data});
    s.err(&s.ann, "uploadShot", upload("image/gif", png()), 415, "unsupported_media_type").await;
    s.err(&s.ann, "uploadShot", upload("image/jpeg", png()), 415, "unsupported_media_type").await;
    s.err(
        &s.ann,
        "uploadShot",
        upload("image/png", STANDARD.encode(b"hello")),
        415,
        "unsupported_media_type",
    )
    .await;
    s.err(&s.ann, "uploadShot", upload("image/png", "***".into()), 400, "bad_input").await;
    let mut big = b"\x89PNG\r\n\x1a\n".to_vec();
    big.resize(8 * 1024 * 1024 + 1, 0);
    s.err(&s.ann, "uploadShot", upload("image/png", STANDARD.encode(&big)), 413, "too_large").await;
    let data_url = format!("data:image/png;base64,{}", png());
    s.ok(&s.ann, "uploadShot", upload("png", data_url)).await;
    s.err(
        &s.ann,
        "uploadShot",
        json!({"projectId": "other", "contentType": "image/png", "imageBase64": png()}),
        403,
        "forbidden",
    )
    .await;
}

#[tokio::test]
async fn agents_attach_images_as_evidence_or_options() {
    let s = TestServer::start().await;
    let c =
        s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t"})).await["change"].clone();
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let id = c["changeId"].clone();
    let reply = s
        .ok(
            &s.agent,
            "replyToChange",
            json!({"changeId": id, "body": "before/after", "authorName": "a",
            "imageBase64": png(), "contentType": "image/png", "imageLabel": "after"}),
        )
        .await["message"]
        .clone();
    let evidence = &reply["attachments"][0];
    assert_eq!((evidence["kind"].as_str(), evidence["label"].as_str()), (Some("evidence"), Some("after")));
    assert_eq!(fetch(&s, evidence["url"].as_str().unwrap()).await.0, 200);
    s.err(
        &s.agent,
        "replyToChange",
        json!({"changeId": id, "body": "x", "authorName": "a", "imageBase64": png()}),
        400,
        "bad_input",
    )
    .await;

    s.ok(&s.agent, "askChangeQuestion", json!({"changeId": id, "question": "Like A?", "authorName": "a"}))
        .await;
    let shot = s
        .ok(
            &s.agent,
            "attachChangeShot",
            json!({"changeId": id, "label": "Option A", "kind": "option",
            "contentType": "image/png", "imageBase64": png(), "authorName": "a"}),
        )
        .await;
    let key = shot["key"].clone();
    assert_eq!(shot["message"]["attachments"][0]["key"], key);
    assert!(shot["message"]["attachments"][0]["url"].as_str().is_some());
    let answer =
        s.ok(&s.ann, "answerChangeQuestion", json!({"changeId": id, "body": "", "chosenOption": key})).await;
    assert_eq!(answer["message"]["chosenOption"], key);
    let thread = s.ok(&s.agent, "getChange", json!({"changeId": id})).await["thread"].clone();
    assert_eq!(thread.as_array().unwrap().len(), 4);
}

#[tokio::test]
async fn events_stream_replay_and_reset() {
    let s = TestServer::start().await;
    let mut live = connect(&s, None, false).await;
    let mut text = String::new();
    read_sse(&mut live, &mut text, |t| t.contains(": connected")).await;

    let c =
        s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t"})).await["change"].clone();
    read_sse(&mut live, &mut text, |t| t.contains("\"filed\"")).await;
    s.ok(&s.ann, "updateChange", json!({"changeId": c["changeId"], "title": "t2"})).await;
    read_sse(&mut live, &mut text, |t| t.contains("\"updated\"")).await;
    assert!(text.contains("id: 1\n") && text.contains("id: 2\n"), "{text}");
    let events = data_lines(&text);
    assert_eq!(events[0], json!({"type": "filed", "changeId": c["changeId"], "shortId": "1", "seq": 1}));
    assert_eq!(events[1]["type"], "updated");

    // Idle connections get pings.
    read_sse(&mut live, &mut text, |t| t.contains(": ping")).await;

    // A reconnect replays what was missed.
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let mut again = connect(&s, Some("1"), true).await;
    let mut replay = String::new();
    read_sse(&mut again, &mut replay, |t| t.contains("\"released\"")).await;
    let types: Vec<Value> = data_lines(&replay).iter().map(|e| e["type"].clone()).collect();
    assert_eq!(types, ["updated", "released"]);

    // An id the server cannot replay from gets a reset.
    let mut reset = connect(&s, Some("999"), false).await;
    let mut text = String::new();
    read_sse(&mut reset, &mut text, |t| t.contains("event: reset")).await;
    assert!(text.contains("id: 3"), "{text}");
}

#[tokio::test]
async fn the_stream_is_never_stored_by_a_cache() {
    // A browser that stores the open stream holds the next request of the same URL
    // behind it (Firefox: a sidebar beside a panel tab, about 20 s).
    let s = TestServer::start().await;
    let live = connect(&s, None, false).await;
    assert_eq!(live.headers()["cache-control"], "no-store");
}

#[tokio::test]
async fn events_need_a_reader_of_the_project() {
    let s = TestServer::start().await;
    let url = |p: &str| format!("{}/events/changes:{p}", s.base);
    let res = s.http.get(url(&s.project_id)).send().await.unwrap();
    assert_eq!(res.status(), 401);
    let res = s.http.get(url("other")).bearer_auth(&s.agent).send().await.unwrap();
    assert_eq!(res.status(), 403);
    let res = s.http.get(url(&s.project_id)).bearer_auth(&s.file_only).send().await.unwrap();
    assert_eq!(res.status(), 403);
    let res = s
        .http
        .get(format!("{}/events/other:{}", s.base, s.project_id))
        .bearer_auth(&s.agent)
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 404);
}

#[tokio::test]
async fn every_operation_announces_itself() {
    let s = TestServer::start().await;
    let mut stream = connect(&s, None, false).await;
    let mut text = String::new();
    read_sse(&mut stream, &mut text, |t| t.contains(": connected")).await;
    let c =
        s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t"})).await["change"].clone();
    let id = c["changeId"].clone();
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    s.ok(&s.agent, "claimChanges", json!({"projectId": s.project_id, "claimedBy": "a"})).await;
    s.ok(&s.agent, "askChangeQuestion", json!({"changeId": id, "question": "q", "authorName": "a"})).await;
    s.ok(&s.ann, "answerChangeQuestion", json!({"changeId": id, "body": "b"})).await;
    s.ok(&s.agent, "replyToChange", json!({"changeId": id, "body": "r", "authorName": "a"})).await;
    let shot = json!({"changeId": id, "label": "l", "kind": "evidence", "contentType": "image/png",
                      "imageBase64": png(), "authorName": "a"});
    s.ok(&s.agent, "attachChangeShot", shot).await;
    s.ok(&s.agent, "completeChange", json!({"changeId": id, "authorName": "a"})).await;
    s.ok(&s.ann, "setChangeStatus", json!({"changeId": id, "status": "open"})).await;
    read_sse(&mut stream, &mut text, |t| t.contains("\"status\"")).await;
    let events = data_lines(&text);
    let types: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(
        types,
        ["filed", "released", "claimed", "asked", "answered", "replied", "shot", "done", "status"]
    );
    let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=9).collect::<Vec<_>>(), "ids grow by one per event");
    assert!(events.iter().all(|e| e["changeId"] == id && e["shortId"] == "1"));
}

#[tokio::test]
#[ignore = "needs Postgres: `cargo xtask test` runs it in its Postgres phase; by hand, \
            REDLINE_TEST_DATABASE_URL=postgres://… cargo test -p redline-server --tests -- --ignored postgres_"]
async fn postgres_wakes_the_streams_of_other_server_processes() {
    let s = TestServer::start().await;
    // Asked to run without Postgres, it fails: it would test nothing.
    let url =
        s.store.postgres_url().expect("this test needs REDLINE_TEST_DATABASE_URL naming a Postgres server");
    // A second server on the same database, as another process would be.
    let other = redline_server::Store::open_url(url).await.unwrap();
    let state =
        redline_server::AppState::new(other, s.clock.clone(), s.dir.path().join("blobs-2")).await.unwrap();
    let base = common::listen(state).await;
    let mut res = s
        .http
        .get(format!("{base}/events/changes:{}", s.project_id))
        .bearer_auth(&s.agent)
        .send()
        .await
        .unwrap();
    let mut text = String::new();
    read_sse(&mut res, &mut text, |t| t.contains(": connected")).await;
    // Both servers' listeners (this test's and the second's) subscribed before the write.
    common::until("both servers listening", || async {
        let listening: i64 = sqlx::query_scalar(
            "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() \
             AND query LIKE 'LISTEN %' AND state = 'idle'",
        )
        .fetch_one(s.store.pool())
        .await
        .unwrap();
        listening == 2
    })
    .await;
    s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t"})).await;
    read_sse(&mut res, &mut text, |t| t.contains("\"filed\"")).await;
}

#[tokio::test]
async fn unfiled_screenshots_are_deleted_after_a_day() {
    let s = TestServer::start().await;
    let upload = json!({"projectId": s.project_id, "contentType": "image/png", "imageBase64": png()});
    let filed =
        s.ok(&s.ann, "uploadShot", upload.clone()).await["screenshotKey"].as_str().unwrap().to_owned();
    let unfiled = s.ok(&s.ann, "uploadShot", upload).await["screenshotKey"].as_str().unwrap().to_owned();
    let c = s
        .ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t", "screenshotKey": filed}))
        .await;
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let reply = json!({"changeId": c["change"]["changeId"], "body": "b", "authorName": "a",
                       "imageBase64": png(), "contentType": "image/png"});
    let evidence = s.ok(&s.agent, "replyToChange", reply).await["message"]["attachments"][0]["key"].clone();

    let collect = || s.blobs.collect(&s.store, s.clock.now(), UNATTACHED_LIFETIME);
    assert_eq!(collect().await.unwrap(), Collected::default(), "a fresh upload waits");
    s.advance_secs(24 * 3600 + 1);
    assert_eq!(collect().await.unwrap(), Collected { unreferenced: 1, orphans: 0 });
    let mut kept = vec![filed, evidence.as_str().unwrap().to_owned()];
    kept.sort();
    assert_eq!(s.stored_images(2).await, kept);
    let late = json!({"stageId": s.stage_id, "title": "t", "screenshotKey": unfiled});
    s.err(&s.ann, "createChange", late, 404, "not_found").await;
}

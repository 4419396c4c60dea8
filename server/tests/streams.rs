//! Event streams under load and misuse: a cap per token, revoked and expiring tokens,
//! one read per event fanned out to many streams.

mod common;

use std::sync::Arc;
use std::time::Duration;

use common::{START, TestServer, data_lines, read_sse};
use redline_protocol::Scope;
use redline_server::admin;
use redline_server::http::events::Streams;
use redline_server::store::event_log::EventHub;
use serde_json::{Value, json};

async fn open(s: &TestServer, token: &str, last_event_id: Option<&str>) -> reqwest::Response {
    let mut req = s.http.get(format!("{}/events/changes:{}", s.base, s.project_id)).bearer_auth(token);
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id);
    }
    req.send().await.unwrap()
}

/// A stream that answered 200 and said it is connected.
async fn connected(s: &TestServer, token: &str, last_event_id: Option<&str>) -> (reqwest::Response, String) {
    let mut res = open(s, token, last_event_id).await;
    assert_eq!(res.status(), 200);
    let mut text = String::new();
    read_sse(&mut res, &mut text, |t| t.contains(": connected")).await;
    (res, text)
}

/// Reads until the stream ends; panics if it has not within 5 s.
async fn ends(res: &mut reqwest::Response) {
    tokio::time::timeout(Duration::from_secs(5), async { while let Ok(Some(_)) = res.chunk().await {} })
        .await
        .expect("the stream should have ended");
}

async fn file(s: &TestServer, title: &str) -> Value {
    s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": title})).await["change"].clone()
}

#[tokio::test]
async fn a_token_holds_at_most_its_streams() {
    let s = TestServer::start_with(|state| state.max_streams_per_token = 3).await;
    let mut held = Vec::new();
    for _ in 0..3 {
        held.push(connected(&s, &s.agent, None).await.0);
    }
    let refused = open(&s, &s.agent, None).await;
    assert_eq!(refused.status(), 429);
    assert!(refused.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 1);
    // Another token has streams of its own.
    let (mut other, mut text) = connected(&s, &s.reader, None).await;
    // A stream given up frees its slot (once the server notices, at the next ping).
    drop(held.pop());
    let freed = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let res = open(&s, &s.agent, None).await;
            if res.status() == 200 {
                return res;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    })
    .await
    .expect("a slot should free up");
    held.push(freed);
    // The streams still work.
    file(&s, "t").await;
    read_sse(&mut other, &mut text, |t| t.contains("\"filed\"")).await;
}

#[tokio::test]
async fn a_revoked_tokens_open_stream_ends() {
    let s = TestServer::start().await;
    let (mut revoked, _) = connected(&s, &s.reader, None).await;
    let (mut kept, mut kept_text) = connected(&s, &s.agent, None).await;
    admin::revoke_token(&s.store, &s.reader, START).await.unwrap();
    // The server may reuse the token's last check for a second of its clock.
    s.advance_secs(1);
    ends(&mut revoked).await;
    assert_eq!(open(&s, &s.reader, None).await.status(), 401);
    file(&s, "t").await;
    read_sse(&mut kept, &mut kept_text, |t| t.contains("\"filed\"")).await;
}

#[tokio::test]
async fn an_expiring_tokens_stream_ends() {
    let s = TestServer::start().await;
    let token =
        admin::create_token(&s.store, "demo", &[Scope::Read], "Eve", Some(START.plus_seconds(60)), START)
            .await
            .unwrap()
            .token;
    let (mut stream, mut text) = connected(&s, &token, None).await;
    s.advance_secs(30);
    file(&s, "still open").await;
    read_sse(&mut stream, &mut text, |t| t.contains("\"filed\"")).await;
    s.advance_secs(30);
    ends(&mut stream).await;
    assert_eq!(open(&s, &token, None).await.status(), 401);
}

#[tokio::test]
async fn many_streams_get_every_event_from_one_read_each() {
    let mut hub: Option<(Arc<EventHub>, Arc<Streams>)> = None;
    let s = TestServer::start_with(|state| {
        state.max_streams_per_token = 100;
        hub = Some((state.services.events.clone(), state.streams.clone()));
    })
    .await;
    let (hub, open) = hub.unwrap();
    let mut streams = Vec::new();
    for _ in 0..40 {
        streams.push(connected(&s, &s.agent, None).await);
    }
    assert_eq!(open.open_streams(), 40);
    let reads_before = hub.feed_reads();
    let mut ids = Vec::new();
    for i in 0..15 {
        ids.push(file(&s, &format!("item {i}")).await["changeId"].clone());
    }
    let reads = futures_util::future::join_all(streams.iter_mut().map(|(res, text)| async move {
        read_sse(res, text, |t| t.matches("\"filed\"").count() == 15).await;
        data_lines(text)
    }))
    .await;
    for events in reads {
        let seqs: Vec<u64> = events.iter().map(|e| e["seq"].as_u64().unwrap()).collect();
        assert_eq!(seqs, (1..=15).collect::<Vec<_>>());
        let changes: Vec<Value> = events.iter().map(|e| e["changeId"].clone()).collect();
        assert_eq!(changes, ids);
    }
    // One read per event at most (fewer when events arrive together), not one per stream.
    let reads = hub.feed_reads() - reads_before;
    assert!((1..=15).contains(&reads), "{reads} reads for 15 events and 40 streams");
}

#[tokio::test]
async fn a_stream_far_behind_replays_then_follows() {
    let s = TestServer::start_with(|state| {
        state.rate_limit = redline_server::limit::RateLimit { per_second: 1000.0, burst: 10_000.0 };
    })
    .await;
    let (mut live, mut live_text) = connected(&s, &s.agent, None).await;
    let c = file(&s, "t").await;
    for i in 0..229 {
        s.ok(&s.ann, "updateChange", json!({"changeId": c["changeId"], "title": format!("t{i}")})).await;
    }
    read_sse(&mut live, &mut live_text, |t| t.contains("id: 230\n")).await;
    // Further back than the feed keeps (200): read from the store, then from the feed.
    let (mut behind, mut text) = connected(&s, &s.reader, Some("1")).await;
    read_sse(&mut behind, &mut text, |t| t.contains("id: 230\n")).await;
    file(&s, "u").await;
    read_sse(&mut behind, &mut text, |t| t.contains("id: 231\n")).await;
    let seqs: Vec<u64> = data_lines(&text).iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (2..=231).collect::<Vec<_>>());
    let seqs: Vec<u64> = data_lines(&live_text).iter().map(|e| e["seq"].as_u64().unwrap()).collect();
    assert_eq!(seqs, (1..=230).collect::<Vec<_>>());
}

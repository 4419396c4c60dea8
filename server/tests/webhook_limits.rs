//! Webhooks that cannot be turned against the team or the server (issue #37), with the
//! sender running in the test's server on its manual clock, so retries come due only
//! when the test moves the clock: a backlog capped (the oldest dropped and counted, as
//! `redline webhook list` says), a receiver's `Retry-After` honoured, and a Slack
//! message whose notification text mentions nobody however the agent is named.

mod common;

use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::http::{HeaderMap, HeaderValue, StatusCode};
use common::{START, TestServer};
use redline_protocol::ChangeEventType;
use redline_server::limit::RateLimit;
use redline_server::webhooks::payload::Format;
use redline_server::webhooks::sender::{self, Addresses};
use redline_server::webhooks::{self, WebhookInfo, WebhookSpec};
use serde_json::{Value, json};

/// A receiver on loopback: records each body, answers `status` and, when set,
/// `Retry-After`.
#[derive(Clone, Default)]
struct Receiver {
    got: Arc<Mutex<Vec<(u16, String)>>>,
    status: Arc<AtomicU16>,
    retry_after: Arc<Mutex<Option<String>>>,
}

impl Receiver {
    async fn start(status: u16) -> (Receiver, String) {
        let receiver = Receiver::default();
        receiver.status.store(status, Ordering::SeqCst);
        let app =
            axum::Router::new().route("/hook", axum::routing::post(receive)).with_state(receiver.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}/hook", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (receiver, url)
    }

    /// The bodies answered 200, once `n` of them came.
    async fn accepted(&self, n: usize) -> Vec<Value> {
        let accepted = || -> Vec<Value> {
            let got = self.got.lock().unwrap();
            got.iter().filter(|(s, _)| *s == 200).map(|(_, b)| serde_json::from_str(b).unwrap()).collect()
        };
        common::until(&format!("{n} deliveries accepted"), || async { accepted().len() >= n }).await;
        accepted()
    }
}

async fn receive(
    axum::extract::State(r): axum::extract::State<Receiver>,
    body: String,
) -> (StatusCode, HeaderMap) {
    let status = r.status.load(Ordering::SeqCst);
    r.got.lock().unwrap().push((status, body));
    let mut headers = HeaderMap::new();
    if let Some(wait) = r.retry_after.lock().unwrap().clone() {
        headers.insert("retry-after", HeaderValue::from_str(&wait).unwrap());
    }
    (StatusCode::from_u16(status).unwrap(), headers)
}

/// A server whose sender keeps at most `backlog` deliveries pending per webhook, and a
/// webhook to `url` for `events`.
async fn server_with_webhook(
    backlog: i64,
    url: &str,
    events: &[ChangeEventType],
    format: Format,
) -> TestServer {
    let s = TestServer::start_with(|state| {
        state.rate_limit = RateLimit::per_second(10_000.0);
        sender::spawn_with_backlog(
            state.services.clone(),
            Addresses::AllowPrivate,
            "http://127.0.0.1".into(),
            backlog,
        );
    })
    .await;
    let spec = WebhookSpec { project: "demo", url, events: events.to_vec(), format, secret: None };
    webhooks::add_webhook(&s.store, spec, Addresses::AllowPrivate, START).await.unwrap();
    s
}

async fn webhook(s: &TestServer) -> WebhookInfo {
    webhooks::list_webhooks(&s.store, Some("demo")).await.unwrap().remove(0)
}

/// `redline webhook list`'s line for the one webhook.
async fn listed(s: &TestServer) -> String {
    s.binary().run(&["webhook", "list"]).await.ok().stdout
}

async fn file(s: &TestServer, title: &str) {
    s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": title, "route": "/orders"})).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backlog_keeps_its_newest_deliveries_and_counts_the_dropped() {
    let (receiver, url) = Receiver::start(503).await;
    let s = server_with_webhook(3, &url, &[ChangeEventType::Filed], Format::Json).await;
    for i in 0..6 {
        file(&s, &format!("item {i}")).await;
    }
    let start = Instant::now();
    let capped = loop {
        let w = webhook(&s).await;
        if (w.pending, w.dropped) == (3, 3) {
            break w;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never capped: {w:?}");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    assert_eq!(capped.failed, 0);
    let line = listed(&s).await;
    assert!(line.contains("3 pending, 0 failed, 3 dropped"), "{line}");

    // The receiver is back and the retry comes due: the newest three arrive, in order.
    receiver.status.store(200, Ordering::SeqCst);
    s.advance_secs(60);
    let titles: Vec<Value> =
        receiver.accepted(3).await.iter().map(|b| b["change"]["title"].clone()).collect();
    assert_eq!(titles, [json!("item 3"), json!("item 4"), json!("item 5")]);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receivers_retry_after_is_waited_for() {
    let (receiver, url) = Receiver::start(503).await;
    *receiver.retry_after.lock().unwrap() = Some("120".into());
    let s = server_with_webhook(1_000, &url, &[ChangeEventType::Filed], Format::Json).await;
    file(&s, "item").await;
    let start = Instant::now();
    let tried = loop {
        let w = webhook(&s).await;
        if w.last_attempt.is_some() {
            break w;
        }
        assert!(start.elapsed() < Duration::from_secs(20), "never tried");
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    // Two minutes from the attempt (the clock stands still), not the back-off's second.
    assert_eq!(tried.next_attempt_at, Some(START.plus_seconds(120)));
    assert!(
        listed(&s).await.contains(&format!("next attempt {}", START.plus_seconds(120))),
        "{}",
        listed(&s).await
    );
    receiver.status.store(200, Ordering::SeqCst);
    s.advance_secs(120);
    assert_eq!(receiver.accepted(1).await[0]["change"]["title"], "item");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_slack_notification_mentions_and_links_nothing_an_agent_is_named() {
    let (receiver, url) = Receiver::start(200).await;
    let s = server_with_webhook(1_000, &url, &[ChangeEventType::Asked], Format::Slack).await;
    let out = s
        .ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "Total", "route": "/orders"}))
        .await;
    let id = out["change"]["changeId"].clone();
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let name = "<!channel> <https://evil.example|x>";
    s.ok(&s.agent, "claimChanges", json!({"projectId": s.project_id, "changeIds": [id], "claimedBy": name}))
        .await;
    let ask = json!({"changeId": id, "question": "Which?", "option": ["A"], "authorName": name});
    s.ok(&s.agent, "askChangeQuestion", ask).await;
    let message = receiver.accepted(1).await.remove(0);
    let text = message["text"].as_str().unwrap();
    assert_eq!(text, "&lt;!channel&gt; &lt;https://evil.example|x&gt; asks about #1");
    let all = message.to_string();
    assert!(!all.contains("<!channel>") && !all.contains("<https://evil.example"), "{all}");
    assert!(all.contains("<https://demo.example.com/orders|#1 Total>"), "{all}");
}

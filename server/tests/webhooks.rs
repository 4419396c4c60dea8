//! Outgoing webhooks against real `redline serve` processes and a receiver on loopback
//! that checks each request's signature the way docs/webhooks.md tells a
//! receiver to: delivery in order, retries while the receiver is down, a server killed
//! mid-delivery, several processes on one Postgres database, the Slack format, and the
//! refusal of private addresses.

mod common;

use std::collections::{HashMap, HashSet};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU16, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use common::Binary;
use hmac::{Hmac, KeyInit, Mac};
use redline_protocol::Scope;
use redline_server::{Clock, admin};
use serde_json::{Value, json};
use sha2::Sha256;

/// A secret in the `whsec_` form, as `webhook add --secret-file` reads it.
const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";

/// docs/webhooks.md's receiver-side check: the HMAC-SHA256 of "{id}.{timestamp}.{body}", keyed by
/// the base64 after `whsec_`, is one of the `webhook-signature` header's `v1,` values.
fn signature_holds(headers: &HeaderMap, body: &str) -> bool {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
    let key = BASE64.decode(SECRET.trim_start_matches("whsec_")).unwrap();
    let mut mac = Hmac::<Sha256>::new_from_slice(&key).unwrap();
    mac.update(format!("{}.{}.{}", header("webhook-id"), header("webhook-timestamp"), body).as_bytes());
    let expected = format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()));
    header("webhook-signature").split(' ').any(|s| s == expected)
}

/// One request the receiver got.
#[derive(Clone, Debug)]
struct Received {
    id: String,
    body: String,
    /// What the receiver answered.
    status: u16,
    at: Instant,
}

/// A webhook receiver on loopback: records every request, checks its signature, and
/// answers `status` (200, or 503 while "down") after `delay_ms`.
#[derive(Clone, Default)]
struct Receiver {
    /// The ids of the requests that arrived, answered or not (in the order they came).
    arrived: Arc<Mutex<Vec<String>>>,
    got: Arc<Mutex<Vec<Received>>>,
    status: Arc<AtomicU16>,
    delay_ms: Arc<AtomicU64>,
}

impl Receiver {
    async fn start() -> (Receiver, String) {
        let receiver = Receiver::default();
        receiver.status.store(200, Ordering::SeqCst);
        let app = axum::Router::new()
            .route("/hooks/secret-path", axum::routing::post(receive))
            .with_state(receiver.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr: SocketAddr = listener.local_addr().unwrap();
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (receiver, format!("http://{addr}/hooks/secret-path"))
    }

    fn got(&self) -> Vec<Received> {
        self.got.lock().unwrap().clone()
    }

    /// The requests answered 2xx, the first of each id, in the order they came.
    fn accepted(&self) -> Vec<Received> {
        let mut seen = HashSet::new();
        self.got().into_iter().filter(|r| r.status == 200 && seen.insert(r.id.clone())).collect()
    }

    async fn wait_for(&self, accepted: usize, within: Duration) -> Vec<Received> {
        let start = Instant::now();
        loop {
            let got = self.accepted();
            if got.len() >= accepted {
                return got;
            }
            assert!(
                start.elapsed() < within,
                "{} of {accepted} deliveries within {within:?}: {:?}",
                got.len(),
                self.got()
            );
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    }
}

async fn receive(State(r): State<Receiver>, headers: HeaderMap, body: String) -> StatusCode {
    assert!(signature_holds(&headers, &body), "a request whose signature does not hold: {headers:?} {body}");
    let id = headers["webhook-id"].to_str().unwrap().to_owned();
    assert_eq!(headers["idempotency-key"].to_str().unwrap(), id);
    r.arrived.lock().unwrap().push(id.clone());
    let delay = r.delay_ms.load(Ordering::SeqCst);
    if delay > 0 {
        tokio::time::sleep(Duration::from_millis(delay)).await;
    }
    let status = r.status.load(Ordering::SeqCst);
    r.got.lock().unwrap().push(Received { id, body, status, at: Instant::now() });
    StatusCode::from_u16(status).unwrap()
}

/// A store with the project `demo`, a stage, a filer and an agent; the servers and the
/// admin commands are the real binary on it.
struct Setup {
    _dir: tempfile::TempDir,
    stage_id: String,
    project_id: String,
    filer: String,
    agent: String,
    admin: String,
    /// The binary on the store.
    binary: Binary,
}

impl Setup {
    async fn new() -> Setup {
        let dir = tempfile::tempdir().unwrap();
        let store = common::open_store(dir.path()).await;
        let now = Clock::System.now();
        // No grace window: an item goes to the agents as it is filed.
        let (project_id, stage_id) = common::add_demo(&store, Some(0), now).await;
        let token = |scopes: &'static [Scope], name: &'static str| {
            let store = store.clone();
            async move { admin::create_token(&store, "demo", scopes, name, None, now).await.unwrap().token }
        };
        let filer = token(&[Scope::Read, Scope::File], "Ann").await;
        let agent = token(&[Scope::Read, Scope::Write], "agent-1").await;
        let admin = token(&[Scope::Read, Scope::Admin], "Lead").await;
        let mut store_args = vec!["--data".to_owned(), dir.path().to_str().unwrap().to_owned()];
        if let Some(url) = store.postgres_url() {
            store_args.extend(["--database-url".to_owned(), url.to_owned()]);
        }
        store.pool().close().await;
        std::fs::write(dir.path().join("secret"), format!("{SECRET}\n")).unwrap();
        Setup { _dir: dir, stage_id, project_id, filer, agent, admin, binary: Binary { store_args } }
    }

    /// Adds a webhook for `events` (allowed on loopback); returns its id.
    async fn add_webhook(&self, url: &str, events: &str, format: &str) -> String {
        let secret = self._dir.path().join("secret");
        let added = self
            .binary
            .json(&[
                "webhook",
                "add",
                "--project",
                "demo",
                url,
                "--events",
                events,
                "--format",
                format,
                "--secret-file",
                secret.to_str().unwrap(),
                "--allow-private-webhooks",
            ])
            .await;
        assert!(added.get("secret").is_none(), "a given secret is not printed back");
        added["webhookId"].as_str().unwrap().to_owned()
    }

    async fn serve(&self, allow_private: bool) -> (tokio::process::Child, String) {
        let mut args = self.binary.store_args.clone();
        if allow_private {
            args.push("--allow-private-webhooks".into());
        }
        // The throughput test files 400 items with one token as fast as the server takes
        // them: over the default 20 calls a second (burst 200) whenever filing is quick.
        args.extend(["--calls-per-second".into(), "1000".into()]);
        common::serve(&args).await
    }

    async fn call(&self, url: &str, token: &str, name: &str, data: Value) -> Value {
        let res = common::http_client()
            .post(format!("{url}/rpc/{name}"))
            .bearer_auth(token)
            .json(&data)
            .send()
            .await
            .unwrap();
        let status = res.status();
        let body: Value = res.json().await.unwrap();
        assert_eq!(status, 200, "{name}: {body}");
        body
    }

    async fn file(&self, url: &str, title: &str) -> String {
        let out = self
            .call(
                url,
                &self.filer,
                "createChange",
                json!({"stageId": self.stage_id, "title": title, "route": "/orders"}),
            )
            .await;
        out["change"]["changeId"].as_str().unwrap().to_owned()
    }
}

impl Setup {
    /// `agent-1` claims the item and asks `question`, offering Darker and Lighter.
    async fn claim_and_ask(&self, url: &str, id: &str, question: &str) {
        let claim = json!({"projectId": self.project_id, "changeIds": [id], "claimedBy": "agent-1"});
        self.call(url, &self.agent, "claimChanges", claim).await;
        let ask = json!({"changeId": id, "question": question, "option": ["Darker", "Lighter"], "authorName": "agent-1"});
        self.call(url, &self.agent, "askChangeQuestion", ask).await;
    }
}

fn bodies(got: &[Received]) -> Vec<Value> {
    got.iter().map(|r| serde_json::from_str(&r.body).unwrap()).collect()
}

/// Every event the receiver accepted, by `seq`: strictly increasing, and each id once.
fn assert_in_order_once(got: &[Received]) {
    let seqs: Vec<i64> = bodies(got).iter().map(|b| b["seq"].as_i64().unwrap()).collect();
    assert!(seqs.windows(2).all(|w| w[0] < w[1]), "out of order: {seqs:?}");
    let ids: HashSet<&str> = got.iter().map(|r| r.id.as_str()).collect();
    assert_eq!(ids.len(), got.len());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_signed_delivery_of_each_event_reaches_the_receiver_in_order() {
    let setup = Setup::new().await;
    let (receiver, hook_url) = Receiver::start().await;
    setup.add_webhook(&hook_url, "all", "json").await;
    let (_server, url) = setup.serve(true).await;
    let id = setup.file(&url, "Total is red").await;
    setup.claim_and_ask(&url, &id, "Which red?").await;
    let thread = setup.call(&url, &setup.agent, "getChange", json!({"changeId": id})).await["thread"].clone();
    let darker = thread[0]["attachments"][0]["key"].clone();
    setup
        .call(
            &url,
            &setup.filer,
            "answerChangeQuestion",
            json!({"changeId": id, "chosenOption": darker, "body": "twice as dark"}),
        )
        .await;
    let done = json!({"changeId": id, "headCommit": "a91c4e2", "branch": "main", "authorName": "agent-1", "note": "made it darker"});
    setup.call(&url, &setup.agent, "completeChange", done).await;
    setup.call(&url, &setup.filer, "verifyChange", json!({"changeId": id, "verdict": "fixed"})).await;

    let got = receiver.wait_for(6, Duration::from_secs(20)).await;
    assert_in_order_once(&got);
    let bodies = bodies(&got);
    let types: Vec<&str> = bodies.iter().map(|b| b["type"].as_str().unwrap()).collect();
    let expected = ["filed", "claimed", "asked", "answered", "done", "verified"];
    let mut rest = types.iter();
    assert!(expected.iter().all(|t| rest.any(|got| got == t)), "{types:?} lacks {expected:?} in order");
    let of = |t: &str| bodies.iter().find(|b| b["type"] == t).unwrap().clone();
    let asked = of("asked");
    assert_eq!(asked["projectId"], setup.project_id.as_str());
    assert_eq!(asked["change"]["title"], "Total is red");
    assert_eq!(asked["change"]["pageUrl"], "https://demo.example.com/orders");
    assert_eq!(asked["change"]["filedBy"], "Ann");
    assert_eq!(asked["message"]["text"], "Which red?");
    let labels: Vec<&str> = asked["message"]["options"]
        .as_array()
        .unwrap()
        .iter()
        .map(|o| o["label"].as_str().unwrap())
        .collect();
    assert_eq!(labels, ["Darker", "Lighter"]);
    assert_eq!(of("answered")["message"]["text"], "Darker: twice as dark");
    assert_eq!(of("done")["change"]["headCommit"], "a91c4e2");
    assert_eq!(of("done")["message"]["text"], "made it darker");
    assert_eq!(of("verified")["change"]["verifiedBy"], "Ann");

    // The operator sees the webhook's state; an admin token sees it without the URL's path.
    let listed = &setup.binary.json(&["webhook", "list", "--project", "demo"]).await[0];
    assert_eq!((listed["pending"].as_u64(), listed["failed"].as_u64()), (Some(0), Some(0)));
    assert_eq!(listed["lastAttempt"]["ok"], true);
    let shown = setup.call(&url, &setup.admin, "listWebhooks", json!({"projectId": setup.project_id})).await;
    let shown = &shown["webhooks"][0];
    assert_eq!(shown["target"].as_str(), hook_url.strip_suffix("/hooks/secret-path"));
    assert!(!shown.to_string().contains("secret"), "{shown}");
    assert_eq!(shown["lastAttempt"]["httpStatus"], 200);
    let res = common::http_client()
        .post(format!("{url}/rpc/listWebhooks"))
        .bearer_auth(&setup.agent)
        .json(&json!({"projectId": setup.project_id}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 403, "a token without the admin scope");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_down_for_a_while_then_up_gets_every_event_once_in_order() {
    let setup = Setup::new().await;
    let (receiver, hook_url) = Receiver::start().await;
    let webhook_id = setup.add_webhook(&hook_url, "filed", "json").await;
    let (_server, url) = setup.serve(true).await;
    receiver.status.store(503, Ordering::SeqCst);
    for i in 0..5 {
        setup.file(&url, &format!("item {i}")).await;
    }
    // Down while the first delivery is retried, and nothing after it.
    common::until("a retry", || async { receiver.got().len() >= 2 }).await;
    let tried = receiver.got();
    assert!(tried.len() >= 2, "retried while down: {tried:?}");
    assert!(
        tried.iter().all(|r| r.id == tried[0].id),
        "nothing overtakes the failing first delivery: {tried:?}"
    );
    let listed = &setup.binary.json(&["webhook", "list"]).await[0];
    assert_eq!(listed["webhookId"], webhook_id.as_str());
    assert_eq!(listed["pending"], 5);
    assert!(listed["lastAttempt"]["error"].as_str().unwrap().contains("503"), "{listed}");

    receiver.status.store(200, Ordering::SeqCst);
    let got = receiver.wait_for(5, Duration::from_secs(30)).await;
    assert_in_order_once(&got);
    let titles: Vec<String> =
        bodies(&got).iter().map(|b| b["change"]["title"].as_str().unwrap().to_owned()).collect();
    assert_eq!(titles, (0..5).map(|i| format!("item {i}")).collect::<Vec<_>>());
    // The retries were the same request: same id, same bytes.
    let first = &got[0];
    assert!(tried.iter().all(|r| r.body == first.body));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_killed_mid_delivery_sends_it_again_after_restart() {
    let setup = Setup::new().await;
    let (receiver, hook_url) = Receiver::start().await;
    setup.add_webhook(&hook_url, "filed", "json").await;
    let (mut server, url) = setup.serve(true).await;
    receiver.delay_ms.store(1_500, Ordering::SeqCst);
    for i in 0..3 {
        setup.file(&url, &format!("item {i}")).await;
    }
    // The first request is in flight (the receiver holds it): kill the sender's process.
    common::until("the first request", || async { !receiver.arrived.lock().unwrap().is_empty() }).await;
    server.start_kill().unwrap(); // SIGKILL
    server.wait().await.unwrap();
    receiver.delay_ms.store(0, Ordering::SeqCst);
    let (_server, _url) = setup.serve(true).await;
    let got = receiver.wait_for(3, Duration::from_secs(40)).await;
    assert_in_order_once(&got);
    // The request cut off by the kill came again, under the same id.
    let arrived = receiver.arrived.lock().unwrap().clone();
    assert_eq!(arrived.iter().filter(|id| **id == got[0].id).count(), 2, "{arrived:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slack_messages_hold_to_slacks_block_kit_fields() {
    let setup = Setup::new().await;
    let (receiver, hook_url) = Receiver::start().await;
    setup.add_webhook(&hook_url, "asked", "slack").await;
    let (_server, url) = setup.serve(true).await;
    let id = setup.file(&url, "Total <!channel> is *red*").await;
    setup.claim_and_ask(&url, &id, "Which <https://evil.example|red>?").await;
    let got = receiver.wait_for(1, Duration::from_secs(20)).await;
    let message: Value = serde_json::from_str(&got[0].body).unwrap();
    check_slack_message(&message);
    let text = message.to_string();
    assert!(!text.contains("<!channel>") && !text.contains("<https://evil.example"), "{text}");
    assert!(text.contains("agent-1 asks about #1"), "{text}");
    assert!(text.contains("• Darker") && text.contains("• Lighter"), "{text}");
    assert!(text.contains("<https://demo.example.com/orders|#1 Total &lt;!channel&gt; is *red*>"), "{text}");
}

/// The fields of Slack's published message payload (Block Kit reference: message
/// payloads, and the section, context and image blocks with their text objects) that
/// Slack validates, with their limits.
fn check_slack_message(message: &Value) {
    let text = message["text"].as_str().expect("a top-level text, shown in notifications");
    assert!(!text.is_empty() && text.chars().count() <= 3_000);
    let blocks = message["blocks"].as_array().expect("blocks");
    assert!(!blocks.is_empty() && blocks.len() <= 50);
    let text_object = |t: &Value| {
        assert!(matches!(t["type"].as_str(), Some("mrkdwn" | "plain_text")), "{t}");
        let s = t["text"].as_str().unwrap();
        assert!(!s.is_empty() && s.chars().count() <= 3_000, "{t}");
    };
    for block in blocks {
        let known: &[&str] = match block["type"].as_str().unwrap() {
            "section" => {
                text_object(&block["text"]);
                &["type", "text", "block_id", "fields", "accessory"]
            }
            "context" => {
                let elements = block["elements"].as_array().unwrap();
                assert!(!elements.is_empty() && elements.len() <= 10);
                elements.iter().for_each(text_object);
                &["type", "elements", "block_id"]
            }
            "image" => {
                let url = block["image_url"].as_str().unwrap();
                assert!(url.starts_with("http") && url.len() <= 3_000);
                let alt = block["alt_text"].as_str().unwrap();
                assert!(!alt.is_empty() && alt.chars().count() <= 2_000);
                &["type", "image_url", "alt_text", "title", "block_id"]
            }
            other => panic!("a block Slack does not take in messages here: {other}"),
        };
        for key in block.as_object().unwrap().keys() {
            assert!(known.contains(&key.as_str()), "field {key} is not one of a {} block's", block["type"]);
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loopback_url_is_refused_without_the_operators_leave() {
    let setup = Setup::new().await;
    let (receiver, hook_url) = Receiver::start().await;
    let refused = setup
        .binary
        .run(&["webhook", "add", "--project", "demo", &hook_url, "--events", "filed"])
        .await
        .failed()
        .stderr;
    assert!(refused.contains("refused: 127.0.0.1 is a loopback address"), "{refused}");
    let localhost = hook_url.replace("127.0.0.1", "localhost");
    let refused = setup
        .binary
        .run(&["webhook", "add", "--project", "demo", &localhost, "--events", "filed"])
        .await
        .failed()
        .stderr;
    assert!(refused.contains("is a loopback address"), "a name resolving to loopback: {refused}");
    // Added with leave, but the server was not given it: nothing is sent.
    setup.add_webhook(&hook_url, "filed", "json").await;
    let (_server, url) = setup.serve(false).await;
    setup.file(&url, "item").await;
    let start = Instant::now();
    let error = loop {
        let listed = &setup.binary.json(&["webhook", "list"]).await[0];
        if let Some(error) = listed["lastAttempt"]["error"].as_str() {
            break error.to_owned();
        }
        assert!(start.elapsed() < Duration::from_secs(10), "no attempt recorded");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(error.contains("refused: 127.0.0.1 is a loopback address"), "{error}");
    assert!(receiver.got().is_empty());
}

/// Event → receiver latency at a team's pace, and throughput draining a backlog
/// (figures for BENCHMARKS.md; nothing timed is asserted).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delivery_latency_and_throughput() {
    const PACED: usize = 100;
    const BACKLOG: usize = 300;
    let setup = Setup::new().await;
    let (receiver, hook_url) = Receiver::start().await;
    setup.add_webhook(&hook_url, "filed", "json").await;
    let (mut server, url) = setup.serve(true).await;
    let mut answered = HashMap::new();
    for i in 0..PACED {
        let title = format!("item {i}");
        setup.file(&url, &title).await;
        answered.insert(title, Instant::now());
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let got = receiver.wait_for(PACED, Duration::from_secs(60)).await;
    let mut latencies: Vec<Duration> = bodies(&got)
        .iter()
        .zip(&got)
        .map(|(b, r)| r.at.saturating_duration_since(answered[b["change"]["title"].as_str().unwrap()]))
        .collect();
    latencies.sort();
    let pct = |p: usize| latencies[(latencies.len() * p).div_ceil(100) - 1];

    // A backlog: filed while the receiver is down; then the server restarts with the
    // retries made due, and drains it.
    receiver.status.store(503, Ordering::SeqCst);
    for i in 0..BACKLOG {
        setup.file(&url, &format!("backlog {i}")).await;
    }
    server.start_kill().unwrap();
    server.wait().await.unwrap();
    let store = match setup.binary.store_args.iter().position(|a| a == "--database-url") {
        Some(at) => redline_server::Store::open_url(&setup.binary.store_args[at + 1]).await.unwrap(),
        None => redline_server::Store::open_dir(setup._dir.path()).await.unwrap(),
    };
    sqlx::query("UPDATE webhook_deliveries SET next_attempt_at = 0").execute(store.pool()).await.unwrap();
    sqlx::query("UPDATE webhooks SET sender_until = 0").execute(store.pool()).await.unwrap();
    store.pool().close().await;
    receiver.status.store(200, Ordering::SeqCst);
    let start = Instant::now();
    let (_server, _url) = setup.serve(true).await;
    let got = receiver.wait_for(PACED + BACKLOG, Duration::from_secs(120)).await;
    let drained = got.last().unwrap().at - start;
    assert_in_order_once(&got);
    let engine =
        if setup.binary.store_args.iter().any(|a| a == "--database-url") { "postgres" } else { "sqlite" };
    println!(
        "webhooks ({engine}): filing answered → receiver p50 {:.1} ms, p99 {:.1} ms over {PACED} paced filings; \
         a backlog of {BACKLOG} drained in {:.2} s ({:.0} deliveries/s, one webhook, in order)",
        pct(50).as_secs_f64() * 1e3,
        pct(99).as_secs_f64() * 1e3,
        drained.as_secs_f64(),
        BACKLOG as f64 / drained.as_secs_f64()
    );
}

/// Three server processes on one Postgres database: each event reaches the receiver
/// once, in order, whichever process wrote it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "needs Postgres: `cargo xtask test` runs it in its Postgres phase; by hand, \
            REDLINE_TEST_DATABASE_URL=postgres://… cargo test -p redline-server --tests -- --ignored postgres_"]
async fn postgres_three_instances_deliver_each_event_once() {
    let setup = Setup::new().await;
    assert!(setup.binary.store_args.iter().any(|a| a == "--database-url"), "needs REDLINE_TEST_DATABASE_URL");
    let (receiver, hook_url) = Receiver::start().await;
    setup.add_webhook(&hook_url, "filed", "json").await;
    let mut servers = Vec::new();
    for _ in 0..3 {
        servers.push(setup.serve(true).await);
    }
    for i in 0..30 {
        setup.file(&servers[i % 3].1, &format!("item {i}")).await;
    }
    let got = receiver.wait_for(30, Duration::from_secs(60)).await;
    // Every delivery's answer recorded (a sender records it after the receiver answered),
    // then nothing came twice.
    common::until("every delivery recorded", || async {
        setup.binary.json(&["webhook", "list"]).await[0]["pending"] == 0
    })
    .await;
    assert_eq!(receiver.got().len(), 30, "each event once: {:?}", receiver.got());
    assert_in_order_once(&got);
}

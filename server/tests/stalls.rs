//! Clients that stall the server, against a real one on a loopback port, over raw TCP:
//! bodies declared and not sent, or sent a trickle at a time (408, and what they held
//! given back), headers that never end, more connections than a client may hold,
//! answers never read (held within their budget, then cut off), and the event streams
//! that the send deadline must leave alone.

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use common::TestServer;
use futures_util::StreamExt;
use redline_server::limit::{Budget, Holder};
use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The header naming the client's address in these tests (`--client-ip-header`), so
/// that each client can have an address of its own on loopback.
const FORWARDED: &str = "x-forwarded-for";

/// How long a test waits at most for what must happen.
const PATIENCE: Duration = Duration::from_secs(20);

/// Opens a connection and sends a request's head (and `body`, the start of its body, if
/// any) from `client` with `token`, declaring `length` bytes of body.
async fn start_request(
    s: &TestServer,
    rpc: &str,
    token: &str,
    client: &str,
    length: usize,
    body: &[u8],
) -> TcpStream {
    let mut tcp = TcpStream::connect(s.base.trim_start_matches("http://")).await.unwrap();
    let head = format!(
        "POST /rpc/{rpc} HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {token}\r\n\
         content-type: application/json\r\ncontent-length: {length}\r\n{FORWARDED}: {client}\r\n\r\n"
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    tcp.write_all(body).await.unwrap();
    tcp
}

/// Reads until the peer closes (or resets) the connection; what came.
async fn read_to_close(tcp: &mut TcpStream) -> Vec<u8> {
    let mut got = Vec::new();
    tokio::time::timeout(PATIENCE, async {
        let mut buf = [0u8; 64 * 1024];
        while let Ok(n @ 1..) = tcp.read(&mut buf).await {
            got.extend_from_slice(&buf[..n]);
        }
    })
    .await
    .expect("the server closes the connection");
    got
}

/// The status of an answer's head in `answer`.
fn status(answer: &[u8]) -> u16 {
    let text = String::from_utf8_lossy(answer);
    text.strip_prefix("HTTP/1.1 ").and_then(|rest| rest.get(..3)).and_then(|s| s.parse().ok()).unwrap_or(0)
}

/// Waits until `held` holds, checking every few milliseconds.
async fn until(what: &str, mut held: impl FnMut() -> bool) {
    let waited = tokio::time::timeout(PATIENCE, async {
        while !held() {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    });
    waited.await.unwrap_or_else(|_| panic!("{what} never came"));
}

/// An image upload's body of `image_bytes` of base64.
fn upload(s: &TestServer, image_bytes: usize) -> String {
    let image = format!("iVBORw0KGgo{}", "A".repeat(image_bytes - 11));
    json!({"projectId": s.project_id, "contentType": "image/png", "imageBase64": image}).to_string()
}

/// An upload through reqwest from `client`, read whole: its status.
async fn upload_from(s: &TestServer, token: &str, client: &str, body: String) -> u16 {
    let res = s
        .http
        .post(format!("{}/rpc/uploadShot", s.base))
        .bearer_auth(token)
        .header(FORWARDED, client)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    let status = res.status().as_u16();
    let _ = res.bytes().await;
    status
}

/// The review's finding: requests that declare 12 MB of image and send a kilobyte. Each
/// holds only the kilobyte (before, its declared 12 MB: two filled the 16 MiB budget
/// and every other upload was answered 503), another client's upload goes through,
/// and each stalled request is answered 408 once it has paused for the idle deadline,
/// giving back what it held.
#[tokio::test]
async fn a_body_declared_and_not_sent_holds_what_arrived_and_is_answered_408() {
    let mut budget = None;
    let s = TestServer::start_with(|state| {
        state.client_ip_header = Some(FORWARDED.parse().unwrap());
        state.body_budget = Budget::for_bodies(16 << 20);
        state.deadlines.body_idle = Duration::from_secs(3);
        budget = Some(state.body_budget.clone());
    })
    .await;
    let budget = budget.unwrap();
    let start = upload(&s, 12_000_000);
    let mut stalled = Vec::new();
    for i in 0..5 {
        let client = format!("198.51.100.{i}");
        stalled.push(
            start_request(&s, "uploadShot", &s.ann, &client, start.len(), &start.as_bytes()[..1000]).await,
        );
    }
    until("the stalled requests' first kilobytes", || budget.held() == 5 * 1000).await;
    assert_eq!(budget.held(), 5 * 1000, "the bytes that arrived, not the 60 MB declared");

    assert_eq!(upload_from(&s, &s.bob, "203.0.113.9", upload(&s, 1 << 20)).await, 200);

    for mut tcp in stalled {
        let answer = read_to_close(&mut tcp).await;
        assert_eq!(status(&answer), 408, "{}", String::from_utf8_lossy(&answer));
        assert!(String::from_utf8_lossy(&answer).contains(r#""code":"timeout""#));
    }
    assert_eq!(budget.held(), 0, "the stalled requests gave back what they held");
}

/// A body that never pauses for long but comes a trickle at a time is answered 408
/// once its overall deadline (the idle one plus its length at the slowest rate) passes,
/// long before it would have come whole.
#[tokio::test]
async fn a_trickling_body_meets_its_overall_deadline() {
    let s = TestServer::start_with(|state| {
        state.client_ip_header = Some(FORWARDED.parse().unwrap());
        state.deadlines.body_idle = Duration::from_secs(1);
        state.deadlines.min_bytes_per_sec = 1000;
    })
    .await;
    let body = json!({"projectId": s.project_id, "status": ["open"], "pad": "x".repeat(1900)}).to_string();
    let mut tcp = start_request(&s, "listChanges", &s.agent, "198.51.100.1", body.len(), b"").await;
    // 2 bytes every 100 ms: 20 bytes a second, so the 2 kB would take 100 s.
    let mut sent = 0;
    let answer = loop {
        let mut buf = [0u8; 4096];
        tokio::select! {
            read = tcp.read(&mut buf) => break buf[..read.unwrap()].to_vec(),
            _ = tokio::time::sleep(Duration::from_millis(100)) => {
                assert!(sent < body.len(), "the whole body was sent");
                if tcp.write_all(&body.as_bytes()[sent..sent + 2]).await.is_err() {
                    break read_to_close(&mut tcp).await;
                }
                sent += 2;
            }
        }
    };
    assert_eq!(status(&answer), 408, "{}", String::from_utf8_lossy(&answer));
    assert!(sent < body.len() / 2, "{sent} bytes sent before the 408");
}

/// One token, or one client address, holds at most its share of the bodies in flight
/// (here a quarter of 400 kB): past it, 429 at once; another client still gets through.
#[tokio::test]
async fn one_client_holds_at_most_its_share_of_the_bodies() {
    let mut budget = None;
    let s = TestServer::start_with(|state| {
        state.client_ip_header = Some(FORWARDED.parse().unwrap());
        state.body_budget = Budget::new(400_000, 100_000, "request bodies");
        budget = Some(state.body_budget.clone());
    })
    .await;
    let budget = budget.unwrap();
    let body = upload(&s, 200_000);
    let _held =
        start_request(&s, "uploadShot", &s.ann, "198.51.100.1", body.len(), &body.as_bytes()[..90_000]).await;
    until("the first 90 kB", || budget.held() >= 90_000).await;
    // The same token from elsewhere, and another token from the same address, are over
    // the share as soon as their bodies come.
    for (token, client) in [(&s.ann, "198.51.100.2"), (&s.bob, "198.51.100.1")] {
        let mut tcp =
            start_request(&s, "uploadShot", token, client, body.len(), &body.as_bytes()[..20_000]).await;
        let answer = read_to_close(&mut tcp).await;
        assert_eq!(status(&answer), 429, "{}", String::from_utf8_lossy(&answer));
        assert!(String::from_utf8_lossy(&answer).contains("holds too many request bodies"));
    }
    assert_eq!(upload_from(&s, &s.bob, "203.0.113.9", upload(&s, 80_000)).await, 200);
}

/// Headers that never end, or a connection that never says anything, are closed at the
/// header deadline; the server goes on answering.
#[tokio::test]
async fn headers_that_stall_are_cut_off() {
    let s = TestServer::start_with(|state| state.deadlines.headers = Duration::from_millis(500)).await;
    let addr = s.base.trim_start_matches("http://");
    let mut silent = TcpStream::connect(addr).await.unwrap();
    let mut partial = TcpStream::connect(addr).await.unwrap();
    partial.write_all(b"POST /rpc/getSession HTTP/1.1\r\nhost: localhost\r\n").await.unwrap();
    assert_eq!(read_to_close(&mut silent).await, b"");
    assert_eq!(read_to_close(&mut partial).await, b"");
    s.ok(&s.agent, "getSession", json!({})).await;
}

/// A client address holds at most its connections (here 3); the next is answered 503
/// and closed, and one closing makes room again. Behind a proxy (`--client-ip-header`)
/// the cap is the proxy's to apply.
#[tokio::test]
async fn connections_per_client_address_are_capped() {
    let s = TestServer::start_with(|state| state.deadlines.connections_per_client = 3).await;
    let addr = s.base.trim_start_matches("http://").to_owned();
    let healthz = b"GET /healthz HTTP/1.1\r\nhost: localhost\r\n\r\n";
    let mut open = Vec::new();
    for _ in 0..3 {
        let mut tcp = TcpStream::connect(&addr).await.unwrap();
        tcp.write_all(healthz).await.unwrap();
        let mut buf = [0u8; 1024];
        let n = tcp.read(&mut buf).await.unwrap();
        assert_eq!(status(&buf[..n]), 200);
        open.push(tcp);
    }
    let mut over = TcpStream::connect(&addr).await.unwrap();
    let answer = read_to_close(&mut over).await;
    assert_eq!(status(&answer), 503, "{}", String::from_utf8_lossy(&answer));
    drop(open.pop());
    let served = tokio::time::timeout(PATIENCE, async {
        loop {
            let mut tcp = TcpStream::connect(&addr).await.unwrap();
            let _ = tcp.write_all(healthz).await;
            let mut buf = [0u8; 1024];
            if let Ok(n) = tcp.read(&mut buf).await
                && status(&buf[..n]) == 200
            {
                return;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
    });
    served.await.expect("a connection is served once another closed");

    let proxied = TestServer::start_with(|state| {
        state.deadlines.connections_per_client = 1;
        state.client_ip_header = Some(FORWARDED.parse().unwrap());
    })
    .await;
    let _first = TcpStream::connect(proxied.base.trim_start_matches("http://")).await.unwrap();
    proxied.ok(&proxied.agent, "getSession", json!({})).await;
}

/// The review's second finding: 200 `getChange` calls of one token on a large item,
/// whose answers (7 MB each) are never read. The answers held at once stay within the
/// token's share of the answer budget (the rest are answered 429 before they are sent), another client
/// is served meanwhile, and each unread answer is cut off at the send deadline, giving
/// back what it held.
#[tokio::test]
async fn unread_answers_are_held_within_their_budget_and_cut_off() {
    let mut budget = None;
    let s = TestServer::start_with(|state| {
        state.client_ip_header = Some(FORWARDED.parse().unwrap());
        state.rate_limit = redline_server::limit::RateLimit { per_second: 1e6, burst: 1e6 };
        state.deadlines.send_idle = Duration::from_secs(2);
        state.answer_budget = Budget::new(48 << 20, 12 << 20, "answers");
        budget = Some(state.answer_budget.clone());
    })
    .await;
    let budget = budget.unwrap();
    // An item whose thread's first page is 100 replies of 20,000 four-byte characters.
    let filed = s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "a long thread"})).await;
    let id = filed["change"]["changeId"].as_str().unwrap().to_owned();
    s.advance_secs(61);
    let reply = json!({"changeId": id, "body": "😀".repeat(20_000), "authorName": "agent"});
    for _ in 0..100 {
        s.ok(&s.agent, "replyToChange", reply.clone()).await;
    }
    let read = json!({"changeId": id, "messageLimit": 100}).to_string();
    let (code, answer) = s.post(&s.agent, "getChange", read.clone()).await;
    assert_eq!(code, 200);
    let whole = answer.to_string().len();
    println!("getChange answers {whole} bytes");
    assert!(whole > 7_000_000, "{whole} bytes: not large enough to stall on loopback");

    // What the calling client holds, looked at every millisecond while the calls are
    // made and cut off.
    let (most_held, stop) = (Arc::new(AtomicUsize::new(0)), Arc::new(AtomicBool::new(false)));
    let watcher = tokio::spawn({
        let (watched, most_held, stop) = (budget.clone(), most_held.clone(), stop.clone());
        async move {
            while !stop.load(Ordering::Relaxed) {
                most_held.fetch_max(watched.held_by(Holder::Client("198.51.100.1")), Ordering::Relaxed);
                tokio::time::sleep(Duration::from_millis(1)).await;
            }
        }
    });
    let calls = (0..200).map(|_| {
        let (s, read) = (&s, &read);
        async move {
            let socket = tokio::net::TcpSocket::new_v4().unwrap();
            // A small window: what the kernels buffer is not what is measured here.
            socket.set_recv_buffer_size(4096).unwrap();
            let mut tcp = socket.connect(s.base.trim_start_matches("http://").parse().unwrap()).await.unwrap();
            let head = format!(
                "POST /rpc/getChange HTTP/1.1\r\nhost: localhost\r\nauthorization: Bearer {}\r\n\
                 content-type: application/json\r\ncontent-length: {}\r\n{FORWARDED}: 198.51.100.1\r\n\r\n{read}",
                s.agent,
                read.len()
            );
            tcp.write_all(head.as_bytes()).await.unwrap();
            let mut buf = [0u8; 12];
            tcp.read_exact(&mut buf).await.unwrap();
            (status(&buf), tcp)
        }
    });
    // Eight at a time: the calls are made, whatever comes of their answers.
    let answered: Vec<_> = futures_util::stream::iter(calls).buffer_unordered(8).collect().await;
    let sent = answered.iter().filter(|(status, _)| *status == 200).count();
    let refused = answered.iter().filter(|(status, _)| *status == 429).count();
    let statuses: Vec<u16> = answered.iter().map(|(status, _)| *status).collect();
    assert_eq!(sent + refused, 200, "every call is answered 200 or 429: {statuses:?}");
    assert!(refused > 0, "{sent} answers sent and none refused");

    // Another client reads the item whole meanwhile.
    let other = s.http.post(format!("{}/rpc/getChange", s.base)).bearer_auth(&s.reader);
    let other = other.header(FORWARDED, "203.0.113.9").body(read.clone()).send().await.unwrap();
    assert_eq!(other.status(), 200);
    assert_eq!(other.bytes().await.unwrap().len(), whole);

    // The answers sent but never read are cut off short of their length, giving back
    // what they held.
    until("every answer's bytes given back", || budget.held() == 0).await;
    for (_, mut tcp) in answered.into_iter().filter(|(status, _)| *status == 200) {
        let rest = read_to_close(&mut tcp).await;
        assert!(rest.len() + 12 < whole, "an answer came whole");
    }
    stop.store(true, Ordering::Relaxed);
    watcher.await.unwrap();
    let most = most_held.load(Ordering::Relaxed);
    println!("{sent} answers sent, {refused} refused; at most {most} bytes held at once");
    assert!(most <= 12 << 20, "{most} bytes of answers held by one client");
    assert!(200 * whole > 48 << 20, "unbounded, the unread answers would have held more than the budget");
}

/// An idle event stream whose client reads it is never cut off by the send deadline
/// (here 300 ms, with a ping every 100 ms): it only arms while a write waits on the
/// client. After many deadlines' worth of pings, the stream still carries events.
#[tokio::test]
async fn a_healthy_idle_event_stream_outlives_the_send_deadline() {
    let s = TestServer::start_with(|state| {
        state.deadlines.send_idle = Duration::from_millis(300);
        state.keep_alive = Duration::from_millis(100);
    })
    .await;
    let mut res = common::connect(&s, None, false).await;
    let mut text = String::new();
    common::read_sse(&mut res, &mut text, |t| t.matches("ping").count() >= 15).await;
    s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "after the pings"})).await;
    common::read_sse(&mut res, &mut text, |t| t.contains("\"type\":\"filed\"")).await;
}

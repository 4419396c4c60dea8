//! Lists never read captures: a queue of items with captures of megabytes, listed again
//! and again, leaves the server's memory where it was. Alone in its binary, so that the
//! process's resident size is the server's and this test's.

mod common;

use common::TestServer;
use serde_json::{Value, json};

/// Items, each with a capture of about 4.4 MB (500 elements of 2,100 four-byte
/// characters: nearly `createChange`'s 5 MiB body cap), and lists of them.
const ITEMS: usize = 20;
const LISTS: usize = 200;
/// How much the resident size (and its peak) may grow over the lists. One list reading
/// the captures would read 80 MB.
const GROWTH_MAX_KIB: u64 = 32 * 1024;

/// `VmRSS` and `VmHWM` of this process, in KiB.
fn resident_kib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let field = |name: &str| -> u64 {
        let line = status.lines().find(|l| l.starts_with(name)).unwrap();
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn big_capture() -> Value {
    let c = "𝄞";
    let element = json!({"text": c.repeat(500), "name": c.repeat(500), "cssPath": c.repeat(500),
                         "testId": c.repeat(200), "sourceAnchor": c.repeat(200),
                         "componentTestId": c.repeat(200), "tag": "span"});
    json!({"stroke": vec![json!({"x": 1.5, "y": 2.5}); 10_000], "elements": vec![element; 500]})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn listing_a_queue_of_large_captures_again_and_again_keeps_memory_flat() {
    let s = TestServer::start_with(|state| {
        state.rate_limit = redline_server::limit::RateLimit { per_second: 1e9, burst: 1e9 };
    })
    .await;
    let body = json!({"stageId": s.stage_id, "title": "big", "capture": big_capture()});
    let bytes = body["capture"].to_string().len();
    assert!(bytes > 4_000_000, "{bytes}");
    for _ in 0..ITEMS {
        s.ok(&s.ann, "createChange", body.clone()).await;
    }
    drop(body);
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let list = json!({"projectId": s.project_id, "limit": 200});
    // One list first, so what every list needs once (statements, pool) is counted before.
    s.ok(&s.agent, "listChanges", list.clone()).await;
    let (rss, peak) = resident_kib();
    for _ in 0..LISTS {
        let out = s.ok(&s.agent, "listChanges", list.clone()).await;
        assert_eq!(out["changes"].as_array().unwrap().len(), ITEMS);
        assert_eq!(out["changes"][0]["elementCount"], 500);
    }
    let (rss_after, peak_after) = resident_kib();
    println!(
        "{LISTS} lists of {ITEMS} items with {:.1} MB captures: VmRSS {rss} → {rss_after} KiB, VmHWM {peak} → {peak_after} KiB",
        bytes as f64 / 1e6
    );
    assert!(rss_after.saturating_sub(rss) <= GROWTH_MAX_KIB, "VmRSS grew from {rss} to {rss_after} KiB");
    assert!(peak_after.saturating_sub(peak) <= GROWTH_MAX_KIB, "VmHWM grew from {peak} to {peak_after} KiB");
}

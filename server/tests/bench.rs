//! Queue measurements over a real listener (numbers are printed, never asserted):
//! `cargo test -p redline-server --release --test bench -- --ignored --nocapture`
//! (SQLite), with `REDLINE_TEST_DATABASE_URL=postgres://…` for Postgres.

mod common;

use std::time::{Duration, Instant};

use common::TestServer;
use serde_json::json;

fn report(what: &str, n: usize, mut times: Vec<Duration>, wall: Duration) {
    times.sort_unstable();
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "| {what} | {n} | {:.0}/s | {:.2} ms | {:.2} ms |",
        n as f64 / wall.as_secs_f64(),
        ms(times[times.len() / 2]),
        ms(times[times.len() * 9 / 10]),
    );
}

async fn timed<F: Future>(f: F) -> (Duration, F::Output) {
    let start = Instant::now();
    let out = f.await;
    (start.elapsed(), out)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --ignored --nocapture"]
async fn queue_throughput_and_latency() {
    // Measure the queue, not the per-token rate limit.
    let s = TestServer::start_with(|state| {
        state.rate_limit = redline_server::limit::RateLimit { per_second: 1e9, burst: 1e9 };
    })
    .await;
    let engine = if std::env::var("REDLINE_TEST_DATABASE_URL").is_ok_and(|u| !u.is_empty()) {
        "postgres"
    } else {
        "sqlite"
    };
    println!("\nengine: {engine}\n\n| operation | n | throughput | median | p90 |\n|---|---|---|---|---|");
    let file = |i: usize| {
        json!({"stageId": s.stage_id, "title": format!("item {i}"), "route": "/orders",
        "capture": {"stroke": (0..200).map(|k| json!({"x": k, "y": k})).collect::<Vec<_>>(),
                    "elements": (0..20).map(|k| json!({"testId": format!("el-{k}"), "tag": "div"})).collect::<Vec<_>>()}})
    };

    let n = 300;
    let start = Instant::now();
    let mut times = Vec::new();
    for i in 0..n {
        times.push(timed(s.ok(&s.ann, "createChange", file(i))).await.0);
    }
    report("createChange, one client", n, times, start.elapsed());

    let start = Instant::now();
    let tasks = (0..8).map(|c| {
        let s = &s;
        async move {
            let mut times = Vec::new();
            for i in 0..n / 8 {
                times.push(timed(s.ok(&s.bob, "createChange", file(1000 + c * 100 + i))).await.0);
            }
            times
        }
    });
    let times: Vec<Duration> = futures_util::future::join_all(tasks).await.into_iter().flatten().collect();
    report("createChange, 8 clients", times.len(), times, start.elapsed());

    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    s.ok(&s.bob, "releaseChanges", json!({"stageId": s.stage_id})).await;

    let start = Instant::now();
    let mut times = Vec::new();
    for _ in 0..100 {
        let list = json!({"projectId": s.project_id, "limit": 50});
        times.push(timed(s.ok(&s.agent, "listChanges", list)).await.0);
    }
    report("listChanges (50 of ~600)", 100, times, start.elapsed());

    let start = Instant::now();
    let tasks = (0..4).map(|c| {
        let s = &s;
        async move {
            let mut times = Vec::new();
            for i in 0..50 {
                let id = format!("#{}", 1 + c * 50 + i);
                let claim =
                    json!({"projectId": s.project_id, "changeIds": [id], "claimedBy": format!("agent-{c}")});
                times.push(timed(s.ok(&s.agent, "claimChanges", claim)).await.0);
            }
            times
        }
    });
    let times: Vec<Duration> = futures_util::future::join_all(tasks).await.into_iter().flatten().collect();
    report("claimChanges one item, 4 agents", times.len(), times, start.elapsed());

    let start = Instant::now();
    let mut times = Vec::new();
    for i in 0..100 {
        let id = format!("#{}", 1 + i);
        times.push(timed(s.ok(&s.agent, "getChange", json!({"changeId": id}))).await.0);
    }
    report("getChange", 100, times, start.elapsed());
}

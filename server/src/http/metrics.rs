//! `GET /healthz` and `GET /metrics` (Prometheus' text exposition format, version
//! 0.0.4), for whoever runs the server. Neither needs a token, so neither says anything
//! but counts and timings: no token, project, name or anything filed is ever in them.
//! RPCs are labelled with the names the server serves (any other name counts as
//! `unknown`), so a caller cannot add series.
//!
//! Neither lets a caller without a token make the store work: `/healthz` asks it a
//! trivial query at most once a second ([`HEALTH_REUSE`]) however often it is called,
//! and `/metrics`, which counts over the whole store, is served only on a listener of
//! its own on a loopback address (`redline serve --metrics-addr`), never on the API's.

use std::collections::BTreeMap;
use std::fmt::Write;
use std::sync::Mutex;
use std::sync::atomic::{AtomicI64, Ordering};
use std::sync::{Arc, LazyLock};
use std::time::{Duration, Instant};

use axum::extract::{Request, State};
use axum::http::{StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use redline_protocol::ChangeStatus;
use sqlx::Row;

use crate::AppState;
use crate::http::rpc::with_served_rpcs;
use crate::ops::stats;

/// How long `/healthz` and `/metrics` wait for the store.
const STORE_TIMEOUT: Duration = Duration::from_secs(2);

/// How long `/healthz` answers with what the store last said.
pub const HEALTH_REUSE: Duration = Duration::from_secs(1);

/// The latency histogram's upper bounds, in seconds.
const BUCKETS: [f64; 12] = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0];

/// The time-to-done histogram's upper bounds, in seconds: a minute to a week.
const TO_DONE_BUCKETS: [i64; 8] = [60, 300, 900, 3_600, 14_400, 86_400, 259_200, 604_800];

/// The content type of the text exposition format.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The names of the RPCs the server serves.
static RPC_NAMES: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
    use redline_protocol::*;
    macro_rules! names {
        ($($op:ty),* ; anonymous: $($anon:ty),* $(,)?) => {
            vec![$(<$op as Rpc>::NAME,)* $(<$anon as Rpc>::NAME,)*]
        };
    }
    with_served_rpcs!(names)
});

/// What the process counts.
#[derive(Debug, Default)]
pub struct Metrics {
    rpcs: Mutex<BTreeMap<&'static str, RpcStats>>,
    streams: Arc<AtomicI64>,
    /// When `/healthz` last asked the store, and whether it answered. Held while asking,
    /// so calls that come meanwhile wait for that answer rather than ask again.
    health: tokio::sync::Mutex<Option<(Instant, bool)>>,
}

#[derive(Debug, Default)]
struct RpcStats {
    /// Answers by status class: 1xx … 5xx.
    by_class: [u64; 5],
    /// Calls that took at most `BUCKETS[i]` (not cumulative here).
    buckets: [u64; BUCKETS.len()],
    count: u64,
    seconds: f64,
}

impl Metrics {
    /// Counts an answered RPC.
    pub fn record_rpc(&self, name: &str, status: StatusCode, took: Duration) {
        let name = RPC_NAMES.iter().copied().find(|n| *n == name).unwrap_or("unknown");
        let seconds = took.as_secs_f64();
        let mut rpcs = self.rpcs.lock().expect("metrics lock");
        let stats = rpcs.entry(name).or_default();
        let class = usize::from(status.as_u16() / 100).clamp(1, 5) - 1;
        stats.by_class[class] += 1;
        if let Some(bucket) = BUCKETS.iter().position(|le| seconds <= *le) {
            stats.buckets[bucket] += 1;
        }
        stats.count += 1;
        stats.seconds += seconds;
    }

    /// Counts an event stream as open until the guard is dropped.
    pub fn stream_opened(&self) -> OpenStream {
        self.streams.fetch_add(1, Ordering::Relaxed);
        OpenStream(self.streams.clone())
    }

    /// The exposition of what was counted, with what the store holds if it answered.
    fn render(&self, stored: Option<&Stored>) -> String {
        let mut out = String::new();
        let rpcs = self.rpcs.lock().expect("metrics lock");
        out.push_str("# HELP redline_rpc_requests_total RPC calls answered, by RPC and status class.\n");
        out.push_str("# TYPE redline_rpc_requests_total counter\n");
        for (name, stats) in rpcs.iter() {
            for (class, n) in stats.by_class.iter().enumerate().filter(|(_, n)| **n > 0) {
                let _ = writeln!(
                    out,
                    "redline_rpc_requests_total{{rpc=\"{name}\",status=\"{}xx\"}} {n}",
                    class + 1
                );
            }
        }
        out.push_str("# HELP redline_rpc_duration_seconds Time from a call's arrival to its answer.\n");
        out.push_str("# TYPE redline_rpc_duration_seconds histogram\n");
        for (name, stats) in rpcs.iter() {
            let mut cumulative = 0;
            for (le, n) in BUCKETS.iter().zip(stats.buckets) {
                cumulative += n;
                let _ = writeln!(
                    out,
                    "redline_rpc_duration_seconds_bucket{{rpc=\"{name}\",le=\"{le}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                out,
                "redline_rpc_duration_seconds_bucket{{rpc=\"{name}\",le=\"+Inf\"}} {}",
                stats.count
            );
            let _ = writeln!(out, "redline_rpc_duration_seconds_sum{{rpc=\"{name}\"}} {}", stats.seconds);
            let _ = writeln!(out, "redline_rpc_duration_seconds_count{{rpc=\"{name}\"}} {}", stats.count);
        }
        drop(rpcs);
        out.push_str("# HELP redline_event_streams_open Event streams open on this process.\n");
        out.push_str("# TYPE redline_event_streams_open gauge\n");
        let _ = writeln!(out, "redline_event_streams_open {}", self.streams.load(Ordering::Relaxed));
        out.push_str("# HELP redline_store_up Whether the store answered this scrape's query.\n");
        out.push_str("# TYPE redline_store_up gauge\n");
        let _ = writeln!(out, "redline_store_up {}", u8::from(stored.is_some()));
        if let Some(stored) = stored {
            out.push_str("# HELP redline_changes Items in the store by status, over all projects.\n");
            out.push_str("# TYPE redline_changes gauge\n");
            for status in ChangeStatus::ALL {
                let n = stored.changes.get(status.as_str()).copied().unwrap_or(0);
                let _ = writeln!(out, "redline_changes{{status=\"{}\"}} {n}", status.as_str());
            }
            render_loop(&mut out, stored);
        }
        out
    }
}

/// What `/metrics` reads from the store at each scrape, over all projects.
#[derive(Debug)]
struct Stored {
    /// Items per status.
    changes: BTreeMap<String, i64>,
    /// The loop's counts (`getStats`'s, over every item ever filed).
    counts: stats::Counts,
    to_done: stats::TimeToDone,
}

/// The loop's numbers: `getStats`'s counts over the whole store (gauges: an item sent
/// back is done no more) and the time to done of the items done now.
fn render_loop(out: &mut String, stored: &Stored) {
    let c = &stored.counts;
    for (name, help, n) in [
        ("redline_items_filed", "Items filed", c.filed),
        ("redline_items_done", "Items done now", c.done),
        ("redline_items_dismissed", "Items dismissed now", c.dismissed),
        ("redline_items_verified", "Items verified fixed now", c.verified),
        ("redline_items_still_wrong", "Items a still_wrong verdict sent back at least once", c.still_wrong),
        ("redline_questions", "Questions agents asked", c.questions),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}, over all projects.\n# TYPE {name} gauge\n{name} {n}");
    }
    let t = &stored.to_done;
    out.push_str("# HELP redline_time_to_done_seconds From filing to done, of the items done now.\n");
    out.push_str("# TYPE redline_time_to_done_seconds histogram\n");
    for (le, n) in TO_DONE_BUCKETS.iter().zip(&t.within) {
        let _ = writeln!(out, "redline_time_to_done_seconds_bucket{{le=\"{le}\"}} {n}");
    }
    let _ = writeln!(out, "redline_time_to_done_seconds_bucket{{le=\"+Inf\"}} {}", t.count);
    let _ = writeln!(out, "redline_time_to_done_seconds_sum {}", t.sum_ms as f64 / 1000.0);
    let _ = writeln!(out, "redline_time_to_done_seconds_count {}", t.count);
}

/// Reads [`Stored`]: three statements.
async fn read_stored(pool: &sqlx::AnyPool) -> Result<Stored, sqlx::Error> {
    let rows =
        sqlx::query("SELECT status, COUNT(*) AS n FROM changes GROUP BY status").fetch_all(pool).await?;
    let changes = rows
        .iter()
        .map(|row| Ok((row.try_get::<String, _>("status")?, row.try_get::<i64, _>("n")?)))
        .collect::<Result<BTreeMap<_, _>, sqlx::Error>>()?;
    let bounds_ms = TO_DONE_BUCKETS.map(|s| s * 1000);
    Ok(Stored {
        changes,
        counts: stats::loop_counts(pool).await?,
        to_done: stats::time_to_done(pool, &bounds_ms).await?,
    })
}

/// An open event stream, counted until dropped.
#[derive(Debug)]
pub struct OpenStream(Arc<AtomicI64>);

impl Drop for OpenStream {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Middleware of `POST /rpc/{name}`: counts each call and how long it took.
pub async fn track_rpc(State(state): State<AppState>, request: Request, next: Next) -> Response {
    let name = request.uri().path().strip_prefix("/rpc/").unwrap_or("").to_owned();
    let started = Instant::now();
    let response = next.run(request).await;
    state.metrics.record_rpc(&name, response.status(), started.elapsed());
    response
}

/// `GET /healthz`: `200 ok` when the store answered a trivial query (in the last
/// [`HEALTH_REUSE`]), else 503.
pub async fn healthz(State(state): State<AppState>) -> Response {
    let mut last = state.metrics.health.lock().await;
    let up = match *last {
        Some((at, up)) if at.elapsed() < HEALTH_REUSE => up,
        _ => {
            let up = store_answers(&state.services.store).await;
            *last = Some((Instant::now(), up));
            up
        }
    };
    drop(last);
    if up {
        (StatusCode::OK, "ok\n").into_response()
    } else {
        (StatusCode::SERVICE_UNAVAILABLE, "unavailable: the store does not answer\n").into_response()
    }
}

/// Whether the store answers `SELECT 1` within [`STORE_TIMEOUT`].
async fn store_answers(store: &crate::Store) -> bool {
    let answered = tokio::time::timeout(STORE_TIMEOUT, sqlx::query("SELECT 1").execute(store.pool())).await;
    let cause = match answered {
        Ok(Ok(_)) => return true,
        Ok(Err(e)) => e.to_string(),
        Err(_) => "no answer within 2 s".to_owned(),
    };
    tracing::warn!(%cause, "health check: the store did not answer");
    false
}

/// `--metrics-addr`: the address `/metrics` is served on, which must be a loopback one
/// (what it counts is the operator's, not the API's callers').
pub fn loopback_only(addr: &str) -> Result<std::net::SocketAddr, String> {
    let addr: std::net::SocketAddr = addr.parse().map_err(|e| format!("{addr:?}: {e}"))?;
    if addr.ip().is_loopback() {
        Ok(addr)
    } else {
        Err(format!("{addr} is not a loopback address: /metrics is served on 127.0.0.1 or [::1] only"))
    }
}

/// `GET /metrics`.
pub async fn handle(State(state): State<AppState>) -> Response {
    let stored = match tokio::time::timeout(STORE_TIMEOUT, read_stored(state.services.store.pool())).await {
        Ok(Ok(stored)) => Some(stored),
        Ok(Err(e)) => {
            tracing::warn!(error = %e, "metrics: reading the queue");
            None
        }
        Err(_) => {
            tracing::warn!("metrics: the store did not answer within 2 s");
            None
        }
    };
    let mut text = state.metrics.render(stored.as_ref());
    render_held(&mut text, &state);
    ([(header::CONTENT_TYPE, CONTENT_TYPE)], text).into_response()
}

/// The bytes requests in flight hold now of the server's budgets (`limit::Budget`).
fn render_held(out: &mut String, state: &AppState) {
    for (name, help, budget) in [
        ("redline_body_bytes_held", "Bytes of request bodies held now.", &state.body_budget),
        ("redline_answer_bytes_held", "Bytes of answers held now, until sent.", &state.answer_budget),
    ] {
        let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} gauge\n{name} {}", budget.held());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_rpc_is_counted_once_in_its_class_and_bucket_and_unknown_names_add_no_series() {
        let m = Metrics::default();
        m.record_rpc("getSession", StatusCode::OK, Duration::from_millis(3));
        m.record_rpc("getSession", StatusCode::UNAUTHORIZED, Duration::from_secs(60));
        m.record_rpc("<script>\"", StatusCode::NOT_FOUND, Duration::from_micros(10));
        let text = m.render(None);
        for line in [
            "redline_rpc_requests_total{rpc=\"getSession\",status=\"2xx\"} 1",
            "redline_rpc_requests_total{rpc=\"getSession\",status=\"4xx\"} 1",
            "redline_rpc_duration_seconds_bucket{rpc=\"getSession\",le=\"0.0025\"} 0",
            "redline_rpc_duration_seconds_bucket{rpc=\"getSession\",le=\"0.005\"} 1",
            "redline_rpc_duration_seconds_bucket{rpc=\"getSession\",le=\"5\"} 1",
            "redline_rpc_duration_seconds_bucket{rpc=\"getSession\",le=\"+Inf\"} 2",
            "redline_rpc_duration_seconds_count{rpc=\"getSession\"} 2",
            "redline_rpc_requests_total{rpc=\"unknown\",status=\"4xx\"} 1",
            "redline_store_up 0",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from\n{text}");
        }
        assert!(!text.contains("script"));
        assert!(!text.contains("redline_changes{"), "no queue sizes when the store did not answer");
    }

    #[test]
    fn metrics_are_served_on_loopback_addresses_only() {
        assert_eq!(loopback_only("127.0.0.1:9090").unwrap().port(), 9090);
        assert!(loopback_only("[::1]:9090").is_ok());
        for refused in ["0.0.0.0:9090", "[::]:9090", "192.0.2.1:9090"] {
            assert!(loopback_only(refused).unwrap_err().contains("not a loopback address"), "{refused}");
        }
        assert!(loopback_only("localhost").is_err());
    }

    #[test]
    fn the_loop_is_counted_over_all_projects_with_time_to_done_in_seconds() {
        let stored = Stored {
            changes: BTreeMap::from([("done".to_owned(), 2)]),
            counts: stats::Counts { filed: 5, done: 2, still_wrong: 1, questions: 3, ..Default::default() },
            to_done: stats::TimeToDone { within: vec![0, 1, 1, 2, 2, 2, 2, 2], count: 2, sum_ms: 1_500_000 },
        };
        let text = Metrics::default().render(Some(&stored));
        for line in [
            "redline_changes{status=\"done\"} 2",
            "redline_items_filed 5",
            "redline_items_done 2",
            "redline_items_dismissed 0",
            "redline_items_still_wrong 1",
            "redline_questions 3",
            "# TYPE redline_time_to_done_seconds histogram",
            "redline_time_to_done_seconds_bucket{le=\"60\"} 0",
            "redline_time_to_done_seconds_bucket{le=\"300\"} 1",
            "redline_time_to_done_seconds_bucket{le=\"3600\"} 2",
            "redline_time_to_done_seconds_bucket{le=\"+Inf\"} 2",
            "redline_time_to_done_seconds_sum 1500",
            "redline_time_to_done_seconds_count 2",
        ] {
            assert!(text.lines().any(|l| l == line), "{line} missing from\n{text}");
        }
    }
}

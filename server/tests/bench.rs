//! The changes server's benchmarks (numbers are printed, never asserted), each beside
//! an anchor measured in the same run on the same machine:
//! `cargo test -p redline-server --release --test bench -- --ignored --nocapture`
//! (SQLite), with `REDLINE_TEST_DATABASE_URL=postgres://…` for Postgres.
//! Server and clients share the process and its 2 worker threads. Beside them, the
//! agent's source anchors followed through a long git history (`anchors_follow_the_code`).

mod common;

use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{START, TestServer};
use redline_protocol::Scope;
use redline_server::admin;
use serde_json::{Value, json};
use sqlx::{Connection, Executor};

/// Filers filing at once (each with its own token), filings in all, and filings per
/// "send now".
const FILERS: usize = 64;
const FILINGS: usize = 4000;
const BATCH: usize = 5;
/// Agents claiming at once, and claims each.
const AGENTS: usize = 50;
const CLAIMS_EACH: usize = 40;
const SUBSCRIBERS: usize = 1000;
/// Items one filer files back to back, never releasing them: one batch, all held.
const LONG_BATCH: usize = 5000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --ignored --nocapture"]
async fn changes_server() {
    let s = TestServer::start_with(|state| {
        // Measure the queue, not the per-token rate limit, the per-token cap on streams
        // (the fan-out's streams share one token), the connections of one address or
        // keep-alive pings.
        state.rate_limit = redline_server::limit::RateLimit { per_second: 1e9, burst: 1e9 };
        state.max_streams_per_token = SUBSCRIBERS;
        state.deadlines.connections_per_client = 2 * SUBSCRIBERS;
        state.keep_alive = Duration::from_secs(3600);
    })
    .await;
    println!("\nengine: {}", engine(&s).await);
    let (commits, commit_latency, commit_p99) = bare_sqlite_commits("FULL", 500).await;
    let (commits_normal, _, _) = bare_sqlite_commits("NORMAL", 5000).await;
    println!(
        "anchor: bare SQLite single-row commits, synchronous=FULL: {commits:.0}/s, p50 {commit_latency:.2} ms, p99 {commit_p99:.2} ms"
    );
    println!("anchor: bare SQLite single-row commits, synchronous=NORMAL: {commits_normal:.0}/s");

    let tokens = filer_tokens(&s).await;
    let (_, took) = file_in_batches(&s, &tokens, FILINGS).await;
    let filed = FILINGS as f64 / took.as_secs_f64();
    println!(
        "createChange, {FILERS} filers at once in batches of {BATCH}, {FILINGS} filings: {filed:.0}/s = {:.1}× the FULL anchor, {:.2}× the NORMAL one",
        filed / commits,
        filed / commits_normal
    );

    let claims = claim_latency(&s, &tokens).await;
    println!(
        "claimChanges (one item each), {AGENTS} agents × {CLAIMS_EACH} back to back: p50 {:.2} ms, p99 {:.2} ms = {:.1}× the FULL commit p50",
        ms(percentile(&claims, 0.5)),
        ms(percentile(&claims, 0.99)),
        ms(percentile(&claims, 0.99)) / commit_latency
    );
    let bursts = claim_burst_latency(&s, &tokens).await;
    println!(
        "claimChanges (one item each), {AGENTS} agents at the same moment, {CLAIMS_EACH} rounds: p50 {:.2} ms, p99 {:.2} ms = {:.1}× the FULL commit p50",
        ms(percentile(&bursts, 0.5)),
        ms(percentile(&bursts, 0.99)),
        ms(percentile(&bursts, 0.99)) / commit_latency
    );

    let one = event_fan_out(&s, 1).await;
    let many = event_fan_out(&s, SUBSCRIBERS).await;
    println!(
        "one event to {SUBSCRIBERS} subscribers: p50 {:.1} ms, p99 {:.1} ms, max {:.1} ms = {:.1}× the p99 to 1 subscriber ({:.1} ms)",
        ms(percentile(&many, 0.5)),
        ms(percentile(&many, 0.99)),
        ms(percentile(&many, 1.0)),
        ms(percentile(&many, 0.99)) / ms(percentile(&one, 0.99)),
        ms(percentile(&one, 0.99)),
    );
}

/// One filer files `LONG_BATCH` items back to back, each inside the grace window of
/// the one before (the manual clock stands still), so every item stays held in one
/// batch; the rate of the first second against that of the last.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --ignored --nocapture"]
async fn long_batch() {
    let s = TestServer::start_with(|state| {
        state.rate_limit = redline_server::limit::RateLimit { per_second: 1e9, burst: 1e9 };
    })
    .await;
    println!("\nengine: {}", engine(&s).await);
    let (commits, _, _) = bare_sqlite_commits("FULL", 500).await;
    println!("anchor: bare SQLite single-row commits, synchronous=FULL: {commits:.0}/s");
    let bodies: Vec<String> =
        (0..LONG_BATCH).map(|i| filing(&s, &uuid::Uuid::new_v4().to_string(), i)).collect();
    let start = Instant::now();
    let mut done = Vec::with_capacity(LONG_BATCH);
    for body in bodies {
        post(&s, &s.ann, "createChange", body).await;
        done.push(start.elapsed());
    }
    let total = *done.last().unwrap();
    let second = Duration::from_secs(1);
    let first = done.iter().filter(|&&t| t <= second).count();
    let last = done.iter().filter(|&&t| t + second > total).count();
    let held = s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id, "limit": 1})).await;
    assert_eq!(held["changes"][0]["held"], true, "the batch is still held");
    println!(
        "long batch: one filer, {LONG_BATCH} items held together, back to back: {:.0}/s overall; \
         {first}/s in the first second, {last}/s in the last = {:.2}× the first ({:.2}× the FULL anchor at the end)",
        LONG_BATCH as f64 / total.as_secs_f64(),
        last as f64 / first as f64,
        last as f64 / commits,
    );
}

/// What the server writes to: SQLite, or Postgres with its durability settings and,
/// as anchors, what one round trip and one commit cost on it.
async fn engine(s: &TestServer) -> String {
    let Some(url) = s.store.postgres_url() else { return "sqlite (WAL, synchronous=FULL)".to_owned() };
    let mut conn = sqlx::PgConnection::connect(url).await.unwrap();
    let mut shown = Vec::new();
    for setting in ["fsync", "synchronous_commit"] {
        let value: String = sqlx::query_scalar(sqlx::AssertSqlSafe(format!("SHOW {setting}")))
            .fetch_one(&mut conn)
            .await
            .unwrap();
        shown.push(format!("{setting}={value}"));
    }
    let (mut trips, mut commits) = (Vec::new(), Vec::new());
    for _ in 0..1000 {
        let one = Instant::now();
        sqlx::query("SELECT 1").execute(&mut conn).await.unwrap();
        trips.push(one.elapsed());
    }
    conn.execute("CREATE TABLE bench_anchor (id BIGSERIAL PRIMARY KEY, body TEXT NOT NULL)").await.unwrap();
    let body = "x".repeat(4000);
    for _ in 0..300 {
        let one = Instant::now();
        sqlx::query("INSERT INTO bench_anchor (body) VALUES ($1)")
            .bind(&body)
            .execute(&mut conn)
            .await
            .unwrap();
        commits.push(one.elapsed());
    }
    format!(
        "postgres ({}); anchors: a statement's round trip p50 {:.3} ms, a single-row commit p50 {:.2} ms, p99 {:.2} ms",
        shown.join(", "),
        ms(percentile(&trips, 0.5)),
        ms(percentile(&commits, 0.5)),
        ms(percentile(&commits, 0.99)),
    )
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1000.0
}

/// The `q` quantile (nearest rank) of `times`.
fn percentile(times: &[Duration], q: f64) -> Duration {
    let mut sorted = times.to_vec();
    sorted.sort_unstable();
    sorted[((sorted.len() - 1) as f64 * q).round() as usize]
}

/// The anchor: `n` single-row transactions in a loop on a fresh SQLite file with the
/// server's pragmas (WAL) and `synchronous`; returns commits/s and the median and 99th
/// percentile commit (ms).
async fn bare_sqlite_commits(synchronous: &str, n: usize) -> (f64, f64, f64) {
    let dir = tempfile::tempdir().unwrap();
    let url = format!("sqlite://{}?mode=rwc", dir.path().join("anchor.db").display());
    let mut conn = sqlx::SqliteConnection::connect(&url).await.unwrap();
    conn.execute("PRAGMA journal_mode = WAL").await.unwrap();
    conn.execute(sqlx::AssertSqlSafe(format!("PRAGMA synchronous = {synchronous}"))).await.unwrap();
    conn.execute("CREATE TABLE t (id INTEGER PRIMARY KEY, body TEXT NOT NULL)").await.unwrap();
    let body = "x".repeat(4000);
    let mut times = Vec::with_capacity(n);
    let start = Instant::now();
    for _ in 0..n {
        let one = Instant::now();
        sqlx::query("INSERT INTO t (body) VALUES (?)").bind(&body).execute(&mut conn).await.unwrap();
        times.push(one.elapsed());
    }
    (n as f64 / start.elapsed().as_secs_f64(), ms(percentile(&times, 0.5)), ms(percentile(&times, 0.99)))
}

/// A filing as the extension sends it (a 200-point stroke and 20 elements), with a
/// client-made `changeId`; returned as the request body, so the clients spend little
/// of the machine's 2 cores.
fn filing(s: &TestServer, change_id: &str, i: usize) -> String {
    json!({"stageId": s.stage_id, "changeId": change_id, "title": format!("item {i}"), "body": "The total is wrong",
        "route": "/orders",
        "capture": {"stroke": (0..200).map(|k| json!({"x": k, "y": k})).collect::<Vec<_>>(),
                    "elements": (0..20).map(|k| json!({"testId": format!("el-{k}"), "tag": "div"})).collect::<Vec<_>>()}})
    .to_string()
}

/// Sends a prepared body; the answer must be 200 (its body is not parsed).
async fn post(s: &TestServer, token: &str, name: &str, body: String) {
    let url = format!("{}/rpc/{name}", s.base);
    let res = s.http.post(url).bearer_auth(token).body(body).send().await.unwrap();
    assert_eq!(res.status(), 200, "{name}");
    res.bytes().await.unwrap();
}

/// A token for each of `FILERS` filers.
async fn filer_tokens(s: &TestServer) -> Vec<String> {
    let mut tokens = Vec::new();
    for i in 0..FILERS {
        let scopes = [Scope::Read, Scope::File];
        let name = format!("filer {i}");
        tokens.push(admin::create_token(&s.store, "demo", &scopes, &name, None, START).await.unwrap().token);
    }
    tokens
}

/// Files `n` items from `FILERS` filers at once, each in batches of `BATCH` followed by
/// "send now" (`releaseChanges`), as a person files a few items at a time; returns the
/// items' ids and how long the filing took (the request bodies are made before).
/// [`long_batch`] measures one filer holding thousands.
async fn file_in_batches(s: &TestServer, tokens: &[String], n: usize) -> (Vec<Value>, Duration) {
    let release = json!({"stageId": s.stage_id}).to_string();
    let bodies: Vec<Vec<(String, String)>> = (0..FILERS)
        .map(|c| {
            (c..n)
                .step_by(FILERS)
                .map(|i| {
                    let id = uuid::Uuid::new_v4().to_string();
                    (filing(s, &id, i), id)
                })
                .collect()
        })
        .collect();
    let clients = tokens.iter().zip(bodies).map(|(token, bodies)| {
        let release = &release;
        async move {
            let mut ids = Vec::new();
            for (body, id) in bodies {
                post(s, token, "createChange", body).await;
                ids.push(Value::String(id));
                if ids.len() % BATCH == 0 {
                    post(s, token, "releaseChanges", release.clone()).await;
                }
            }
            post(s, token, "releaseChanges", release.clone()).await;
            ids
        }
    });
    let start = Instant::now();
    let ids = futures_util::future::join_all(clients).await.into_iter().flatten().collect();
    (ids, start.elapsed())
}

/// The latency of each claim when `AGENTS` agents each claim `CLAIMS_EACH` items of
/// their own, one at a time, all at once (each agent claims again as soon as it has
/// its answer, whose body it does not parse).
async fn claim_latency(s: &TestServer, tokens: &[String]) -> Vec<Duration> {
    let ids = &file_in_batches(s, tokens, AGENTS * CLAIMS_EACH).await.0;
    let agents = (0..AGENTS).map(|a| async move {
        let mut times = Vec::new();
        for id in &ids[a * CLAIMS_EACH..(a + 1) * CLAIMS_EACH] {
            let start = Instant::now();
            post(s, &s.agent, "claimChanges", claim_body(s, id, a)).await;
            times.push(start.elapsed());
        }
        times
    });
    futures_util::future::join_all(agents).await.into_iter().flatten().collect()
}

/// The latency of each claim when `AGENTS` agents claim one item each at the same
/// moment, as agents woken by the same `released` event do; `CLAIMS_EACH` such rounds,
/// each on a quiet server.
async fn claim_burst_latency(s: &TestServer, tokens: &[String]) -> Vec<Duration> {
    let ids = &file_in_batches(s, tokens, AGENTS * CLAIMS_EACH).await.0;
    let mut times = Vec::new();
    for round in ids.chunks(AGENTS) {
        let agents = round.iter().enumerate().map(|(a, id)| async move {
            let start = Instant::now();
            post(s, &s.agent, "claimChanges", claim_body(s, id, a)).await;
            start.elapsed()
        });
        times.extend(futures_util::future::join_all(agents).await);
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    times
}

fn claim_body(s: &TestServer, id: &Value, agent: usize) -> String {
    json!({"projectId": s.project_id, "changeIds": [id], "claimedBy": format!("agent-{agent}")}).to_string()
}

/// Opens `n` event streams, files one item, and returns how long after the filing
/// began each stream had its `filed` event.
async fn event_fan_out(s: &TestServer, n: usize) -> Vec<Duration> {
    let url = format!("{}/events/changes:{}", s.base, s.project_id);
    let connect = (0..n).map(|_| async {
        let mut res = s.http.get(&url).bearer_auth(&s.agent).send().await.unwrap();
        assert_eq!(res.status(), 200);
        res.chunk().await.unwrap().expect("the `connected` comment");
        res
    });
    let streams = futures_util::future::join_all(connect).await;
    let title = format!("fan-out to {n}");
    let start = Arc::new(tokio::sync::OnceCell::new());
    let waits: Vec<_> = streams
        .into_iter()
        .map(|mut res| {
            let start = start.clone();
            tokio::spawn(async move {
                let mut seen = String::new();
                while !seen.contains("\"type\":\"filed\"") {
                    seen.push_str(&String::from_utf8_lossy(&res.chunk().await.unwrap().unwrap()));
                }
                start.get().copied().map(|t: Instant| t.elapsed()).expect("the filing began")
            })
        })
        .collect();
    start.set(Instant::now()).unwrap();
    s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": title})).await;
    let mut times = Vec::new();
    for wait in waits {
        times.push(wait.await.unwrap());
    }
    times
}

/// Items in the project `list_page` reads, of which this many are done (hidden from
/// the default filter), and calls measured.
const QUEUE: usize = 10_000;
const QUEUE_DONE: usize = 8_000;
const LIST_CALLS: usize = 200;

/// The first page of `listChanges` (the default filter, 50 items) over a project of
/// `QUEUE` items, through the app, beside the anchor: the same page's two statements
/// (the page and its total) run bare on the server's pool.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a measurement; run with --ignored --nocapture"]
async fn list_page() {
    let s = TestServer::start_with(|state| {
        state.rate_limit = redline_server::limit::RateLimit { per_second: 1e9, burst: 1e9 };
    })
    .await;
    println!("\nengine: {}", engine(&s).await);
    let tokens = filer_tokens(&s).await;
    file_in_batches(&s, &tokens, QUEUE).await;
    // The oldest are done: a queue with its history.
    sqlx::query("UPDATE changes SET status = 'done' WHERE short_id <= $1")
        .bind(QUEUE_DONE as i64)
        .execute(s.store.pool())
        .await
        .unwrap();
    let body = json!({"projectId": s.project_id}).to_string();
    let page = s.ok(&s.agent, "listChanges", json!({"projectId": s.project_id})).await;
    assert_eq!((page["changes"].as_array().unwrap().len(), page["total"].as_u64()), (50, Some(2_000)));
    let mut app = Vec::with_capacity(LIST_CALLS);
    for _ in 0..LIST_CALLS {
        let one = Instant::now();
        post(&s, &s.agent, "listChanges", body.clone()).await;
        app.push(one.elapsed());
    }
    let anchor = bare_list_page(&s).await;
    println!(
        "listChanges, first page of 50 (default filter) of {QUEUE} items ({QUEUE_DONE} done), {LIST_CALLS} calls: \
         p50 {:.2} ms, p99 {:.2} ms; anchor (its two statements bare on the pool): p50 {:.2} ms, p99 {:.2} ms",
        ms(percentile(&app, 0.5)),
        ms(percentile(&app, 0.99)),
        ms(percentile(&anchor, 0.5)),
        ms(percentile(&anchor, 0.99)),
    );
}

/// The statements of `listChanges`' first default page, as the server runs them.
async fn bare_list_page(s: &TestServer) -> Vec<Duration> {
    use redline_server::store::rows::{HOLD_JOIN, SUMMARY_COLUMNS};
    let filter = "c.project_id = $1 AND c.status IN ('open', 'claimed', 'needs_answer', 'in_progress')";
    let page = format!(
        "SELECT {SUMMARY_COLUMNS} FROM changes c {HOLD_JOIN} WHERE {filter} ORDER BY c.short_id ASC LIMIT 51"
    );
    let total = format!("SELECT COUNT(*) AS total FROM changes c WHERE {filter}");
    let mut conn = s.store.pool().acquire().await.unwrap();
    let mut times = Vec::with_capacity(LIST_CALLS);
    for _ in 0..LIST_CALLS {
        let one = Instant::now();
        for sql in [&page, &total] {
            sqlx::query(sqlx::AssertSqlSafe(sql.as_str()))
                .bind(&s.project_id)
                .fetch_all(&mut *conn)
                .await
                .unwrap();
        }
        times.push(one.elapsed());
    }
    times
}

/// Commits in the history [`anchors_follow_the_code`] maps anchors through.
const HISTORY: usize = 10_000;
/// Cold maps of each anchor (a new follower each time, as each command has).
const ANCHOR_RUNS: usize = 10;

/// `redline show`'s anchor following (issue #35, goal ≤ 200 ms) on a 10,000-commit
/// history in which every commit edits the file (an anchor's worst case): a line moved
/// (100 lines inserted above it, the file renamed halfway) and a line removed (its
/// commit found), beside the anchor: git's own forward trace of the moved line, `git
/// blame --reverse`.
#[test]
#[ignore = "a measurement; run with --ignored --nocapture"]
fn anchors_follow_the_code() {
    use redline_agent::anchors::{AnchorNow, Follower};
    let repo = tempfile::tempdir().unwrap();
    let dir = repo.path();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git").args(args).current_dir(dir).output().unwrap();
        assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
        String::from_utf8_lossy(&out.stdout).trim().to_owned()
    };
    git(&["init", "-q", "-b", "main"]);
    let made = Instant::now();
    fast_import(dir, HISTORY);
    let filed = git(&["rev-list", "--max-parents=0", "HEAD"]);
    let removed = git(&["rev-list", "-1", "--grep=^commit 7000$", "HEAD"]);
    println!("\n{HISTORY} commits made in {:.1} s", made.elapsed().as_secs_f64());

    let time = |anchor: &str, expected: &AnchorNow| -> Vec<Duration> {
        (0..ANCHOR_RUNS)
            .map(|_| {
                let one = Instant::now();
                let now = Follower::new(dir).follow(Some(&filed), anchor);
                let took = one.elapsed();
                assert_eq!(&now, expected);
                took
            })
            .collect()
    };
    let moved =
        time("src/app.html:50", &AnchorNow::At { file: "src/page.html".into(), line: 150, edited: false });
    let gone = time("src/app.html:75", &AnchorNow::Gone { gone: true, commit: Some(removed) });
    let range = format!("{filed}..HEAD");
    let blame: Vec<Duration> = (0..ANCHOR_RUNS)
        .map(|_| {
            let one = Instant::now();
            git(&["blame", "--reverse", "-L", "50,50", &range, "--", "src/app.html"]);
            one.elapsed()
        })
        .collect();
    for (what, times) in [
        ("moved and renamed", &moved),
        ("removed, its commit named", &gone),
        ("anchor: git blame --reverse, the moved line", &blame),
    ] {
        println!(
            "anchor through {HISTORY} commits, {what}: p50 {:.1} ms, p90 {:.1} ms ({ANCHOR_RUNS} runs)",
            ms(percentile(times, 0.5)),
            ms(percentile(times, 0.9)),
        );
    }
}

/// Writes `commits` commits on `main` with `git fast-import`: each edits the last line of
/// a 100-line page, every 100th inserts a line on top, commit 5000 renames it
/// (`src/app.html` → `src/page.html`) and commit 7000 removes its line 75.
fn fast_import(dir: &std::path::Path, commits: usize) {
    use std::io::Write;
    let mut child = std::process::Command::new("git")
        .args(["fast-import", "--quiet"])
        .current_dir(dir)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stream = std::io::BufWriter::new(child.stdin.take().unwrap());
    for i in 1..=commits {
        let mut page = String::new();
        for top in 0..i / 100 {
            page.push_str(&format!("<p>top {top}</p>\n"));
        }
        for line in 1..100 {
            if !(line == 75 && i >= 7000) {
                page.push_str(&format!("<p>line {line}</p>\n"));
            }
        }
        page.push_str(&format!("<p>edit {i}</p>\n"));
        let message = format!("commit {i}");
        let path = if i >= 5000 { "src/page.html" } else { "src/app.html" };
        write!(
            stream,
            "commit refs/heads/main\ncommitter T <t@example.com> {} +0000\ndata {}\n{message}\n",
            1_700_000_000 + i,
            message.len()
        )
        .unwrap();
        if i == 5000 {
            writeln!(stream, "D src/app.html").unwrap();
        }
        write!(stream, "M 100644 inline {path}\ndata {}\n{page}\n", page.len()).unwrap();
    }
    drop(stream);
    assert!(child.wait().unwrap().success());
}

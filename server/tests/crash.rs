//! A crash during a burst of filings: `kill -9` the real `redline serve` while
//! concurrent clients file, restart it on the same store, and every filing that was
//! acknowledged (200) is there, intact. Acknowledged means committed: on SQLite with
//! `synchronous=FULL` the WAL was fsynced before the answer (see `src/commit.rs`).

mod common;

use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use redline_protocol::{Capture, Scope};
use redline_server::{Clock, admin};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

const CLIENTS: usize = 16;
/// Per client; below the per-token burst, so no filing is rate limited.
const FILINGS_EACH: usize = 150;
/// The kill comes once this many filings were acknowledged, mid-burst.
const KILL_AFTER: usize = 300;

/// Starts `redline serve` on a free port; returns the child and its URL.
async fn serve(store_args: &[String]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_redline"))
        .args(["serve", "--addr", "127.0.0.1:0"])
        .args(store_args)
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap()).read_line(&mut line).await.unwrap();
    let url = line.trim().strip_prefix("listening on ").unwrap_or_else(|| panic!("{line}")).to_owned();
    (child, url)
}

/// A filing with every field the test checks afterwards, distinct per client and index.
fn filing(stage_id: &str, client: usize, i: usize) -> Value {
    let stroke: Vec<Value> = (0..40)
        .map(|k| json!({"x": k as f64 * 1.5 + i as f64, "y": client as f64 + k as f64 * 0.25}))
        .collect();
    json!({
        "changeId": uuid::Uuid::new_v4().to_string(),
        "stageId": stage_id,
        "title": format!("client {client} filing {i}"),
        "body": format!("body of {client}/{i}\nsecond line ✓"),
        "capture": {
            "stroke": stroke,
            "bounds": {"x": 1.25, "y": 2.5, "width": 300.0 + i as f64, "height": 40.0},
            "elements": [{"testId": format!("row-{i}"), "cssPath": "main > table tr", "text": "Total", "tag": "td",
                          "rect": {"x": 1.0, "y": 2.0, "width": 3.0, "height": 4.0}}],
            "devicePixelRatio": 2.0,
            "scroll": {"x": 0.0, "y": 120.5}
        }
    })
}

/// Files until the server stops answering; returns the acknowledged filings, each with
/// `client`, the index of the token that filed it.
async fn file_until_killed(
    url: &str,
    token: &str,
    stage_id: &str,
    client: usize,
    acked: &AtomicUsize,
) -> Vec<(usize, Value)> {
    let http = common::http_client();
    let mut kept = Vec::new();
    for i in 0..FILINGS_EACH {
        let data = filing(stage_id, client, i);
        let sent = http.post(format!("{url}/rpc/createChange")).bearer_auth(token).json(&data).send().await;
        let Ok(res) = sent else { break };
        let status = res.status();
        // A reply cut off by the kill is not an acknowledgement.
        let Ok(body) = res.text().await else { break };
        assert_eq!(status, 200, "{body}");
        kept.push((client, data));
        acked.fetch_add(1, Ordering::SeqCst);
    }
    kept
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_filing_survives_kill_9() {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open_store(dir.path()).await;
    let now = Clock::System.now();
    admin::add_project(&store, "demo", None, now).await.unwrap();
    let stage = admin::add_stage(
        &store,
        admin::StageSpec {
            project: "demo",
            branch: "main",
            url: "https://demo.example.com",
            stage_type: None,
            git_sha: None,
            changes_enabled: None,
        },
        now,
    )
    .await
    .unwrap();
    let mut tokens = Vec::new();
    for i in 0..CLIENTS {
        let scopes = [Scope::Read, Scope::File];
        tokens.push(
            admin::create_token(&store, "demo", &scopes, &format!("filer {i}"), None, now)
                .await
                .unwrap()
                .token,
        );
    }
    let mut store_args = vec!["--data".to_owned(), dir.path().to_str().unwrap().to_owned()];
    if let Some(url) = store.postgres_url() {
        store_args.extend(["--database-url".to_owned(), url.to_owned()]);
    }
    store.pool().close().await;

    let (mut server, url) = serve(&store_args).await;
    let acked = Arc::new(AtomicUsize::new(0));
    let kept = Arc::new(Mutex::new(Vec::new()));
    let clients: Vec<_> = tokens
        .iter()
        .enumerate()
        .map(|(client, token)| {
            let (url, token, stage_id) = (url.clone(), token.clone(), stage.stage_id.clone());
            let (acked, kept) = (acked.clone(), kept.clone());
            tokio::spawn(async move {
                let filed = file_until_killed(&url, &token, &stage_id, client, &acked).await;
                kept.lock().unwrap().extend(filed);
            })
        })
        .collect();
    while acked.load(Ordering::SeqCst) < KILL_AFTER {
        tokio::time::sleep(std::time::Duration::from_millis(1)).await;
    }
    server.start_kill().unwrap(); // SIGKILL
    server.wait().await.unwrap();
    for client in clients {
        client.await.unwrap();
    }
    let kept = std::mem::take(&mut *kept.lock().unwrap());
    assert!(kept.len() < CLIENTS * FILINGS_EACH, "the kill came after the burst");

    let (_server, url) = serve(&store_args).await;
    let http = common::http_client();
    // Each filing is read back with its filer's token, to stay within its rate limit.
    for (client, sent) in &kept {
        let get = json!({"changeId": sent["changeId"]});
        let res = http
            .post(format!("{url}/rpc/getChange"))
            .bearer_auth(&tokens[*client])
            .json(&get)
            .send()
            .await
            .unwrap();
        assert_eq!(res.status(), 200, "acknowledged {} is missing", sent["title"]);
        let change = res.json::<Value>().await.unwrap()["change"].clone();
        assert_eq!((&change["title"], &change["body"]), (&sent["title"], &sent["body"]));
        let capture = |v: &Value| serde_json::from_value::<Capture>(v["capture"].clone()).unwrap();
        assert_eq!(capture(&change), capture(sent), "{}", sent["title"]);
    }
    println!("{} acknowledged filings survived the kill", kept.len());
}

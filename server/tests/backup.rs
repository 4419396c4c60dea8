//! `redline backup`: a copy taken while the server is filing items is a sound store with
//! every item acknowledged before the backup began; what it refuses.

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Instant;

use common::{Binary, TestServer, redline};
use redline_server::limit::RateLimit;
use redline_server::{AppState, Clock, Store};
use serde_json::{Value, json};

/// Files an item as the filer without read access; returns its id once the server has
/// acknowledged it.
async fn file(s: &TestServer, title: String) -> String {
    let item = json!({"stageId": s.stage_id, "title": title, "body": "x".repeat(200)});
    s.ok(&s.file_only, "createChange", item).await["change"]["changeId"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_backup_taken_while_items_are_filed_has_every_acknowledged_item() {
    // Backups are of SQLite stores.
    let s = Arc::new(
        TestServer::start_sqlite(|state| state.rate_limit = RateLimit { per_second: 1e6, burst: 1e6 }).await,
    );
    let stop = Arc::new(AtomicBool::new(false));
    let filed = Arc::new(AtomicUsize::new(0));
    let writers: Vec<_> = (0..4)
        .map(|w| {
            let (s, stop, filed) = (s.clone(), stop.clone(), filed.clone());
            tokio::spawn(async move {
                let mut acked = Vec::new();
                for i in 0.. {
                    if stop.load(Ordering::Relaxed) {
                        break;
                    }
                    let id = file(&s, format!("w{w} #{i}")).await;
                    acked.push((id, Instant::now()));
                    filed.fetch_add(1, Ordering::Relaxed);
                }
                acked
            })
        })
        .collect();
    // The backup begins once items are being filed: the first few are acknowledged.
    let filed_at_least = |n: usize| {
        let filed = filed.clone();
        async move {
            common::until(&format!("{n} items filed"), || async { filed.load(Ordering::Relaxed) >= n }).await
        }
    };
    filed_at_least(4).await;

    let file = s.dir.path().join("copy.db");
    let began = Instant::now();
    let out = Binary::on_dir(s.dir.path()).run(&["backup", "--to", file.to_str().unwrap()]).await.ok();
    // Writes go on after the backup: a few more are acknowledged before the writers stop.
    filed_at_least(filed.load(Ordering::Relaxed) + 4).await;
    stop.store(true, Ordering::Relaxed);
    let mut acked = Vec::new();
    for w in writers {
        acked.extend(w.await.unwrap());
    }

    let restored = tempfile::tempdir().unwrap();
    std::fs::copy(&file, restored.path().join("redline.db")).unwrap();
    let store = Store::open_dir(restored.path()).await.expect("the copy opens as a store");
    let verdict: String = sqlx::query_scalar("PRAGMA integrity_check").fetch_one(store.pool()).await.unwrap();
    assert_eq!(verdict, "ok");
    let in_copy: std::collections::HashSet<String> = sqlx::query_scalar("SELECT change_id FROM changes")
        .fetch_all(store.pool())
        .await
        .unwrap()
        .into_iter()
        .collect();
    let before: Vec<&str> = acked.iter().filter(|(_, at)| *at < began).map(|(id, _)| id.as_str()).collect();
    assert!(!before.is_empty(), "items were filed before the backup");
    let missing: Vec<&str> = before.iter().copied().filter(|id| !in_copy.contains(*id)).collect();
    assert!(missing.is_empty(), "acknowledged before the backup but not in it: {missing:?}");
    let all: std::collections::HashSet<&str> = acked.iter().map(|(id, _)| id.as_str()).collect();
    assert!(in_copy.iter().all(|id| all.contains(id.as_str())), "the copy holds only items that were filed");
    assert!(in_copy.len() < acked.len(), "writes went on during and after the backup");
    let printed = &out.stdout;
    assert!(printed.contains(&format!("backed up {} items", in_copy.len())), "{printed}");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the copy holds token hashes and the image-link key");
    }
    let leftovers: Vec<_> = std::fs::read_dir(s.dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("partial"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // A server on the restored store serves the copied items to the same tokens.
    let state = AppState::new(store, Clock::System, restored.path().join("blobs")).await.unwrap();
    let restored_url = common::listen(state).await;
    let res = s
        .http
        .post(format!("{restored_url}/rpc/getChange"))
        .bearer_auth(&s.agent)
        .json(&json!({"changeId": before.last().unwrap()}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["change"]["changeId"].as_str(), before.last().copied());
}

#[tokio::test]
async fn a_backup_refuses_postgres_an_existing_file_a_missing_folder_and_a_missing_store() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let to = |name: &str| dir.path().join(name).to_str().unwrap().to_owned();

    let out =
        redline(&["backup", "--to", &to("pg.db"), "--database-url", "postgres://u@127.0.0.1:1/db"]).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("pg_dump"), "{}", out.stderr);
    assert!(!Path::new(&to("pg.db")).exists());

    let out = redline(&["backup", "--to", &to("none.db"), "--data", data]).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("there is no store"), "{}", out.stderr);
    assert!(!Path::new(data).exists(), "a backup creates no store");

    redline(&["project", "add", "demo", "--data", data]).await.ok();
    std::fs::write(to("kept.db"), "precious").unwrap();
    let out = redline(&["backup", "--to", &to("kept.db"), "--data", data]).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("already exists"), "{}", out.stderr);
    assert_eq!(std::fs::read_to_string(to("kept.db")).unwrap(), "precious");

    let out = redline(&["backup", "--to", &to("nowhere/x.db"), "--data", data]).await;
    assert_eq!(out.code, 1);
    assert!(out.stderr.contains("is not a folder"), "{}", out.stderr);

    let printed = redline(&["--json", "backup", "--to", &to("ok.db"), "--data", data]).await.ok().json();
    assert_eq!(printed["changes"], 0);
    assert!(printed["bytes"].as_u64().unwrap() > 0);
}

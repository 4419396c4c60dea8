//! `/blobs`: images are streamed as they are read, at most so many at once, and an
//! image whose bytes are gone is a 404.

mod common;

use std::sync::Arc;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::TestServer;
use serde_json::json;

/// A PNG of `len` bytes (the magic, then filler), as base64.
fn png_of(len: usize) -> String {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    bytes.extend((bytes.len()..len).map(|i| (i % 251) as u8));
    STANDARD.encode(bytes)
}

/// Uploads an image of `len` bytes and files it; returns its key and signed link.
async fn shot(s: &TestServer, len: usize) -> (String, String) {
    let upload = json!({"projectId": s.project_id, "contentType": "image/png", "imageBase64": png_of(len)});
    let key = s.ok(&s.ann, "uploadShot", upload).await["screenshotKey"].as_str().unwrap().to_owned();
    let change = s
        .ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t", "screenshotKey": key}))
        .await;
    (key, change["change"]["screenshotUrl"].as_str().unwrap().to_owned())
}

#[tokio::test]
async fn a_large_image_is_served_whole() {
    let s = TestServer::start().await;
    let len = 6 * 1024 * 1024 + 7;
    let (key, url) = shot(&s, len).await;
    let res = s.http.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert_eq!(res.headers()["content-length"], len.to_string().as_str());
    let bytes = res.bytes().await.unwrap();
    assert_eq!(bytes.len(), len);
    assert_eq!(STANDARD.encode(&bytes), png_of(len));
    // Bytes gone from the store are a missing image, not a server fault.
    s.blobs.store().delete(&key).await.unwrap();
    assert_eq!(s.http.get(&url).send().await.unwrap().status(), 404);
}

/// A server whose images are files, which a test can replace with FIFOs.
#[cfg(unix)]
async fn on_files(configure: impl FnOnce(&mut redline_server::AppState)) -> TestServer {
    TestServer::start_on(Some(redline_server::store::blobs::BlobStoreSpec::Folder), configure).await
}

/// Replaces the image `key` with a FIFO, so a test decides when its bytes arrive.
#[cfg(unix)]
fn fifo(s: &TestServer, key: &str) -> std::path::PathBuf {
    let path = s.dir.path().join("blobs").join(key);
    std::fs::remove_file(&path).unwrap();
    let made = std::process::Command::new("mkfifo").arg(&path).status().unwrap();
    assert!(made.success());
    path
}

#[cfg(unix)]
#[tokio::test]
async fn an_image_is_sent_as_it_is_read() {
    use std::io::Write;
    let s = on_files(|_| {}).await;
    let len = 1024 * 1024;
    let (key, url) = shot(&s, len).await;
    let path = fifo(&s, &key);
    let request = tokio::spawn({
        let http = s.http.clone();
        async move { http.get(&url).send().await.unwrap() }
    });
    let original = STANDARD.decode(png_of(len)).unwrap();
    // Less than a pipe holds, so writing it never waits for the server.
    let (head, rest) = original.split_at(10_000);
    let head = head.to_vec();
    // Opening the FIFO waits for the server to open it; the test's runtime is the
    // server's too, so nothing that blocks runs on it.
    let writer = tokio::task::spawn_blocking(move || {
        let mut writer = std::fs::OpenOptions::new().write(true).open(path)?;
        writer.write_all(&head).map(|()| writer)
    });
    let mut writer = writer.await.unwrap().unwrap();
    // The answer and its first bytes come before the rest of the file exists: the file
    // is not read whole first.
    let mut res = tokio::time::timeout(Duration::from_secs(5), request).await.unwrap().unwrap();
    assert_eq!(res.status(), 200);
    let first = tokio::time::timeout(Duration::from_secs(5), res.chunk()).await.unwrap().unwrap().unwrap();
    assert!(!first.is_empty() && original.starts_with(&first));
    let rest = rest.to_vec();
    let written = tokio::task::spawn_blocking(move || writer.write_all(&rest));
    let mut got = first.to_vec();
    while let Some(chunk) = res.chunk().await.unwrap() {
        got.extend_from_slice(&chunk);
    }
    written.await.unwrap().unwrap();
    assert_eq!(got, original);
}

#[cfg(unix)]
#[tokio::test]
async fn images_read_at_once_are_limited() {
    let s = on_files(|state| {
        state.blob_reads = redline_server::http::blobs::ReadLimit {
            permits: Arc::new(tokio::sync::Semaphore::new(1)),
            wait: Duration::from_millis(300),
            turn: Duration::from_secs(60),
        };
    })
    .await;
    let (slow_key, slow_url) = shot(&s, 1000).await;
    let (_, url) = shot(&s, 1000).await;
    let path = fifo(&s, &slow_key);
    let slow = tokio::spawn({
        let http = s.http.clone();
        async move { http.get(&slow_url).send().await.unwrap() }
    });
    let writer = tokio::task::spawn_blocking(move || std::fs::OpenOptions::new().write(true).open(path))
        .await
        .unwrap()
        .unwrap();
    let mut slow = slow.await.unwrap();
    assert_eq!(slow.status(), 200);
    // The one turn is taken while the slow image is being sent.
    let busy = s.http.get(&url).send().await.unwrap();
    assert_eq!(busy.status(), 503);
    assert!(busy.headers().contains_key("retry-after"));
    drop(writer);
    while let Ok(Some(_)) = slow.chunk().await {}
    drop(slow);
    let after = tokio::time::timeout(Duration::from_secs(5), async {
        loop {
            let res = s.http.get(&url).send().await.unwrap();
            if res.status() == 200 {
                return res;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    })
    .await
    .expect("the turn should be given back");
    assert_eq!(after.bytes().await.unwrap().len(), 1000);
}

/// A request that stalls (here: its file never yields a byte, as a reader that never
/// reads holds the same turn) loses its turn once it runs out, and others are served.
#[cfg(unix)]
#[tokio::test]
async fn a_stalled_read_loses_its_turn() {
    let s = on_files(|state| {
        state.blob_reads = redline_server::http::blobs::ReadLimit {
            permits: Arc::new(tokio::sync::Semaphore::new(1)),
            wait: Duration::from_millis(300),
            turn: Duration::from_millis(700),
        };
    })
    .await;
    let (stalled_key, stalled_url) = shot(&s, 1000).await;
    let (_, url) = shot(&s, 1000).await;
    let path = fifo(&s, &stalled_key);
    let stalled = tokio::spawn({
        let http = s.http.clone();
        async move { http.get(&stalled_url).send().await.unwrap() }
    });
    let _writer = tokio::task::spawn_blocking(move || std::fs::OpenOptions::new().write(true).open(path))
        .await
        .unwrap()
        .unwrap();
    let mut stalled = stalled.await.unwrap();
    assert_eq!(s.http.get(&url).send().await.unwrap().status(), 503, "the one turn is taken");
    common::until("the stalled read's turn to run out", || async {
        s.http.get(&url).send().await.unwrap().status() != 503
    })
    .await;
    let res = s.http.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 200, "the stalled read's turn ran out");
    assert_eq!(res.bytes().await.unwrap().len(), 1000);
    // The stalled answer was cut off, not completed.
    let cut = tokio::time::timeout(Duration::from_secs(5), async {
        while let Ok(Some(_)) = stalled.chunk().await {}
    });
    assert!(cut.await.is_ok(), "the stalled answer ended");
}

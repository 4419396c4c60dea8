//! Every blob store behind the same server: the folder, the database (SQLite here, Postgres
//! in the suite's Postgres phase) and S3-compatible storage (a local S3 server that
//! `cargo xtask test` installs and starts). An image is stored and read back whole,
//! in chunks; bytes that are gone are a 404; `redline blobs gc` (and the server's hourly
//! run) deletes what nothing refers to once it is old enough, and nothing else.

mod common;

use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use common::{Binary, TestServer};
use redline_protocol::{ImageType, Timestamp};
use redline_server::AppState;
use redline_server::store::blobs::{BlobStoreSpec, Blobs, CHUNK_BYTES, Collected};
use serde_json::json;

/// A PNG of `len` bytes (the magic, then filler that differs from chunk to chunk).
fn png_of(len: usize) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR".to_vec();
    bytes.extend((bytes.len()..len).map(|i| (i % 251) as u8));
    bytes
}

/// Reads a signed link; returns its status and bytes.
async fn read(s: &TestServer, url: &str) -> (u16, Vec<u8>) {
    let res = s.http.get(url).send().await.unwrap();
    (res.status().as_u16(), res.bytes().await.unwrap().to_vec())
}

async fn upload(s: &TestServer, png: &[u8]) -> String {
    let upload =
        json!({"projectId": s.project_id, "contentType": "image/png", "imageBase64": STANDARD.encode(png)});
    s.ok(&s.ann, "uploadShot", upload).await["screenshotKey"].as_str().unwrap().to_owned()
}

/// What every store must do, through the server's RPCs and `/blobs`.
async fn images_in(spec: BlobStoreSpec) {
    let s = TestServer::start_on(Some(spec.clone()), |_| {}).await;
    // Several chunks and a part of one, so a read joins them in order.
    let big = png_of(4 * CHUNK_BYTES + 1234);
    let key = upload(&s, &big).await;
    let filed = s
        .ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t", "screenshotKey": key}))
        .await;
    let url = filed["change"]["screenshotUrl"].as_str().unwrap().to_owned();
    let res = s.http.get(&url).send().await.unwrap();
    assert_eq!(res.status(), 200, "{spec:?}");
    assert_eq!(res.headers()["content-type"], "image/png");
    assert_eq!(res.headers()["content-length"], big.len().to_string().as_str());
    assert!(res.bytes().await.unwrap() == big, "{spec:?}: the image read back differs");

    // A thread image, stored the same way.
    let id = filed["change"]["changeId"].clone();
    s.ok(&s.ann, "releaseChanges", json!({"stageId": s.stage_id})).await;
    let small = png_of(3000);
    let reply = json!({"changeId": id, "body": "see", "authorName": "agent", "contentType": "image/png",
                       "imageBase64": STANDARD.encode(&small)});
    let message = s.ok(&s.agent, "replyToChange", reply).await;
    let evidence = message["message"]["attachments"][0].clone();
    assert_eq!(read(&s, evidence["url"].as_str().unwrap()).await, (200, small));

    // Bytes gone from the store: 404, not a server fault.
    s.blobs.store().delete(&key).await.unwrap();
    assert_eq!(read(&s, &url).await.0, 404, "{spec:?}");

    // Collecting: an upload never filed, and bytes no row records (a write that died
    // after storing them), go once they are old enough; what an item refers to stays.
    let unfiled = upload(&s, &png_of(500)).await;
    let orphan = s.blobs.new_key(ImageType::Png);
    s.blobs.store().put(&orphan, png_of(700).into()).await.unwrap();
    let day = Duration::from_secs(24 * 3600);
    let fresh = s.blobs.collect(&s.store, s.clock.now(), day).await.unwrap();
    assert_eq!(fresh, Collected::default(), "{spec:?}: nothing is a day old yet");
    assert_eq!(s.stored_images(3).await.len(), 3);
    // Stored bytes are dated by the store (the clock of the machine or of S3), uploads'
    // rows by the server's clock: two days on from both.
    s.advance_secs(2 * 24 * 3600);
    let later = Timestamp::from_unix_millis(system_millis() + 2 * 24 * 3600 * 1000).max(s.clock.now());
    let gone = s.blobs.collect(&s.store, later, day).await.unwrap();
    assert_eq!(gone, Collected { unreferenced: 1, orphans: 1 }, "{spec:?}");
    let left = s.stored_images(1).await;
    assert_eq!(
        left,
        [evidence["key"].as_str().unwrap()],
        "{spec:?}: {unfiled} and {orphan} go, the evidence stays"
    );
    let late = json!({"stageId": s.stage_id, "title": "t", "screenshotKey": unfiled});
    // A collected upload is as unknown as one never made: 404 naming `screenshotKey`.
    s.err(&s.ann, "createChange", late, 404, "not_found").await;
}

fn system_millis() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

#[tokio::test]
async fn images_in_a_folder() {
    images_in(BlobStoreSpec::Folder).await;
}

#[tokio::test]
async fn images_in_the_database() {
    images_in(BlobStoreSpec::Database).await;
}

#[tokio::test]
#[ignore = "needs an S3-compatible server: `cargo xtask test` starts one and runs it; by hand, \
            AWS_ENDPOINT_URL=http://… AWS_ALLOW_HTTP=true AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… \
            AWS_REGION=us-east-1 cargo test -p redline-server --test blob_stores -- --ignored s3_"]
async fn s3_images_in_object_storage() {
    let bucket = s3_bucket().await;
    images_in(BlobStoreSpec::S3 { bucket, prefix: "redline/images".to_owned() }).await;
}

/// Two deployments, each with a database of its own, keep their images in one store
/// (`spec`, opened in `shared`): collecting on either deletes only what it stored
/// itself, never the other's images nor bytes whose keys carry no deployment's tag
/// (stored before keys had one).
async fn gc_in_a_shared_store(spec: BlobStoreSpec) {
    let shared = tempfile::tempdir().unwrap();
    let mut deployments = Vec::new();
    for _ in 0..2 {
        let dir = tempfile::tempdir().unwrap();
        let store = redline_server::Store::open_dir(dir.path()).await.unwrap();
        let images = BlobStoreSpec::open(Some(&spec), &store, shared.path().join("blobs")).await.unwrap();
        let blobs = Blobs::open(&store, images).await.unwrap();
        // Bytes no row records, as a write that died after storing them leaves.
        let orphan = blobs.new_key(ImageType::Png);
        blobs.store().put(&orphan, png_of(700).into()).await.unwrap();
        deployments.push((dir, store, blobs, orphan));
    }
    let untagged = format!("{}.png", uuid::Uuid::new_v4().simple());
    deployments[0].2.store().put(&untagged, png_of(600).into()).await.unwrap();
    let stored = || async {
        let mut keys: Vec<String> =
            deployments[0].2.store().list().await.unwrap().into_iter().map(|(k, _)| k).collect();
        keys.sort();
        keys
    };
    let mut all = vec![deployments[0].3.clone(), deployments[1].3.clone(), untagged.clone()];
    all.sort();
    assert_eq!(stored().await, all, "{spec:?}");
    assert_ne!(deployments[0].3[..12], deployments[1].3[..12], "each deployment tags its keys");
    let later = Timestamp::from_unix_millis(system_millis() + 2 * 24 * 3600 * 1000);
    let day = Duration::from_secs(24 * 3600);
    for (i, (_, store, blobs, orphan)) in deployments.iter().enumerate() {
        let gone = blobs.collect(store, later, day).await.unwrap();
        assert_eq!(gone, Collected { unreferenced: 0, orphans: 1 }, "{spec:?}: deployment {i}");
        assert!(!stored().await.contains(orphan), "{spec:?}: deployment {i} deleted its own");
    }
    assert_eq!(stored().await, [untagged], "{spec:?}: bytes no deployment tagged stay");
}

#[tokio::test]
async fn gc_in_a_shared_folder_deletes_only_its_own() {
    gc_in_a_shared_store(BlobStoreSpec::Folder).await;
}

#[tokio::test]
#[ignore = "needs an S3-compatible server, as s3_images_in_object_storage"]
async fn s3_gc_in_a_shared_bucket_deletes_only_its_own() {
    let bucket = s3_bucket().await;
    gc_in_a_shared_store(BlobStoreSpec::S3 { bucket, prefix: "shared".to_owned() }).await;
}

/// A new bucket on the S3 server `AWS_ENDPOINT_URL` names (which accepts any credentials).
async fn s3_bucket() -> String {
    let endpoint =
        std::env::var("AWS_ENDPOINT_URL").expect("this test needs AWS_ENDPOINT_URL naming an S3 server");
    let bucket = format!("redline-{}", uuid::Uuid::new_v4().simple());
    let made = common::http_client().put(format!("{endpoint}/{bucket}")).send().await.unwrap();
    assert!(made.status().is_success(), "creating bucket {bucket}: {}", made.status());
    bucket
}

/// `redline blobs gc` on the store a server of this database uses by default (the
/// folder on SQLite, the database on Postgres).
#[tokio::test]
async fn blobs_gc_deletes_what_nothing_refers_to() {
    let s = TestServer::start().await;
    let filed = upload(&s, &png_of(600)).await;
    s.ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t", "screenshotKey": filed})).await;
    // Uploaded at the test clock's start, days ago.
    let unfiled = upload(&s, &png_of(500)).await;
    let orphan = s.blobs.new_key(ImageType::Png);
    s.blobs.store().put(&orphan, png_of(700).into()).await.unwrap();
    let binary = s.binary();
    let gc = |older_than: &'static str| {
        let binary = &binary;
        async move { binary.json(&["blobs", "gc", "--older-than", older_than]).await }
    };
    assert_eq!(gc("24h").await, json!({"unreferenced": 1, "orphans": 0}), "the orphan is fresh");
    let mut kept = vec![filed.clone(), orphan];
    kept.sort();
    assert_eq!(s.stored_images(2).await, kept, "{unfiled} went");
    // With no age required, the orphan (stored before this run began) goes.
    assert_eq!(gc("0s").await, json!({"unreferenced": 0, "orphans": 1}));
    assert_eq!(s.stored_images(1).await, [filed]);
}

/// `redline blobs copy`: a deployment's images move from the folder to the database
/// (a Postgres deployment from before images were kept in it), and a server keeping
/// its images in the database reads them.
#[tokio::test]
async fn blobs_copy_moves_images_to_another_store() {
    let s = TestServer::start_on(Some(BlobStoreSpec::Folder), |_| {}).await;
    let png = png_of(CHUNK_BYTES + 10);
    let key = upload(&s, &png).await;
    let filed = s
        .ok(&s.ann, "createChange", json!({"stageId": s.stage_id, "title": "t", "screenshotKey": key}))
        .await;
    // The folder is the data dir's, whichever store holds the rest.
    let mut binary = Binary::on_dir(s.dir.path());
    if let Some(url) = s.store.postgres_url() {
        binary.store_args.extend(["--database-url".to_owned(), url.to_owned()]);
    }
    let copy =
        || async { binary.json(&["blobs", "copy", "--from", "folder", "--blob-store", "database"]).await };
    assert_eq!(copy().await, json!({"copied": 1}));
    assert_eq!(copy().await, json!({"copied": 0}), "what the database has is not copied again");
    let database = BlobStoreSpec::open(Some(&BlobStoreSpec::Database), &s.store, s.dir.path().join("unused"));
    let state = AppState::with_blob_store(s.store.clone(), s.clock.clone(), database.await.unwrap());
    let base = common::listen(state.await.unwrap()).await;
    let url = filed["change"]["screenshotUrl"].as_str().unwrap();
    let path = url.strip_prefix(&s.base).unwrap();
    assert_eq!(read(&s, &format!("{base}{path}")).await, (200, png));
}

//! The tests' two harnesses: a server in the test's process ([`TestServer`], on a real
//! listener with a manual clock, a project, a stage and tokens) and the real binary
//! (`binary.rs`).
#![allow(dead_code)] // each test binary uses a different part of this helper

use redline_protocol::{Scope, Timestamp};
use redline_server::admin::{self, StageSpec};
use redline_server::store::blobs::BlobStoreSpec;
use redline_server::{AppState, Clock, Store};
use serde_json::Value;
use std::time::Duration;

mod binary;
#[allow(unused_imports)] // as dead_code above
pub use binary::{Binary, Out, command, redline, serve, serve_command};

pub const START: Timestamp = Timestamp::from_unix_millis(1_795_973_727_000);

pub struct TestServer {
    pub base: String,
    pub http: reqwest::Client,
    pub clock: Clock,
    pub store: Store,
    pub project_id: String,
    pub stage_id: String,
    /// read + write: an agent.
    pub agent: String,
    /// read + file: the filer Ann.
    pub ann: String,
    /// read + file: another filer, Bob.
    pub bob: String,
    /// read only.
    pub reader: String,
    /// file only (no read).
    pub file_only: String,
    pub dir: tempfile::TempDir,
    /// The server's images (in `dir/blobs` on SQLite, in the database on Postgres).
    pub blobs: std::sync::Arc<redline_server::store::blobs::Blobs>,
}

impl TestServer {
    pub async fn start() -> TestServer {
        Self::start_with(|_| {}).await
    }

    /// Starts with `configure` applied to the server state first.
    pub async fn start_with(configure: impl FnOnce(&mut AppState)) -> TestServer {
        Self::start_on(None, configure).await
    }

    /// Starts with images in `images` (`None`: the engine's default).
    pub async fn start_on(
        images: Option<BlobStoreSpec>,
        configure: impl FnOnce(&mut AppState),
    ) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let store = open_store(dir.path()).await;
        Self::start_in(dir, store, images, configure).await
    }

    /// Starts on a SQLite store whatever engine the suite runs on (for what only SQLite
    /// stores have: backups).
    pub async fn start_sqlite(configure: impl FnOnce(&mut AppState)) -> TestServer {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_dir(dir.path()).await.unwrap();
        Self::start_in(dir, store, None, configure).await
    }

    async fn start_in(
        dir: tempfile::TempDir,
        store: Store,
        images: Option<BlobStoreSpec>,
        configure: impl FnOnce(&mut AppState),
    ) -> TestServer {
        // Show server errors (e.g. the cause of a 500) in the failing test's output.
        let _ = tracing_subscriber::fmt().with_test_writer().with_env_filter("warn").try_init();
        let clock = Clock::manual(START);
        let project = admin::add_project(&store, "demo", None, START).await.unwrap();
        let stage = admin::add_stage(
            &store,
            StageSpec {
                project: "demo",
                branch: "main",
                url: "https://demo.example.com",
                stage_type: None,
                git_sha: Some("a91c4e2"),
                changes_enabled: None,
            },
            START,
        )
        .await
        .unwrap();
        let token = |scopes: &'static [Scope], name: &'static str| {
            let store = store.clone();
            async move { admin::create_token(&store, "demo", scopes, name, None, START).await.unwrap().token }
        };
        let agent = token(&[Scope::Read, Scope::Write], "agent").await;
        let ann = token(&[Scope::Read, Scope::File], "Ann").await;
        let bob = token(&[Scope::Read, Scope::File], "Bob").await;
        let reader = token(&[Scope::Read], "Rita").await;
        let file_only = token(&[Scope::File], "Fay").await;
        let images = BlobStoreSpec::open(images.as_ref(), &store, dir.path().join("blobs")).await.unwrap();
        let mut state = AppState::with_blob_store(store.clone(), clock.clone(), images).await.unwrap();
        state.keep_alive = std::time::Duration::from_millis(300);
        configure(&mut state);
        let blobs = state.services.blobs.clone();
        let base = listen(state).await;
        TestServer {
            base,
            http: http_client(),
            clock,
            store,
            project_id: project.project_id,
            stage_id: stage.stage_id,
            agent,
            ann,
            bob,
            reader,
            file_only,
            dir,
            blobs,
        }
    }

    /// The keys of the images stored now, sorted. A write refused after storing its
    /// image removes it in the background, so this waits a moment for `expected`.
    pub async fn stored_images(&self, expected: usize) -> Vec<String> {
        let mut waited = 0;
        loop {
            let mut keys: Vec<String> =
                self.blobs.store().list().await.unwrap().into_iter().map(|(key, _)| key).collect();
            if keys.len() == expected || waited >= 50 {
                keys.sort();
                return keys;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
            waited += 1;
        }
    }

    /// Calls an RPC with the envelope; returns the status and the JSON body.
    pub async fn call(&self, token: &str, name: &str, data: Value) -> (u16, Value) {
        let body = serde_json::json!({ "rpcName": name, "data": data });
        self.post(token, name, body.to_string()).await
    }

    pub async fn post(&self, token: &str, name: &str, body: String) -> (u16, Value) {
        let mut req = self.http.post(format!("{}/rpc/{name}", self.base)).body(body);
        if !token.is_empty() {
            req = req.bearer_auth(token);
        }
        let res = req.header("content-type", "application/json").send().await.unwrap();
        let status = res.status().as_u16();
        let text = res.text().await.unwrap();
        (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
    }

    /// Calls an RPC that must succeed.
    pub async fn ok(&self, token: &str, name: &str, data: Value) -> Value {
        let (status, body) = self.call(token, name, data).await;
        assert_eq!(status, 200, "{name}: {body}");
        body
    }

    /// Calls an RPC that must fail with `status` and `code`; returns the body.
    pub async fn err(&self, token: &str, name: &str, data: Value, status: u16, code: &str) -> Value {
        let (got, body) = self.call(token, name, data).await;
        assert_eq!((got, body["code"].as_str().unwrap_or("")), (status, code), "{name}: {body}");
        body
    }

    /// The arguments that point the `redline` binary at this server's store:
    /// `--data DIR` (SQLite) or `--database-url URL` (Postgres test runs).
    pub fn store_args(&self) -> Vec<String> {
        match self.store.postgres_url() {
            Some(url) => vec!["--database-url".into(), url.into()],
            None => vec!["--data".into(), self.dir.path().to_str().unwrap().into()],
        }
    }

    /// The binary pointed at this server's store.
    pub fn binary(&self) -> Binary {
        Binary { store_args: self.store_args() }
    }

    pub fn advance_secs(&self, secs: i64) {
        self.clock.advance_millis(secs * 1000);
    }
}

/// Serves `state` in this process on a free port of loopback; returns its URL.
pub async fn listen(state: AppState) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(redline_server::serve(listener, state));
    base
}

/// Adds the project `demo` (its grace `grace_seconds`, or the default) with a `main` stage
/// of no known commit; returns their ids.
pub async fn add_demo(store: &Store, grace_seconds: Option<i64>, now: Timestamp) -> (String, String) {
    let project = admin::add_project(store, "demo", grace_seconds, now).await.unwrap();
    let stage = StageSpec {
        project: "demo",
        branch: "main",
        url: "https://demo.example.com",
        stage_type: None,
        git_sha: None,
        changes_enabled: None,
    };
    (project.project_id, admin::add_stage(store, stage, now).await.unwrap().stage_id)
}

/// A fresh store: SQLite in `dir`, or, when `REDLINE_TEST_DATABASE_URL` names a
/// Postgres server (`postgres://user@host:port/db`), a new database on it.
pub async fn open_store(dir: &std::path::Path) -> Store {
    match std::env::var("REDLINE_TEST_DATABASE_URL") {
        Ok(url) if !url.is_empty() => {
            use sqlx::Connection;
            let name = format!("redline_test_{}", uuid::Uuid::new_v4().simple());
            let mut admin = sqlx::PgConnection::connect(&url).await.unwrap();
            sqlx::query(sqlx::AssertSqlSafe(format!("CREATE DATABASE {name}")))
                .execute(&mut admin)
                .await
                .unwrap();
            let base = url.rsplit_once('/').unwrap().0;
            Store::open_url(&format!("{base}/{name}")).await.unwrap()
        }
        _ => Store::open_dir(dir).await.unwrap(),
    }
}

/// Waits (up to 30 s) until `ready` says yes, looking every 20 ms.
pub async fn until<F: std::future::Future<Output = bool>>(what: &str, mut ready: impl FnMut() -> F) {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while !ready().await {
        assert!(std::time::Instant::now() < deadline, "no {what} within 30 s");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// An HTTP client. The crate's reqwest is built without a default TLS crypto
/// provider (the agent CLI picks ring), so one is installed first.
pub fn http_client() -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::new()
}

/// Reads an event stream until `until` holds for the text so far (or times out).
pub async fn read_sse(res: &mut reqwest::Response, text: &mut String, until: impl Fn(&str) -> bool) {
    tokio::time::timeout(Duration::from_secs(5), async {
        while !until(text) {
            let chunk = res.chunk().await.unwrap().expect("the stream ended");
            text.push_str(std::str::from_utf8(&chunk).unwrap());
        }
    })
    .await
    .unwrap_or_else(|_| panic!("timed out; got {text:?}"));
}

pub async fn connect(s: &TestServer, last_event_id: Option<&str>, encoded_colon: bool) -> reqwest::Response {
    let colon = if encoded_colon { "%3A" } else { ":" };
    let mut req = s
        .http
        .get(format!("{}/events/changes{colon}{}", s.base, s.project_id))
        .bearer_auth(&s.agent)
        .header("accept", "text/event-stream");
    if let Some(id) = last_event_id {
        req = req.header("last-event-id", id);
    }
    let res = req.send().await.unwrap();
    assert_eq!(res.status(), 200);
    assert!(res.headers()["content-type"].to_str().unwrap().starts_with("text/event-stream"));
    res
}

pub fn data_lines(text: &str) -> Vec<Value> {
    text.lines().filter_map(|l| l.strip_prefix("data: ")).map(|d| serde_json::from_str(d).unwrap()).collect()
}

//! `GET /healthz` and `GET /metrics`, through `app(state)` with `oneshot`.

mod common;

use std::collections::HashMap;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use redline_protocol::Scope;
use redline_server::admin;
use redline_server::{AppState, Clock, Store, app};
use serde_json::{Value, json};
use tower::ServiceExt;

const TITLE: &str = "The salmon button on checkout 7f3a";

struct Fixture {
    app: Router,
    store: Store,
    project_id: String,
    stage_id: String,
    filer: String,
    agent: String,
    _dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let dir = tempfile::tempdir().unwrap();
    let store = common::open_store(dir.path()).await;
    let now = common::START;
    let (project_id, stage_id) = common::add_demo(&store, None, now).await;
    let filer =
        admin::create_token(&store, "demo", &[Scope::Read, Scope::File], "Ann", None, now).await.unwrap();
    let agent =
        admin::create_token(&store, "demo", &[Scope::Read, Scope::Write], "agent", None, now).await.unwrap();
    let state = AppState::new(store.clone(), Clock::manual(now), dir.path().join("blobs")).await.unwrap();
    Fixture {
        app: app(state),
        store,
        project_id,
        stage_id,
        filer: filer.token,
        agent: agent.token,
        _dir: dir,
    }
}

impl Fixture {
    async fn get(&self, path: &str, token: Option<&str>) -> axum::response::Response {
        let mut request = Request::get(path);
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        self.app.clone().oneshot(request.body(Body::empty()).unwrap()).await.unwrap()
    }

    async fn rpc(&self, name: &str, token: Option<&str>, data: Value) -> StatusCode {
        let mut request =
            Request::post(format!("/rpc/{name}")).header(header::CONTENT_TYPE, "application/json");
        if let Some(token) = token {
            request = request.header(header::AUTHORIZATION, format!("Bearer {token}"));
        }
        let res =
            self.app.clone().oneshot(request.body(Body::from(data.to_string())).unwrap()).await.unwrap();
        res.status()
    }

    /// `/metrics` (no token), checked to be well-formed exposition text; its samples.
    async fn metrics(&self) -> (String, HashMap<String, f64>) {
        let res = self.get("/metrics", None).await;
        assert_eq!(res.status(), StatusCode::OK);
        let content_type = res.headers()[header::CONTENT_TYPE].to_str().unwrap().to_owned();
        assert_eq!(content_type, "text/plain; version=0.0.4; charset=utf-8");
        let text = String::from_utf8(to_bytes(res.into_body(), 1 << 20).await.unwrap().to_vec()).unwrap();
        let mut samples = HashMap::new();
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (series, value) = line.rsplit_once(' ').unwrap_or_else(|| panic!("not a sample: {line:?}"));
            let name = series.split('{').next().unwrap();
            assert!(
                name.starts_with("redline_") && name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
            );
            let family =
                ["_bucket", "_sum", "_count"].iter().fold(name, |n, s| n.strip_suffix(s).unwrap_or(n));
            assert!(text.contains(&format!("# TYPE {family} ")), "{name} has no TYPE line");
            samples.insert(series.to_owned(), value.parse().unwrap_or_else(|_| panic!("{line:?}")));
        }
        (text, samples)
    }
}

#[tokio::test]
async fn healthz_is_ok_while_the_store_answers_and_503_once_it_does_not() {
    let f = fixture().await;
    let res = f.get("/healthz", None).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(to_bytes(res.into_body(), 100).await.unwrap(), "ok\n");

    f.store.close().await;
    let res = f.get("/healthz", None).await;
    assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
    let (_, samples) = f.metrics().await;
    assert_eq!(samples["redline_store_up"], 0.0, "metrics still answer, saying the store does not");
}

#[tokio::test]
async fn metrics_count_rpcs_by_name_and_class_and_the_queue_by_status_but_show_no_secrets() {
    let f = fixture().await;
    let (_, before) = f.metrics().await;
    assert_eq!(before["redline_store_up"], 1.0);
    assert_eq!(before["redline_changes{status=\"open\"}"], 0.0);
    assert!(!before.keys().any(|k| k.starts_with("redline_rpc_")), "no calls yet: {before:?}");

    let filed = f.rpc("createChange", Some(&f.filer), json!({"stageId": f.stage_id, "title": TITLE})).await;
    assert_eq!(filed, StatusCode::OK);
    assert_eq!(f.rpc("getSession", Some(&f.agent), json!({})).await, StatusCode::OK);
    assert_eq!(f.rpc("getSession", Some(&f.agent), json!({})).await, StatusCode::OK);
    assert_eq!(f.rpc("getSession", None, json!({})).await, StatusCode::UNAUTHORIZED);
    assert_eq!(f.rpc("getSession", Some("not-a-token"), json!({})).await, StatusCode::UNAUTHORIZED);
    assert_eq!(f.rpc("no-such-rpc", Some(&f.agent), json!({})).await, StatusCode::NOT_FOUND);

    let (text, after) = f.metrics().await;
    for (series, value) in [
        ("redline_rpc_requests_total{rpc=\"createChange\",status=\"2xx\"}", 1.0),
        ("redline_rpc_requests_total{rpc=\"getSession\",status=\"2xx\"}", 2.0),
        ("redline_rpc_requests_total{rpc=\"getSession\",status=\"4xx\"}", 2.0),
        ("redline_rpc_requests_total{rpc=\"unknown\",status=\"4xx\"}", 1.0),
        ("redline_rpc_duration_seconds_count{rpc=\"getSession\"}", 4.0),
        ("redline_rpc_duration_seconds_bucket{rpc=\"getSession\",le=\"+Inf\"}", 4.0),
        ("redline_rpc_duration_seconds_count{rpc=\"createChange\"}", 1.0),
        ("redline_changes{status=\"open\"}", 1.0),
        ("redline_changes{status=\"done\"}", 0.0),
        ("redline_items_filed", 1.0),
        ("redline_items_done", 0.0),
        ("redline_questions", 0.0),
        ("redline_time_to_done_seconds_count", 0.0),
        ("redline_time_to_done_seconds_bucket{le=\"+Inf\"}", 0.0),
        ("redline_event_streams_open", 0.0),
    ] {
        assert_eq!(after.get(series), Some(&value), "{series} in\n{text}");
    }
    assert!(after["redline_rpc_duration_seconds_sum{rpc=\"createChange\"}"] > 0.0);
    for secret in
        [TITLE, "salmon", &f.filer, &f.agent, "not-a-token", &f.project_id, &f.stage_id, "Ann", "demo"]
    {
        assert!(!text.contains(secret), "{secret:?} is in the metrics");
    }
}

#[tokio::test]
async fn open_event_streams_are_counted_until_they_close() {
    let f = fixture().await;
    let stream = format!("/events/changes:{}", f.project_id);
    let first = f.get(&stream, Some(&f.agent)).await;
    assert_eq!(first.status(), StatusCode::OK);
    let second = f.get(&stream, Some(&f.agent)).await;
    assert_eq!(second.status(), StatusCode::OK);
    let refused = f.get(&stream, None).await;
    assert_eq!(refused.status(), StatusCode::UNAUTHORIZED);
    assert_eq!(f.metrics().await.1["redline_event_streams_open"], 2.0);
    drop(first);
    assert_eq!(f.metrics().await.1["redline_event_streams_open"], 1.0);
    drop(second);
    assert_eq!(f.metrics().await.1["redline_event_streams_open"], 0.0);
}

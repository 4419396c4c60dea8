//! `GET /healthz` and `GET /metrics`, through `app(state)` and `metrics_app(state)` with
//! `oneshot`, and what a caller without a good token can make the server do.

mod common;

use std::collections::HashMap;

use axum::Router;
use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode, header};
use redline_protocol::Scope;
use redline_server::admin;
use redline_server::{AppState, Clock, Store, app, metrics_app};
use serde_json::{Value, json};
use tower::ServiceExt;

const TITLE: &str = "The salmon button on checkout 7f3a";

struct Fixture {
    app: Router,
    /// The operator's listener (`--metrics-addr`).
    metrics_app: Router,
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
        app: app(state.clone()),
        metrics_app: metrics_app(state),
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

    async fn rpc_response(&self, name: &str, token: &str) -> axum::response::Response {
        let request = Request::post(format!("/rpc/{name}"))
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, format!("Bearer {token}"));
        self.app.clone().oneshot(request.body(Body::from("{}")).unwrap()).await.unwrap()
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
        let request = Request::get("/metrics").body(Body::empty()).unwrap();
        let res = self.metrics_app.clone().oneshot(request).await.unwrap();
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
    // What the store said is reused for a moment, however often it is asked.
    assert_eq!(f.get("/healthz", None).await.status(), StatusCode::OK);
    // Once the reuse window is over, it asks the store again.
    common::until("a 503", || async {
        f.get("/healthz", None).await.status() == StatusCode::SERVICE_UNAVAILABLE
    })
    .await;
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
        ("redline_body_bytes_held", 0.0),
        ("redline_answer_bytes_held", 0.0),
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

/// `/metrics` counts over the whole store: the API's listener does not serve it, to
/// anyone; the operator's loopback listener does.
#[tokio::test]
async fn metrics_are_not_served_on_the_api_listener() {
    let f = fixture().await;
    assert_eq!(f.get("/metrics", None).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(f.get("/metrics", Some(&f.agent)).await.status(), StatusCode::NOT_FOUND);
    assert_eq!(f.metrics().await.1["redline_store_up"], 1.0);
}

/// A client sending tokens the server does not know is answered 429 with Retry-After
/// once its burst is spent (the store is not asked for those; `auth`'s unit test counts
/// the reads), while a token checked a moment ago is still let in.
#[tokio::test]
async fn made_up_tokens_are_rate_limited_before_the_store() {
    let f = fixture().await;
    assert_eq!(f.rpc_response("getSession", &f.agent).await.status(), StatusCode::OK);
    let burst = redline_server::auth::TOKEN_READS.burst as usize;
    for guess in 0..burst {
        let res = f.rpc_response("getSession", &format!("rl_guess{guess}")).await;
        assert_eq!(res.status(), StatusCode::UNAUTHORIZED, "guess {guess}");
    }
    for guess in burst..burst + 50 {
        let res = f.rpc_response("getSession", &format!("rl_guess{guess}")).await;
        assert_eq!(res.status(), StatusCode::TOO_MANY_REQUESTS, "guess {guess}");
        assert!(res.headers().contains_key(header::RETRY_AFTER));
    }
    let stream = format!("/events/changes:{}", f.project_id);
    assert_eq!(f.get(&stream, Some("rl_guess")).await.status(), StatusCode::TOO_MANY_REQUESTS);
    assert_eq!(f.rpc_response("getSession", &f.agent).await.status(), StatusCode::OK);
}

/// Request bodies in flight share one budget of bytes: a body that does not fit while
/// others are being read is answered 503 with Retry-After (not read, not held), and
/// fits again once they are answered.
#[tokio::test]
async fn bodies_in_flight_share_a_budget() {
    let f = fixture().await;
    let dir = tempfile::tempdir().unwrap();
    let mut state =
        AppState::new(f.store.clone(), Clock::manual(common::START), dir.path().join("blobs")).await.unwrap();
    state.body_budget = redline_server::limit::Budget::new(100_000, 100_000, "request bodies");
    let budget = state.body_budget.clone();
    let app = app(state);
    let upload = |body: Body, length: Option<usize>| {
        let mut request = Request::post("/rpc/uploadShot")
            .header(header::CONTENT_TYPE, "application/json")
            .header(header::AUTHORIZATION, format!("Bearer {}", f.filer));
        if let Some(length) = length {
            request = request.header(header::CONTENT_LENGTH, length);
        }
        app.clone().oneshot(request.body(body).unwrap())
    };
    let image = |len: usize| {
        let data =
            json!({"projectId": f.project_id, "contentType": "image/png", "imageBase64": "A".repeat(len)});
        data.to_string()
    };

    // A slow sender: 70 kB sent, the rest held back, without a Content-Length.
    let (send, sent) = tokio::sync::mpsc::channel::<Vec<u8>>(1);
    let chunks = futures_util::stream::unfold(sent, |mut sent| async move {
        sent.recv().await.map(|chunk| (Ok::<_, std::io::Error>(chunk), sent))
    });
    let slow = tokio::spawn(upload(Body::from_stream(chunks), None));
    let whole = image(70_000).into_bytes();
    send.send(whole[..70_000].to_vec()).await.unwrap();
    for _ in 0..500 {
        if budget.held() >= 70_000 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    assert!(budget.held() >= 70_000, "{} bytes held", budget.held());

    // 50 kB more do not fit, by their Content-Length or as they come.
    for length in [Some(50_050), None] {
        let body = image(50_000);
        let res = upload(Body::from(body), length).await.unwrap();
        assert_eq!(res.status(), StatusCode::SERVICE_UNAVAILABLE, "{length:?}");
        assert_eq!(res.headers()[header::RETRY_AFTER], "1");
    }
    send.send(whole[70_000..].to_vec()).await.unwrap();
    drop(send);
    let answered = slow.await.unwrap().unwrap();
    assert_ne!(answered.status(), StatusCode::SERVICE_UNAVAILABLE);
    assert_eq!(budget.held(), 0, "an answered request gives its bytes back");
    let res = upload(Body::from(image(50_000)), None).await.unwrap();
    assert_ne!(res.status(), StatusCode::SERVICE_UNAVAILABLE);
}

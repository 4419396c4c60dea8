//! The transport: envelope, errors, auth, getSession, healthz, CORS, admin commands.

mod common;

use axum::body::{Body, to_bytes};
use axum::http::{Request, StatusCode};
use common::{Binary, TestServer};
use redline_protocol::Scope;
use redline_server::auth::CHECK_REUSE_MS;
use redline_server::{AppState, Clock, Store, admin, app};
use serde_json::{Value, json};
use tower::ServiceExt;

#[tokio::test]
async fn envelope_and_bare_input() {
    let s = TestServer::start().await;
    let (status, body) = s.post(&s.ann, "getSession", r#"{"rpcName":"getSession","data":{}}"#.into()).await;
    assert_eq!(status, 200, "{body}");
    let (status, bare) = s.post(&s.ann, "getSession", "{}".into()).await;
    assert_eq!(status, 200);
    assert_eq!(body, bare);
}

#[tokio::test]
async fn openapi_lists_every_rpc_with_schemas_from_the_types() {
    let s = TestServer::start().await;
    let res = s.http.get(format!("{}/openapi.json", s.base)).send().await.unwrap();
    assert_eq!(res.status(), 200);
    let doc: Value = serde_json::from_str(&res.text().await.unwrap()).expect("openapi.json parses");
    assert_eq!(doc["openapi"], "3.0.3");
    for name in redline_protocol::RPC_NAMES {
        let op = &doc["paths"][format!("/rpc/{name}")]["post"];
        assert_eq!(op["operationId"], *name, "{name} has no path");
        let input = &op["requestBody"]["content"]["application/json"]["schema"]["$ref"];
        let output = &op["responses"]["200"]["content"]["application/json"]["schema"]["$ref"];
        assert!(input.is_string() && output.is_string(), "{name}: {op}");
    }
    let schemas = &doc["components"]["schemas"];
    let required = |schema: &str| {
        let mut r: Vec<String> = serde_json::from_value(schemas[schema]["required"].clone()).unwrap();
        r.sort();
        r
    };
    // Required fields are the wire names of those without a default.
    assert_eq!(required("CreateChangeInput"), ["stageId", "title"]);
    assert_eq!(required("ClaimChangesInput"), ["claimedBy", "projectId"]);
    assert_eq!(required("VerifyChangeInput"), ["changeId", "verdict"]);
    assert_eq!(schemas["Verdict"]["enum"], json!(["fixed", "still_wrong"]));
    let verify = &doc["paths"]["/rpc/verifyChange"]["post"];
    assert_eq!(verify["summary"], "Needs a token with scope `changes:project:file`.");
    assert_eq!(required("Stage"), ["branch", "changesEnabled", "createdAt", "projectId", "stageId", "type"]);
    let create = &schemas["CreateChangeInput"]["properties"];
    assert!(["changeId", "screenshotKey", "consoleErrors", "capture"].iter().all(|f| create[f].is_object()));
    assert_eq!(
        doc["paths"]["/rpc/createChange"]["post"]["responses"]["200"]["content"]["application/json"]["schema"],
        json!({"$ref": "#/components/schemas/ChangeOutput"})
    );
    assert_eq!(schemas["ChangeStatus"]["enum"].as_array().map(Vec::len), Some(6));
}

#[tokio::test]
async fn get_session_names_the_person_project_and_scopes() {
    let s = TestServer::start().await;
    let session = s.ok(&s.ann, "getSession", json!({})).await;
    assert_eq!(session["name"], "Ann");
    assert!(session["userId"].as_str().is_some_and(|id| id.len() == 36));
    assert_eq!(session["projects"], json!([{"projectId": s.project_id, "name": "demo"}]));
    assert_eq!(session["scopes"], json!(["changes:project:read", "changes:project:file"]));
}

#[tokio::test]
async fn errors_have_the_protocol_shape() {
    let s = TestServer::start().await;
    let body = s.err(&s.ann, "noSuchRpc", json!({}), 404, "not_found").await;
    assert!(body["message"].as_str().unwrap().contains("noSuchRpc"));
    s.err("", "getSession", json!({}), 401, "unauthorized").await;
    let body = s.err("rl_not_a_real_token", "getSession", json!({}), 401, "unauthorized").await;
    assert!(!body.to_string().contains("rl_not_a_real_token"), "the token must not be echoed");
    let (status, body) = s.post(&s.ann, "getSession", "{not json".into()).await;
    assert_eq!((status, body["code"].as_str()), (400, Some("bad_input")), "{body}");
    // A token without the read scope cannot read: 403 names the missing scope.
    let body = s.err(&s.file_only, "listStages", json!({"projectId": s.project_id}), 403, "forbidden").await;
    assert!(body["message"].as_str().unwrap().contains("changes:project:read"));
    // 400 names the field.
    let body = s.err(&s.ann, "listStages", json!({}), 400, "bad_input").await;
    assert_eq!(body["message"], "projectId: is required");
}

/// A revoked token is refused once the server's check of it is older than
/// `CHECK_REUSE_MS`, on every route; an expired one exactly at its expiry.
#[tokio::test]
async fn revoked_and_expired_tokens_are_refused() {
    let s = TestServer::start().await;
    let scopes = [Scope::Read, Scope::File];
    let now = || s.clock.now();
    let tess = admin::create_token(&s.store, "demo", &scopes, "Tess", None, now()).await.unwrap();
    s.ok(&tess.token, "getSession", json!({})).await;
    let revoked = admin::revoke_token(&s.store, &tess.token_id, now()).await.unwrap();
    assert_eq!((revoked.name.as_str(), revoked.revoked_at), ("Tess", Some(now())));
    s.clock.advance_millis(CHECK_REUSE_MS);
    let body = s.err(&tess.token, "getSession", json!({}), 401, "unauthorized").await;
    assert_eq!(body["message"], "this token has been revoked");
    let events = format!("{}/events/changes:{}", s.base, s.project_id);
    let res = s.http.get(&events).bearer_auth(&tess.token).send().await.unwrap();
    assert_eq!(res.status(), 401);
    // Revoking again keeps the first stamp.
    let again = admin::revoke_token(&s.store, &tess.token, now()).await.unwrap();
    assert_eq!(again.revoked_at, revoked.revoked_at);

    let end = now().plus_seconds(60);
    let cy = admin::create_token(&s.store, "demo", &scopes, "Cy", Some(end), now()).await.unwrap();
    s.clock.advance_millis(60_000 - 1);
    s.ok(&cy.token, "getSession", json!({})).await;
    // Its check is a millisecond old, but the token has expired.
    s.clock.advance_millis(1);
    let body = s.err(&cy.token, "getSession", json!({}), 401, "unauthorized").await;
    assert_eq!(body["message"], format!("this token expired at {end}"));
    assert!(!body.to_string().contains(&cy.token));
    let past = admin::create_token(&s.store, "demo", &scopes, "Cy", Some(now()), now()).await;
    assert!(past.unwrap_err().to_string().contains("future"));

    let listed = admin::list_tokens(&s.store, Some("demo")).await.unwrap();
    let state: Vec<_> = listed
        .iter()
        .filter(|t| ["Tess", "Cy"].contains(&t.name.as_str()))
        .map(|t| (t.name.as_str(), t.revoked_at.is_some(), t.expires_at))
        .collect();
    assert_eq!(state, [("Tess", true, None), ("Cy", false, Some(end))]);
    // The others' tokens were not touched.
    s.ok(&s.ann, "getSession", json!({})).await;
}

#[tokio::test]
async fn rejects_an_rpc_name_mismatch() {
    let s = TestServer::start().await;
    let (status, body) = s.post(&s.ann, "getSession", r#"{"rpcName":"listStages","data":{}}"#.into()).await;
    assert_eq!(status, 400);
    assert!(body["message"].as_str().unwrap().starts_with("rpcName:"));
}

#[tokio::test]
async fn cors_allows_any_origin_with_bearer_headers() {
    let s = TestServer::start().await;
    let res = s
        .http
        .request(reqwest::Method::OPTIONS, format!("{}/rpc/getSession", s.base))
        .header("origin", "chrome-extension://abcdef")
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization,content-type")
        .send()
        .await
        .unwrap();
    assert!(res.status().is_success());
    assert_eq!(res.headers()["access-control-allow-origin"], "*");
    let allowed = res.headers()["access-control-allow-headers"].to_str().unwrap().to_ascii_lowercase();
    assert!(allowed.contains("authorization") && allowed.contains("content-type"), "{allowed}");
}

async fn oneshot_app() -> (axum::Router, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_dir(dir.path()).await.unwrap();
    let state = AppState::new(store, Clock::System, dir.path().join("blobs")).await.unwrap();
    (app(state), dir)
}

#[tokio::test]
async fn oneshot_healthz_and_unknown_rpc() {
    let (app, _dir) = oneshot_app().await;
    let res = app.clone().oneshot(Request::get("/healthz").body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(res.status(), StatusCode::OK);
    let res = app.oneshot(Request::post("/rpc/nothing").body(Body::from("{}")).unwrap()).await.unwrap();
    assert_eq!(res.status(), StatusCode::NOT_FOUND);
    let body: Value = serde_json::from_slice(&to_bytes(res.into_body(), 10_000).await.unwrap()).unwrap();
    assert_eq!(body["code"], "not_found");
}

#[tokio::test]
async fn oneshot_missing_token_is_401() {
    let (app, _dir) = oneshot_app().await;
    let res = app.oneshot(Request::post("/rpc/getSession").body(Body::from("{}")).unwrap()).await.unwrap();
    assert_eq!(res.status(), StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_changed_migration_stops_the_server() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_dir(dir.path()).await.unwrap();
    sqlx::query("UPDATE _sqlx_migrations SET checksum = X'00' WHERE version = 1")
        .execute(store.pool())
        .await
        .unwrap();
    store.pool().close().await;
    let err = Store::open_dir(dir.path()).await.unwrap_err().to_string();
    assert!(err.contains("0001_init.sql") && err.contains("refusing to start"), "{err}");
}

// ---- the admin commands, through the real binary ----

#[tokio::test]
async fn admin_commands_via_the_binary() {
    let dir = tempfile::tempdir().unwrap();
    let d = &Binary::on_dir(dir.path());
    let out = d.run(&["project", "add", "shop"]).await.ok().stdout;
    assert!(out.starts_with("project shop added"), "{out}");
    let project = d.json(&["project", "add", "blog", "--grace-seconds", "5"]).await;
    assert_eq!((project["name"].as_str(), project["graceSeconds"].as_i64()), (Some("blog"), Some(5)));
    let err = d.run(&["project", "add", "shop"]).await.failed().stderr;
    assert!(err.contains("already exists"), "{err}");

    let stage = d
        .json(&[
            "stage",
            "add",
            "--project",
            "shop",
            "--branch",
            "main",
            "--url",
            "https://shop.example",
            "--sha",
            "ABC1234",
        ])
        .await;
    assert_eq!((stage["type"].as_str(), stage["gitSha"].as_str()), (Some("production"), Some("abc1234")));
    // A stage's gitSha is compared with items' commit ids: nothing else is one.
    for sha in ["abc", "--output=x", "abc1234..HEAD"] {
        let args = ["stage", "add", "--project", "shop", "--branch", "main", "--url", "https://shop.example"];
        let err = d.run(&[&args[..], &[&format!("--sha={sha}")]].concat()).await.failed().stderr;
        assert!(err.contains("is not a commit id (7 to 40 hex digits)"), "{sha}: {err}");
    }
    let preview = d
        .json(&[
            "stage",
            "add",
            "--project",
            project["projectId"].as_str().unwrap(),
            "--branch",
            "feat-x",
            "--url",
            "https://x.example",
        ])
        .await;
    assert_eq!(preview["type"], "preview");
    let off = d
        .json(&[
            "stage",
            "add",
            "--project",
            "shop",
            "--branch",
            "main",
            "--url",
            "https://shop.example",
            "--changes-enabled",
            "false",
        ])
        .await;
    assert_eq!((off["changesEnabled"].as_bool(), off["gitSha"].as_str()), (Some(false), Some("abc1234")));
    let err = d
        .run(&[
            "stage",
            "add",
            "--project",
            "shop",
            "--branch",
            "dev",
            "--url",
            "https://d.example",
            "--type",
            "production",
        ])
        .await
        .failed()
        .stderr;
    assert!(err.contains("main"), "{err}");

    let token = d
        .json(&[
            "token",
            "create",
            "--project",
            "shop",
            "--scope",
            "changes:project:read,changes:project:write",
            "--name",
            "bot",
        ])
        .await;
    assert!(token["token"].as_str().unwrap().starts_with("rl_"));
    assert_eq!(token["scopes"], json!(["changes:project:read", "changes:project:write"]));
    let out = d
        .run(&["token", "create", "--project", "shop", "--scope", "changes:project:file", "--name", "Ann"])
        .await
        .ok()
        .stdout;
    assert!(out.starts_with("rl_"), "{out}");
    let err = d
        .run(&["token", "create", "--project", "nope", "--scope", "changes:project:file", "--name", "Ann"])
        .await
        .failed()
        .stderr;
    assert!(err.contains("no project"), "{err}");

    let expiring_for = |days: &'static str| async move {
        let args =
            ["token", "create", "--project", "shop", "--scope", "changes:project:read", "--name", "Cy"];
        let mut all = args.to_vec();
        all.extend(["--expires-in-days", days]);
        d.run(&all).await
    };
    let out_cy = expiring_for("30").await.ok().stdout;
    let expiring = d.json(&["token", "list"]).await[2].clone();
    assert!(out_cy.contains(expiring["tokenId"].as_str().unwrap()), "{out_cy}");
    let at = |field: &str| redline_protocol::Timestamp::parse(expiring[field].as_str().unwrap()).unwrap();
    let (expires, created) = (at("expiresAt"), at("createdAt"));
    assert_eq!(expires, created.plus_minutes(30 * 24 * 60));
    let listed = d.json(&["token", "list", "--project", "shop"]).await;
    let names: Vec<&str> = listed.as_array().unwrap().iter().map(|t| t["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["bot", "Ann", "Cy"]);
    assert!(!listed.to_string().contains("rl_"), "no secret is listed: {listed}");
    // Revoked by id, or by the secret itself; the secret is never echoed.
    let revoked = d.json(&["token", "revoke", token["tokenId"].as_str().unwrap()]).await;
    assert_eq!((revoked["name"].as_str(), revoked["revokedAt"].is_string()), (Some("bot"), true));
    let out = d.run(&["token", "revoke", out.lines().next().unwrap()]).await.ok().stdout;
    assert!(out.starts_with("revoked: ") && out.contains("Ann") && !out.contains("rl_"), "{out}");
    let err = d.run(&["token", "revoke", "rl_nothing"]).await.failed().stderr;
    assert!(err.contains("no token") && !err.contains("rl_nothing"), "{err}");
    let out = d.run(&["token", "list"]).await.ok().stdout;
    assert!(out.lines().filter(|l| l.contains("revoked")).count() == 2, "{out}");
    let err = expiring_for("0").await.failed().stderr;
    assert!(err.contains("expires-in-days"), "{err}");

    let err = d
        .run(&[
            "auth",
            "approve",
            "bcdf-ghjk",
            "--project",
            "shop",
            "--scope",
            "changes:project:read",
            "--name",
            "Ann",
        ])
        .await
        .failed()
        .stderr;
    assert!(err.contains("BCDF-GHJK is unknown"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_prints_the_real_port_and_never_logs_tokens() {
    let dir = tempfile::tempdir().unwrap();
    let d = Binary::on_dir(dir.path());
    let project = d.json(&["project", "add", "shop"]).await;
    let project_id = project["projectId"].as_str().unwrap().to_owned();
    let token = d
        .json(&["token", "create", "--project", "shop", "--scope", "changes:project:read", "--name", "Ann"])
        .await;
    let token = token["token"].as_str().unwrap().to_owned();
    let log_path = dir.path().join("stderr.log");
    let mut serve = common::command(["serve", "--addr", "127.0.0.1:0"]);
    serve.args(&d.store_args).env("RUST_LOG", "trace").stderr(std::fs::File::create(&log_path).unwrap());
    let (mut child, url) = common::serve_command(serve).await;
    assert!(!url.ends_with(":0"), "{url}");
    let http = common::http_client();
    let health = http.get(format!("{url}/healthz")).send().await.unwrap().status();
    let call = |t: String| http.post(format!("{url}/rpc/getSession")).bearer_auth(t).body("{}").send();
    let session = call(token.clone()).await.unwrap().status();
    let bad = call(format!("{token}x")).await.unwrap().status();
    // An open event stream must not keep a stopping server alive.
    let mut events =
        http.get(format!("{url}/events/changes:{project_id}")).bearer_auth(&token).send().await.unwrap();
    assert!(events.chunk().await.unwrap().is_some());
    let pid = child.id().unwrap().to_string();
    assert!(std::process::Command::new("kill").args(["-TERM", &pid]).status().unwrap().success());
    let stopped = tokio::time::timeout(std::time::Duration::from_secs(5), child.wait()).await.is_ok();
    assert!(stopped, "SIGTERM should stop the server within 5 s, open event streams included");
    assert_eq!((health.as_u16(), session.as_u16(), bad.as_u16()), (200, 200, 401));
    let log = std::fs::read_to_string(&log_path).unwrap();
    assert!(log.contains("getSession"), "trace logging should show requests: {log}");
    assert!(!log.contains(&token[3..]), "a token leaked into the log");
}

#[tokio::test]
async fn stages_are_listed_and_resolved_within_the_project() {
    let s = TestServer::start().await;
    let out = s.ok(&s.reader, "listStages", json!({"projectId": s.project_id})).await;
    let stages = out["stages"].as_array().unwrap();
    assert_eq!(stages.len(), 1);
    assert_eq!(stages[0]["stageId"], s.stage_id.as_str());
    assert_eq!(stages[0]["type"], "production");
    assert_eq!(stages[0]["changesEnabled"], true);
    s.err(&s.reader, "listStages", json!({"projectId": "someone-else"}), 403, "forbidden").await;

    let found =
        s.ok(&s.reader, "resolveStage", json!({"url": "https://demo.example.com/orders/7?tab=1"})).await;
    assert_eq!(
        found,
        json!({"projectId": s.project_id, "stageId": s.stage_id, "branch": "main", "gitSha": "a91c4e2"})
    );
    s.err(&s.reader, "resolveStage", json!({"url": "https://elsewhere.example.com/"}), 404, "not_found")
        .await;
}

#[tokio::test]
async fn too_many_calls_get_429_with_retry_after() {
    let s = TestServer::start_with(|state| {
        state.rate_limit = redline_server::limit::RateLimit { per_second: 1.0, burst: 2.0 };
    })
    .await;
    s.ok(&s.ann, "getSession", json!({})).await;
    s.ok(&s.ann, "getSession", json!({})).await;
    let res = s
        .http
        .post(format!("{}/rpc/getSession", s.base))
        .bearer_auth(&s.ann)
        .body("{}")
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 429);
    assert_eq!(res.headers()["retry-after"], "1");
    let body: Value = res.json().await.unwrap();
    assert_eq!(body["code"], "rate_limited");
    s.ok(&s.bob, "getSession", json!({})).await;
    s.advance_secs(1);
    s.ok(&s.ann, "getSession", json!({})).await;
}

#[tokio::test]
async fn oversized_bodies_get_413() {
    let s = TestServer::start().await;
    let huge =
        format!(r#"{{"projectId":"p","contentType":"image/png","imageBase64":"{}"}}"#, "A".repeat(13 << 20));
    let (status, body) = s.post(&s.ann, "uploadShot", huge).await;
    assert_eq!((status, body["code"].as_str()), (413, Some("too_large")), "{body}");
}

#[tokio::test]
async fn every_rpc_of_the_protocol_is_served() {
    let s = TestServer::start().await;
    for name in redline_protocol::RPC_NAMES {
        let (status, body) = s.post("", name, "{}".into()).await;
        assert_ne!(status, 404, "{name}: {body}");
    }
}

/// A write transaction that reads first is not failed by another connection's write
/// made between its read and its write (as an admin command's was, beside a server or
/// its own second connection: "database is locked"): on SQLite it holds the write lock
/// from its start, and the other writer waits its turn.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_that_reads_first_is_not_failed_by_another_writer() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open_dir(dir.path()).await.unwrap();
    let mut tx = store.begin_write().await.unwrap();
    let before: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users").fetch_one(&mut *tx).await.unwrap();
    let other = {
        let pool = store.pool().clone();
        tokio::spawn(async move {
            sqlx::query("INSERT INTO users (user_id, name, created_at) VALUES ('u-other', 'other', 0)")
                .execute(&pool)
                .await
        })
    };
    // The read took the write lock: a writer that will not wait is refused now, so the
    // other writer, whenever it comes before the commit, waits.
    let impatient = sqlx::sqlite::SqliteConnectOptions::new()
        .filename(dir.path().join("redline.db"))
        .busy_timeout(std::time::Duration::ZERO);
    let mut impatient = sqlx::ConnectOptions::connect(&impatient).await.unwrap();
    let refused = sqlx::query("BEGIN IMMEDIATE").execute(&mut impatient).await.unwrap_err();
    assert!(refused.to_string().contains("locked"), "{refused}");
    sqlx::query("INSERT INTO users (user_id, name, created_at) VALUES ('u-first', 'first', 0)")
        .execute(&mut *tx)
        .await
        .expect("the write after the read");
    tx.commit().await.unwrap();
    other.await.unwrap().expect("the other writer, after its turn");
    let after: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM users").fetch_one(store.pool()).await.unwrap();
    assert_eq!(after, before + 2);
}

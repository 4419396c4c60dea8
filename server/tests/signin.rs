//! Sign-in: requestCliAuth → approve on the server → pollCliAuth hands out a token once.

mod common;

use common::{START, TestServer};
use redline_protocol::Scope;
use redline_server::admin;
use serde_json::json;

#[tokio::test]
async fn an_approved_code_yields_a_token_once() {
    let s = TestServer::start().await;
    let req = s.ok("", "requestCliAuth", json!({})).await;
    let code = req["code"].as_str().unwrap().to_owned();
    assert_eq!(code.len(), 9);
    assert_eq!(req["expiresAt"], START.plus_seconds(600).to_string());
    assert_eq!(req["verifyUrl"], format!("{}/auth/verify?code={code}", s.base));
    assert_eq!(s.ok("", "pollCliAuth", json!({"code": code})).await, json!({"status": "pending"}));

    let page = s.http.get(req["verifyUrl"].as_str().unwrap()).send().await.unwrap().text().await.unwrap();
    assert!(page.contains(&format!("redline auth approve {code}")), "{page}");

    admin::approve_sign_in(
        &s.store,
        &code.to_lowercase(),
        "demo",
        &[Scope::Read, Scope::File],
        "Cleo",
        START,
    )
    .await
    .unwrap();
    let done = s.ok("", "pollCliAuth", json!({"code": code})).await;
    assert_eq!(done["status"], "confirmed");
    let token = done["token"].as_str().unwrap();
    let session = s.ok(token, "getSession", json!({})).await;
    assert_eq!(session["name"], "Cleo");
    assert_eq!(session["scopes"], json!(["changes:project:read", "changes:project:file"]));
    assert_eq!(s.ok("", "pollCliAuth", json!({"code": code})).await, json!({"status": "expired"}));
    assert!(admin::approve_sign_in(&s.store, &code, "demo", &[Scope::Read], "Cleo", START).await.is_err());
}

#[tokio::test]
async fn codes_can_be_rejected_and_expire() {
    let s = TestServer::start().await;
    let code = |v: serde_json::Value| v["code"].as_str().unwrap().to_owned();
    let refused = code(s.ok("", "requestCliAuth", json!({})).await);
    admin::reject_sign_in(&s.store, &refused, START).await.unwrap();
    assert_eq!(s.ok("", "pollCliAuth", json!({"code": refused})).await, json!({"status": "rejected"}));

    let late = code(s.ok("", "requestCliAuth", json!({})).await);
    s.advance_secs(600);
    assert_eq!(s.ok("", "pollCliAuth", json!({"code": late})).await, json!({"status": "expired"}));
    let err =
        admin::approve_sign_in(&s.store, &late, "demo", &[Scope::Read], "x", START.plus_seconds(600)).await;
    assert!(err.unwrap_err().to_string().contains("expired"));
    let page =
        s.http.get(format!("{}/auth/verify?code={late}", s.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("unknown, used or expired") && !page.contains(&late), "{page}");

    assert_eq!(s.ok("", "pollCliAuth", json!({"code": "BCDF-GHJK"})).await, json!({"status": "expired"}));
    assert_eq!(s.ok("", "pollCliAuth", json!({"code": "<script>"})).await, json!({"status": "expired"}));
    s.err("", "pollCliAuth", json!({}), 400, "bad_input").await;
}

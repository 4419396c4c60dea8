//! Sign-in: requestCliAuth → approve on the server → pollCliAuth, presenting the device
//! secret, hands out a token once; approvals and codes expire; the sign-in calls are
//! rate-limited per client.

mod common;

use common::{START, TestServer};
use redline_protocol::Scope;
use redline_server::limit::{RateLimit, SignInLimits};
use redline_server::{admin, signin};
use serde_json::{Value, json};
use sqlx::Row;

/// `(code, deviceSecret)` of a new sign-in.
async fn request(s: &TestServer) -> (String, String) {
    let req = s.ok("", "requestCliAuth", json!({})).await;
    (req["code"].as_str().unwrap().to_owned(), req["deviceSecret"].as_str().unwrap().to_owned())
}

async fn poll(s: &TestServer, code: &str, secret: &str) -> Value {
    s.ok("", "pollCliAuth", json!({"code": code, "deviceSecret": secret})).await
}

const CLEO: signin::SignInGrant<'static> = signin::SignInGrant {
    project: "demo",
    scopes: &[Scope::Read, Scope::File],
    name: "Cleo",
    token_days: signin::SIGN_IN_TOKEN_DAYS,
};

async fn approve(s: &TestServer, code: &str, at_secs: i64) -> signin::SignInApproval {
    signin::approve_sign_in(&s.store, code, CLEO, START.plus_seconds(at_secs)).await.unwrap()
}

#[tokio::test]
async fn an_approved_code_yields_a_token_once_to_its_device() {
    let s = TestServer::start().await;
    let req = s.ok("", "requestCliAuth", json!({})).await;
    let code = req["code"].as_str().unwrap().to_owned();
    let secret = req["deviceSecret"].as_str().unwrap().to_owned();
    assert_eq!(code.len(), 9);
    assert!(secret.len() >= 40, "{secret}");
    assert_eq!(req["expiresAt"], START.plus_seconds(600).to_string());
    assert_eq!(req["verifyUrl"], format!("{}/auth/verify?code={code}", s.base));
    assert!(!req["verifyUrl"].as_str().unwrap().contains(&secret));
    assert_eq!(poll(&s, &code, &secret).await, json!({"status": "pending"}));
    // The secret is stored hashed.
    let stored: String = sqlx::query("SELECT secret_hash FROM cli_auth WHERE code = $1")
        .bind(&code)
        .fetch_one(s.store.pool())
        .await
        .unwrap()
        .try_get("secret_hash")
        .unwrap();
    assert_eq!(stored, redline_server::auth::hash_token(&secret));

    let page = s.http.get(req["verifyUrl"].as_str().unwrap()).send().await.unwrap().text().await.unwrap();
    assert!(page.contains(&format!("redline auth approve {code}")), "{page}");
    assert!(!page.contains(&secret));

    // The person approving sees where and when the code was asked for, before and as
    // they approve.
    let pending = signin::pending_sign_ins(&s.store, START).await.unwrap();
    assert_eq!(
        (pending[0].code.as_str(), pending[0].requested_from.as_deref()),
        (code.as_str(), Some("127.0.0.1"))
    );
    let approval = approve(&s, &code.to_lowercase(), 0).await;
    assert_eq!((approval.requested_from.as_deref(), approval.requested_at), (Some("127.0.0.1"), START));
    // The code alone collects nothing: no secret is a 400, a wrong one an unknown code.
    let body = s.err("", "pollCliAuth", json!({"code": code}), 400, "bad_input").await;
    assert!(body["message"].as_str().unwrap().starts_with("deviceSecret"), "{body}");
    s.err("", "pollCliAuth", json!({"code": code, "deviceSecret": ""}), 400, "bad_input").await;
    let (_, other_secret) = request(&s).await;
    assert_eq!(poll(&s, &code, &other_secret).await, json!({"status": "expired"}));
    assert_eq!(poll(&s, &code, "rlds_guess").await, json!({"status": "expired"}));

    let done = poll(&s, &code, &secret).await;
    assert_eq!(done["status"], "confirmed");
    let token = done["token"].as_str().unwrap();
    let session = s.ok(token, "getSession", json!({})).await;
    assert_eq!(session["name"], "Cleo");
    assert_eq!(session["scopes"], json!(["changes:project:read", "changes:project:file"]));
    // Collected once: the code is gone.
    assert_eq!(poll(&s, &code, &secret).await, json!({"status": "expired"}));
    assert!(signin::approve_sign_in(&s.store, &code, CLEO, START).await.is_err());
    // The token expires by itself, 90 days on.
    let listed = admin::list_tokens(&s.store, Some("demo")).await.unwrap();
    let cleo = listed.iter().find(|t| t.name == "Cleo").unwrap();
    assert_eq!(cleo.expires_at, Some(START.plus_minutes(90 * 24 * 60)));
}

#[tokio::test]
async fn two_polls_at_once_make_one_token() {
    let s = TestServer::start().await;
    let (code, secret) = request(&s).await;
    approve(&s, &code, 0).await;
    let polls = futures_util::future::join_all((0..8).map(|_| poll(&s, &code, &secret))).await;
    let confirmed = polls.iter().filter(|p| p["status"] == "confirmed").count();
    assert_eq!(confirmed, 1, "{polls:?}");
    assert!(polls.iter().all(|p| p["status"] == "confirmed" || p["status"] == "expired"), "{polls:?}");
}

#[tokio::test]
async fn an_approval_expires_minutes_after_it_is_given() {
    let s = TestServer::start().await;
    let (early, early_secret) = request(&s).await;
    let (late, late_secret) = request(&s).await;
    // Approved near the end of the codes' ten minutes: the approval runs five more.
    s.advance_secs(500);
    approve(&s, &early, 500).await;
    approve(&s, &late, 500).await;
    s.advance_secs(200);
    assert_eq!(poll(&s, &early, &early_secret).await["status"], "confirmed", "past the code's 600 s");
    s.advance_secs(100);
    assert_eq!(poll(&s, &late, &late_secret).await, json!({"status": "expired"}), "300 s after approval");
}

#[tokio::test]
async fn codes_can_be_rejected_and_expire_and_are_deleted() {
    let s = TestServer::start().await;
    let (refused, refused_secret) = request(&s).await;
    signin::reject_sign_in(&s.store, &refused, START).await.unwrap();
    assert_eq!(poll(&s, &refused, &refused_secret).await, json!({"status": "rejected"}));

    let (late, late_secret) = request(&s).await;
    s.advance_secs(600);
    assert_eq!(poll(&s, &late, &late_secret).await, json!({"status": "expired"}));
    let err = signin::approve_sign_in(&s.store, &late, CLEO, START.plus_seconds(600)).await;
    assert!(err.unwrap_err().to_string().contains("expired"));
    let page =
        s.http.get(format!("{}/auth/verify?code={late}", s.base)).send().await.unwrap().text().await.unwrap();
    assert!(page.contains("unknown, used or expired") && !page.contains(&late), "{page}");

    // The next request deletes every expired code, rejected ones included.
    let count = || async {
        sqlx::query("SELECT COUNT(*) AS n FROM cli_auth")
            .fetch_one(s.store.pool())
            .await
            .unwrap()
            .get::<i64, _>("n")
    };
    assert_eq!(count().await, 2);
    let (fresh, _) = request(&s).await;
    assert_eq!(count().await, 1);
    let left: String =
        sqlx::query("SELECT code FROM cli_auth").fetch_one(s.store.pool()).await.unwrap().get("code");
    assert_eq!(left, fresh);

    assert_eq!(poll(&s, "BCDF-GHJK", "rlds_x").await, json!({"status": "expired"}));
    assert_eq!(poll(&s, "<script>", "rlds_x").await, json!({"status": "expired"}));
    s.err("", "pollCliAuth", json!({}), 400, "bad_input").await;
}

/// A server that believes `X-Forwarded-For`, with small sign-in limits.
async fn limited() -> TestServer {
    TestServer::start_with(|state| {
        let tight = RateLimit { per_second: 0.001, burst: 3.0 };
        state.sign_in_limits = SignInLimits { request: tight, poll: tight, verify: tight };
        state.client_ip_header = Some(axum::http::HeaderName::from_static("x-forwarded-for"));
    })
    .await
}

async fn verify(s: &TestServer, from: &str) -> reqwest::Response {
    s.http
        .get(format!("{}/auth/verify?code=BCDF-GHJK", s.base))
        .header("x-forwarded-for", from)
        .send()
        .await
        .unwrap()
}

async fn poll_from(s: &TestServer, from: &str) -> u16 {
    let body = json!({"code": "BCDF-GHJK", "deviceSecret": "rlds_x"}).to_string();
    let res = s
        .http
        .post(format!("{}/rpc/pollCliAuth", s.base))
        .header("x-forwarded-for", from)
        .header("content-type", "application/json")
        .body(body)
        .send()
        .await
        .unwrap();
    res.status().as_u16()
}

#[tokio::test]
async fn the_verify_page_is_rate_limited_per_client() {
    let s = limited().await;
    for _ in 0..3 {
        assert_eq!(verify(&s, "192.0.2.1").await.status(), 200);
    }
    let refused = verify(&s, "192.0.2.1").await;
    assert_eq!(refused.status(), 429);
    assert!(refused.headers()["retry-after"].to_str().unwrap().parse::<u64>().unwrap() >= 1);
    // Another client is not held back by it, nor are this client's polls.
    assert_eq!(verify(&s, "192.0.2.2").await.status(), 200);
    assert_eq!(poll_from(&s, "192.0.2.1").await, 200);
}

#[tokio::test]
async fn polling_is_rate_limited_per_client_apart_from_tokens() {
    let s = limited().await;
    for _ in 0..3 {
        assert_eq!(poll_from(&s, "198.51.100.7").await, 200);
    }
    assert_eq!(poll_from(&s, "198.51.100.7").await, 429);
    assert_eq!(poll_from(&s, "198.51.100.8").await, 200, "another client");
    // Requests have their own bucket, and calls with a token theirs.
    let res = s
        .http
        .post(format!("{}/rpc/requestCliAuth", s.base))
        .header("x-forwarded-for", "198.51.100.7")
        .json(&json!({}))
        .send()
        .await
        .unwrap();
    assert_eq!(res.status(), 200);
    s.ok(&s.agent, "getSession", json!({})).await;
    assert_eq!(verify(&s, "198.51.100.7").await.status(), 200);
}

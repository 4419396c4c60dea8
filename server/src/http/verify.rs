//! `GET /auth/verify?code=…`, the sign-in's `verifyUrl`: the page `crate::signin`
//! words, rate-limited per client address, since it tells whether a code is pending.

use axum::extract::{Query, State};
use axum::http::{HeaderMap, header};
use axum::response::IntoResponse;
use serde::Deserialize;

use crate::error::ApiError;
use crate::http::AppState;
use crate::limit::ClientAddr;
use crate::signin;

#[derive(Deserialize)]
pub struct VerifyQuery {
    code: Option<String>,
}

/// Tells the person how the code is approved (see [`signin::verify_text`]).
pub async fn handle(
    State(state): State<AppState>,
    client: ClientAddr,
    headers: HeaderMap,
    Query(q): Query<VerifyQuery>,
) -> Result<impl IntoResponse, ApiError> {
    let key = format!("/auth/verify {}", client.key(&headers, state.client_ip_header.as_ref()));
    state.limiter.check(&key, state.sign_in_limits.verify, state.services.clock.now())?;
    let text = signin::verify_text(&state.services, q.code.as_deref()).await;
    Ok(([(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text))
}

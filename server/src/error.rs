//! The one error type of the HTTP API. It renders the protocol's error shape,
//! `{"message": "...", "code": "..."}` with the matching HTTP status (plus `items` for
//! 409 `not_claimable` and `Retry-After` for 429 and 503). Messages never contain a token.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use redline_protocol::{ErrorBody, FieldError, NotClaimableItem, codes};

#[derive(Clone, Debug)]
pub struct ApiError {
    status: StatusCode,
    code: &'static str,
    message: String,
    items: Option<Vec<NotClaimableItem>>,
    retry_after_secs: Option<u64>,
}

impl ApiError {
    fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> Self {
        ApiError { status, code, message: message.into(), items: None, retry_after_secs: None }
    }

    /// 400; `field` is the wire name (`title`, `capture.elements`).
    pub fn bad_input(field: &str, problem: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::BAD_REQUEST, codes::BAD_INPUT, format!("{field}: {problem}"))
    }

    /// 400 for a body that is not JSON at all.
    pub fn malformed(problem: impl std::fmt::Display) -> Self {
        Self::new(StatusCode::BAD_REQUEST, codes::BAD_INPUT, format!("body: {problem}"))
    }

    pub fn unauthorized(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNAUTHORIZED, codes::UNAUTHORIZED, message)
    }

    pub fn forbidden(message: impl Into<String>) -> Self {
        Self::new(StatusCode::FORBIDDEN, codes::FORBIDDEN, message)
    }

    pub fn not_found(message: impl Into<String>) -> Self {
        Self::new(StatusCode::NOT_FOUND, codes::NOT_FOUND, message)
    }

    /// 409 with one of the protocol's conflict codes.
    pub fn conflict(code: &'static str, message: impl Into<String>) -> Self {
        Self::new(StatusCode::CONFLICT, code, message)
    }

    /// 409 `not_claimable` with the per-item reasons.
    pub fn not_claimable(items: Vec<NotClaimableItem>) -> Self {
        let mut e = Self::conflict(codes::NOT_CLAIMABLE, "none of the named items can be claimed now");
        e.items = Some(items);
        e
    }

    pub fn too_large(message: impl Into<String>) -> Self {
        Self::new(StatusCode::PAYLOAD_TOO_LARGE, codes::TOO_LARGE, message)
    }

    pub fn unsupported_media(message: impl Into<String>) -> Self {
        Self::new(StatusCode::UNSUPPORTED_MEDIA_TYPE, codes::UNSUPPORTED_MEDIA_TYPE, message)
    }

    /// 429: slow down, and retry after `secs`.
    pub fn rate_limited(secs: u64) -> Self {
        let mut e =
            Self::new(StatusCode::TOO_MANY_REQUESTS, codes::RATE_LIMITED, "too many requests; slow down");
        e.retry_after_secs = Some(secs);
        e
    }

    /// 408: what the client was sending stopped coming, or came too slowly.
    pub fn timeout(message: impl Into<String>) -> Self {
        Self::new(StatusCode::REQUEST_TIMEOUT, codes::TIMEOUT, message)
    }

    /// 429 saying why: the caller holds too much at once; retry after `secs`.
    pub fn holds_too_much(message: impl Into<String>, secs: u64) -> Self {
        let mut e = Self::new(StatusCode::TOO_MANY_REQUESTS, codes::RATE_LIMITED, message);
        e.retry_after_secs = Some(secs);
        e
    }

    /// 503: the server is busy; retry after `secs`.
    pub fn unavailable(message: impl Into<String>, secs: u64) -> Self {
        let mut e = Self::new(StatusCode::SERVICE_UNAVAILABLE, codes::INTERNAL, message);
        e.retry_after_secs = Some(secs);
        e
    }

    /// A server fault. The cause is logged; the client only learns that it happened.
    pub fn internal(cause: impl std::fmt::Display) -> Self {
        tracing::error!(%cause, "internal error");
        Self::new(StatusCode::INTERNAL_SERVER_ERROR, codes::INTERNAL, "internal server error")
    }

    pub fn status(&self) -> StatusCode {
        self.status
    }

    /// The per-item reasons of a 409 `not_claimable`; empty for any other error.
    #[cfg(test)]
    pub fn items(&self) -> &[NotClaimableItem] {
        self.items.as_deref().unwrap_or_default()
    }
}

impl From<FieldError> for ApiError {
    fn from(e: FieldError) -> Self {
        ApiError::bad_input(&e.field, e.message)
    }
}

impl From<sqlx::Error> for ApiError {
    fn from(e: sqlx::Error) -> Self {
        ApiError::internal(e)
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = ErrorBody { message: self.message, code: self.code.to_owned(), items: self.items };
        let mut response = (self.status, Json(body)).into_response();
        if let Some(secs) = self.retry_after_secs {
            response.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(secs));
        }
        response
    }
}

//! What a failed call to the changes server means: the error rules, pure and tested
//! natively. The call itself, `POST {apiUrl}/rpc/{name}` with the protocol's envelope and
//! a bearer token, is `browser::api`'s [`Client::call`](crate::browser::api::Client::call).

use redline_protocol::StatusClass;
use serde::Deserialize;

/// A failed call, classified the way the protocol tells clients to treat it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ApiError {
    /// The server could not be reached at all.
    Network(String),
    /// 408, 429 and 5xx: try again later (`retry_after` in seconds when the server said).
    Transient { status: u16, message: String, retry_after: Option<u32> },
    /// 401 and 403: the token is missing, wrong, revoked or lacks the scope.
    SignIn { status: u16, message: String },
    /// 409: a decision to show the person; `code` says which conflict.
    Conflict { code: Option<String>, message: String },
    /// 404: the RPC or the item is gone.
    Gone { message: String },
    /// Any other 4xx: the request itself was wrong (the message names the field).
    Rejected { status: u16, message: String },
    /// A 2xx whose body was not the expected output.
    BadReply(String),
}

#[derive(Deserialize)]
pub(crate) struct ErrorBody {
    message: Option<String>,
    code: Option<String>,
}

impl ApiError {
    /// Classifies a non-2xx answer from its status, body and `Retry-After` header.
    pub fn from_response(status: u16, body: &str, retry_after: Option<&str>) -> ApiError {
        ApiError::from_parts(status, serde_json::from_str::<ErrorBody>(body).ok(), retry_after)
    }

    /// [`ApiError::from_response`] with the body already parsed (`None`: not the
    /// protocol's error object).
    pub(crate) fn from_parts(status: u16, parsed: Option<ErrorBody>, retry_after: Option<&str>) -> ApiError {
        let code = parsed.as_ref().and_then(|b| b.code.clone());
        let message = parsed
            .and_then(|b| b.message)
            .filter(|m| !m.trim().is_empty())
            .unwrap_or_else(|| format!("the server answered {status}"));
        match StatusClass::of(status) {
            StatusClass::SignIn => ApiError::SignIn { status, message },
            StatusClass::Gone => ApiError::Gone { message },
            StatusClass::Conflict => ApiError::Conflict { code, message },
            StatusClass::Transient => ApiError::Transient {
                status,
                message,
                retry_after: retry_after.and_then(|v| v.trim().parse().ok()),
            },
            StatusClass::Rejected => ApiError::Rejected { status, message },
        }
    }

    /// Whether the same call may succeed later without anyone doing anything.
    pub fn is_transient(&self) -> bool {
        matches!(self, ApiError::Network(_) | ApiError::Transient { .. })
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ApiError::Network(detail) => write!(f, "Cannot reach the server ({detail})."),
            ApiError::Transient { message, .. } => write!(f, "The server is busy or failing: {message}"),
            ApiError::SignIn { message, .. } => write!(f, "Sign in again: {message}"),
            ApiError::Conflict { message, .. }
            | ApiError::Gone { message }
            | ApiError::Rejected { message, .. } => f.write_str(message),
            ApiError::BadReply(detail) => write!(f, "The server's answer was not understood: {detail}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses_map_to_what_the_client_should_do() {
        let body = r#"{"message":"token revoked","code":"unauthorized"}"#;
        assert_eq!(
            ApiError::from_response(401, body, None),
            ApiError::SignIn { status: 401, message: "token revoked".into() }
        );
        assert!(matches!(ApiError::from_response(403, "{}", None), ApiError::SignIn { status: 403, .. }));
        assert!(matches!(ApiError::from_response(404, "", None), ApiError::Gone { .. }));
        assert_eq!(
            ApiError::from_response(409, r#"{"message":"held","code":"not_claimable"}"#, None),
            ApiError::Conflict { code: Some("not_claimable".into()), message: "held".into() }
        );
        assert!(matches!(ApiError::from_response(400, r#"{"message":"title: too long"}"#, None),
            ApiError::Rejected { status: 400, ref message } if message == "title: too long"));
    }

    #[test]
    fn transient_errors_carry_retry_after() {
        let error = ApiError::from_response(429, r#"{"message":"slow down"}"#, Some(" 7 "));
        assert_eq!(
            error,
            ApiError::Transient { status: 429, message: "slow down".into(), retry_after: Some(7) }
        );
        assert!(error.is_transient());
        for status in [408, 500, 502, 503] {
            assert!(ApiError::from_response(status, "<html>", None).is_transient(), "{status}");
        }
        assert!(ApiError::Network("offline".into()).is_transient());
        assert!(!ApiError::from_response(400, "", None).is_transient());
    }

    #[test]
    fn a_body_without_message_still_explains_itself() {
        assert_eq!(
            ApiError::from_response(502, "Bad Gateway", None).to_string(),
            "The server is busy or failing: the server answered 502"
        );
    }
}

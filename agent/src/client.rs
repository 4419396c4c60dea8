//! The HTTP side of the agent CLI: `POST {apiUrl}/rpc/{name}` with the protocol's
//! envelope and bearer token, the change-event stream, and the errors as the CLI
//! reports them (with their exit codes).

use std::fmt;
use std::time::Duration;

use redline_protocol::{Envelope, ErrorBody, Rpc, codes, events_path, is_transient_status};

use crate::format::terminal_safe;

/// How long one RPC may take.
const RPC_TIMEOUT: Duration = Duration::from_secs(60);
/// How long `/healthz` may take: the server answers within 2 s, even when its store
/// does not.
const HEALTH_TIMEOUT: Duration = Duration::from_secs(5);

/// The exit codes: 0 work printed, 2 timeout / `--once` found nothing, 3 the session was
/// refused (sign in again), 1 anything else.
pub mod exit {
    pub const OK: i32 = 0;
    pub const FAILED: i32 = 1;
    pub const NOTHING: i32 = 2;
    pub const SIGNED_OUT: i32 = 3;
}

/// What went wrong, as the CLI reports it.
#[derive(Debug)]
pub enum Error {
    /// The server answered with an HTTP error; `body` is the protocol's error body (or
    /// a stand-in when the body was not one).
    Api { status: u16, body: ErrorBody },
    /// The server could not be reached, or the answer could not be read.
    Network(String),
    /// Anything decided locally: bad arguments, configuration, files.
    Local(String),
    /// Not signed in to this API URL.
    SignedOut(String),
}

impl Error {
    pub fn local(message: impl Into<String>) -> Self {
        Error::Local(message.into())
    }

    pub fn status(&self) -> Option<u16> {
        match self {
            Error::Api { status, .. } => Some(*status),
            _ => None,
        }
    }

    /// The protocol's error `code`, for an HTTP error.
    pub fn code(&self) -> Option<&str> {
        match self {
            Error::Api { body, .. } => Some(&body.code),
            _ => None,
        }
    }

    /// 408, 429, 5xx and network errors: worth retrying with backoff.
    pub fn is_transient(&self) -> bool {
        match self {
            Error::Api { status, .. } => is_transient_status(*status),
            Error::Network(_) => true,
            Error::Local(_) | Error::SignedOut(_) => false,
        }
    }

    pub fn exit_code(&self) -> i32 {
        match self {
            Error::Api { status, .. } => exit_code_for_status(*status),
            Error::SignedOut(_) => exit::SIGNED_OUT,
            Error::Network(_) | Error::Local(_) => exit::FAILED,
        }
    }
}

/// 401 and 403 mean "sign in again" (exit 3); any other error exits 1.
pub fn exit_code_for_status(status: u16) -> i32 {
    match status {
        401 | 403 => exit::SIGNED_OUT,
        _ => exit::FAILED,
    }
}

/// Said without the terminal control characters a server's answer may hold (see
/// [`terminal_safe`]): an error is printed wherever it ends up.
impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let said = match self {
            Error::Api { status: 401, body } => format!(
                "the server refused the session (401 {}): {}. Sign in again: redline login",
                body.code, body.message
            ),
            Error::Api { status: 403, body } => {
                format!("the server refused this token (403 {}): {}", body.code, body.message)
            }
            Error::Api { status, body } if body.code == codes::LEASE_LOST => format!(
                "your lease is lost ({status} {}): {}. Another agent has claimed this item since; \
                 stop working on it and run `redline wait --claim` for new work",
                body.code, body.message
            ),
            Error::Api { status, body } => format!("{} ({status} {})", body.message, body.code),
            Error::Network(m) | Error::Local(m) | Error::SignedOut(m) => m.clone(),
        };
        f.write_str(&terminal_safe(&said))
    }
}

/// A client for one API URL with one token. It has no `Debug`, so the token cannot end
/// up in a log line.
#[derive(Clone)]
pub struct Api {
    http: reqwest::Client,
    base: String,
    token: String,
}

impl Api {
    pub fn new(base: String, token: String) -> Result<Api, Error> {
        Ok(Api { http: http_client()?, base, token })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// Calls RPC `R`.
    pub async fn call<R: Rpc>(&self, input: R::Input) -> Result<R::Output, Error> {
        let url = format!("{}/rpc/{}", self.base, R::NAME);
        let res = self
            .http
            .post(&url)
            .bearer_auth(&self.token)
            .timeout(RPC_TIMEOUT)
            .json(&Envelope::<R::Input>::new::<R>(input))
            .send()
            .await
            .map_err(|e| network(&self.base, e))?;
        let status = res.status().as_u16();
        let bytes = res.bytes().await.map_err(|e| network(&self.base, e))?;
        if status == 200 {
            serde_json::from_slice(&bytes).map_err(|e| {
                Error::Network(format!("{} answered {} with something unexpected ({e})", self.base, R::NAME))
            })
        } else {
            Err(api_error(status, &bytes))
        }
    }

    /// Opens the project's change-event stream, resuming after `last_event_id`.
    /// The project's event stream; `claimed_by` names the agent waiting on it, which
    /// the server shows as waiting while the stream is open (`listAgents`).
    pub async fn events(
        &self,
        project_id: &str,
        claimed_by: Option<&str>,
        last_event_id: Option<&str>,
    ) -> Result<reqwest::Response, Error> {
        let mut url = reqwest::Url::parse(&format!("{}{}", self.base, events_path(project_id)))
            .map_err(|e| Error::local(format!("the event stream's address: {e}")))?;
        if let Some(name) = claimed_by {
            url.query_pairs_mut().append_pair("claimedBy", name);
        }
        let mut req = self.http.get(url).bearer_auth(&self.token).header("accept", "text/event-stream");
        if let Some(id) = last_event_id {
            req = req.header("last-event-id", id);
        }
        req.send().await.map_err(|e| network(&self.base, e))
    }

    /// Downloads a signed link (a screenshot). The link is the capability: no token is
    /// sent with it.
    pub async fn download(&self, url: &str) -> Result<Vec<u8>, Error> {
        let res = self.http.get(url).timeout(RPC_TIMEOUT).send().await.map_err(|e| network(url, e))?;
        let status = res.status().as_u16();
        let bytes = res.bytes().await.map_err(|e| network(url, e))?;
        if status == 200 { Ok(bytes.to_vec()) } else { Err(api_error(status, &bytes)) }
    }
}

/// `GET {base}/healthz`: whether the server, and the store behind it, answer.
pub async fn health(base: &str) -> Result<(), Error> {
    let res = http_client()?
        .get(format!("{base}/healthz"))
        .timeout(HEALTH_TIMEOUT)
        .send()
        .await
        .map_err(|e| network(base, e))?;
    let status = res.status().as_u16();
    if status == 200 {
        return Ok(());
    }
    let bytes = res.bytes().await.map_err(|e| network(base, e))?;
    Err(api_error(status, &bytes))
}

/// A client without a token, for the sign-in calls.
pub async fn call_anonymous<R: Rpc>(base: &str, input: R::Input) -> Result<R::Output, Error> {
    let res = http_client()?
        .post(format!("{base}/rpc/{}", R::NAME))
        .timeout(RPC_TIMEOUT)
        .json(&Envelope::<R::Input>::new::<R>(input))
        .send()
        .await
        .map_err(|e| network(base, e))?;
    let status = res.status().as_u16();
    let bytes = res.bytes().await.map_err(|e| network(base, e))?;
    if status == 200 {
        serde_json::from_slice(&bytes).map_err(|e| {
            Error::Network(format!("{base} answered {} with something unexpected ({e})", R::NAME))
        })
    } else {
        Err(api_error(status, &bytes))
    }
}

fn http_client() -> Result<reqwest::Client, Error> {
    // rustls with ring; installing the process-wide provider twice is harmless.
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .connect_timeout(Duration::from_secs(10))
        .user_agent(concat!("redline-cli/", env!("CARGO_PKG_VERSION")))
        .build()
        .map_err(|e| Error::Local(format!("starting the HTTP client: {e}")))
}

fn network(target: &str, e: reqwest::Error) -> Error {
    // reqwest's messages name the URL, never headers, so the token cannot leak here.
    let what = if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "connection failed"
    };
    let mut cause = String::new();
    let mut source = std::error::Error::source(&e);
    while let Some(s) = source {
        cause = s.to_string();
        source = s.source();
    }
    if cause.is_empty() {
        Error::Network(format!("{target}: {what}"))
    } else {
        Error::Network(format!("{target}: {what} ({cause})"))
    }
}

/// The error of an HTTP answer: the protocol's body, or a stand-in naming the status.
pub fn api_error(status: u16, bytes: &[u8]) -> Error {
    let body = serde_json::from_slice::<ErrorBody>(bytes).unwrap_or_else(|_| {
        let text = String::from_utf8_lossy(bytes);
        let text = text.trim();
        ErrorBody {
            message: if text.is_empty() || text.len() > 300 {
                format!("HTTP {status}")
            } else {
                text.to_owned()
            },
            code: match status {
                401 => codes::UNAUTHORIZED,
                403 => codes::FORBIDDEN,
                404 => codes::NOT_FOUND,
                413 => codes::TOO_LARGE,
                415 => codes::UNSUPPORTED_MEDIA_TYPE,
                429 => codes::RATE_LIMITED,
                s if s >= 500 => codes::INTERNAL,
                _ => "http_error",
            }
            .to_owned(),
            items: None,
        }
    });
    Error::Api { status, body }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_errors_are_said_without_control_characters() {
        let body = |message: &str, code: &str| ErrorBody {
            message: message.to_owned(),
            code: code.to_owned(),
            items: None,
        };
        for status in [400, 401, 403, 409] {
            let e = Error::Api { status, body: body("gone\u{1b}[2J\r\u{1b}[31m", "x\u{1b}[0m") };
            let said = e.to_string();
            assert!(said.contains("gone[2J[31m") && said.contains("x[0m"), "{said}");
            assert!(!said.contains(['\u{1b}', '\r']), "{said:?}");
        }
        let e = Error::Api { status: 409, body: body("lost\u{1b}[2J", codes::LEASE_LOST) };
        assert!(e.to_string().starts_with("your lease is lost (409 lease_lost): lost[2J."));
    }

    #[test]
    fn exit_codes() {
        assert_eq!(exit_code_for_status(401), 3);
        assert_eq!(exit_code_for_status(403), 3);
        for s in [400, 404, 409, 413, 429, 500, 503] {
            assert_eq!(exit_code_for_status(s), 1, "{s}");
        }
        assert_eq!(Error::SignedOut("x".into()).exit_code(), 3);
        assert_eq!(Error::Network("x".into()).exit_code(), 1);
        assert_eq!(Error::Local("x".into()).exit_code(), 1);
    }

    #[test]
    fn transient_errors() {
        assert!(Error::Network("x".into()).is_transient());
        assert!(!Error::Local("x".into()).is_transient());
    }

    #[test]
    fn reads_error_bodies() {
        let e = api_error(409, br#"{"message":"stale","code":"lease_lost"}"#);
        assert_eq!((e.status(), e.code()), (Some(409), Some("lease_lost")));
        assert!(e.to_string().starts_with("your lease is lost (409 lease_lost): stale."));
        let e = api_error(502, b"<html>bad gateway</html>");
        assert_eq!(e.code(), Some("internal"));
        assert_eq!(e.to_string(), "<html>bad gateway</html> (502 internal)");
        let e = api_error(401, b"");
        assert!(e.to_string().contains("Sign in again: redline login"));
        assert_eq!(e.exit_code(), 3);
    }
}

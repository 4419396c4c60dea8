//! `POST /rpc/{name}`: the envelope `{"rpcName", "data"}` (or the bare input), the
//! order of checks (unknown RPC 404 → token 401 → scope 403 → input 400), and the
//! dispatch from an RPC name to its operation.

use std::future::Future;

use axum::Json;
use axum::body::{Body, to_bytes};
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use redline_protocol::{IMAGE_MAX_BYTES, Rpc, Timestamp};
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::AppState;
use crate::error::ApiError;
use crate::queue::Ctx;

/// The largest request body: an 8 MiB image grows by a third in base64, plus room for
/// the rest of the input.
pub const MAX_BODY_BYTES: usize = IMAGE_MAX_BYTES / 3 * 4 + 1024 * 1024;

/// An operation the server serves: the protocol's RPC marker types implement it.
pub trait Op: Rpc {
    fn run(ctx: &Ctx<'_>, input: Self::Input) -> impl Future<Output = Result<Self::Output, ApiError>> + Send;
}

/// An operation called without a token (sign-in). All such calls share one rate
/// limit, since there is no token to tell callers apart.
pub trait AnonymousOp: Rpc {
    fn run(
        state: &AppState,
        base_url: &str,
        now: Timestamp,
        input: Self::Input,
    ) -> impl Future<Output = Result<Self::Output, ApiError>> + Send;
}

/// Calls macro `$m` with every RPC the server serves (those that need a token, then
/// `anonymous:` the sign-in pair), so dispatch and `/openapi.json` list the same ones.
macro_rules! with_served_rpcs {
    ($m:ident) => {
        $m!(
            GetSession,
            ListStages,
            ResolveStage,
            UploadShot,
            CreateChange,
            UpdateChange,
            WithdrawChange,
            ReleaseChanges,
            AnswerChangeQuestion,
            SetChangeStatus,
            ListChanges,
            GetChange,
            ClaimChanges,
            AskChangeQuestion,
            ReplyToChange,
            AttachChangeShot,
            CompleteChange;
            anonymous: RequestCliAuth,
            PollCliAuth,
        )
    };
}
pub(crate) use with_served_rpcs;

/// The rate-limit key of calls without a token.
const ANONYMOUS: &str = "(anonymous)";

pub async fn handle(
    State(state): State<AppState>,
    Path(name): Path<String>,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    use redline_protocol::*;
    macro_rules! served {
        ($($op:ty),* ; anonymous: $($anon:ty),* $(,)?) => {
            match name.as_str() {
                $(<$op as Rpc>::NAME => call::<$op>(&state, &name, &headers, body).await,)*
                $(<$anon as Rpc>::NAME => call_anonymous::<$anon>(&state, &name, &headers, body).await,)*
                _ => Err(ApiError::not_found(format!("unknown RPC {name:?}"))),
            }
        };
    }
    with_served_rpcs!(served)
}

async fn call<R: Op>(
    state: &AppState,
    name: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let who = state.authenticate(headers).await?;
    state.limiter.check(&who.token_id, state.rate_limit, state.clock.now())?;
    if let Some(scope) = R::SCOPE {
        who.require(scope)?;
    }
    let input = parse_input::<R::Input>(name, &read_body(body).await?)?;
    let ctx = Ctx { state, who, base_url: base_url(state, headers), now: state.clock.now() };
    let output = R::run(&ctx, input).await?;
    Ok(Json(output).into_response())
}

async fn call_anonymous<R: AnonymousOp>(
    state: &AppState,
    name: &str,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let now = state.clock.now();
    state.limiter.check(ANONYMOUS, state.rate_limit, now)?;
    let input = parse_input::<R::Input>(name, &read_body(body).await?)?;
    let output = R::run(state, &base_url(state, headers), now, input).await?;
    Ok(Json(output).into_response())
}

async fn read_body(body: Body) -> Result<axum::body::Bytes, ApiError> {
    to_bytes(body, MAX_BODY_BYTES)
        .await
        .map_err(|_| ApiError::too_large(format!("the request body is over {MAX_BODY_BYTES} bytes")))
}

/// Where links in outputs point: the configured public URL, else the host the
/// client called (so a client always gets links it can reach).
fn base_url(state: &AppState, headers: &HeaderMap) -> String {
    match (&state.public_url, headers.get(axum::http::header::HOST).and_then(|h| h.to_str().ok())) {
        (Some(url), _) => url.trim_end_matches('/').to_owned(),
        (None, Some(host)) => format!("http://{host}"),
        (None, None) => "http://localhost".to_owned(),
    }
}

/// The input of a request body: `data` of an envelope, or the bare input object. An
/// empty body is `{}`.
fn parse_input<T: DeserializeOwned>(name: &str, body: &[u8]) -> Result<T, ApiError> {
    let value = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(Default::default())
    } else {
        serde_json::from_slice(body).map_err(|e| ApiError::malformed(format!("not JSON ({e})")))?
    };
    let value = match value {
        Value::Object(mut map)
            if map.contains_key("rpcName") || (map.len() == 1 && map.contains_key("data")) =>
        {
            match map.get("rpcName") {
                Some(Value::String(n)) if n != name => {
                    return Err(ApiError::bad_input(
                        "rpcName",
                        format!("is {n:?} but the URL names {name:?}"),
                    ));
                }
                Some(Value::String(_)) | None => {}
                Some(_) => return Err(ApiError::bad_input("rpcName", "must be a string")),
            }
            map.remove("data").unwrap_or_else(|| Value::Object(Default::default()))
        }
        other => other,
    };
    deserialize(value)
}

/// Deserialises an input, naming the offending field in the 400's message.
pub fn deserialize<T: DeserializeOwned>(value: Value) -> Result<T, ApiError> {
    serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let problem = e.into_inner().to_string();
        // serde reports a missing field at its parent: "missing field `title`".
        let missing = problem.strip_prefix("missing field `").and_then(|rest| rest.strip_suffix('`'));
        let field = match (path.as_str(), missing) {
            (".", Some(f)) => f.to_owned(),
            (p, Some(f)) => format!("{p}.{f}"),
            (".", None) => "data".to_owned(),
            (p, None) => p.to_owned(),
        };
        match missing {
            Some(_) => ApiError::bad_input(&field, "is required"),
            None => ApiError::bad_input(&field, problem),
        }
    })
}

#[cfg(test)]
mod tests {
    use redline_protocol::{CreateChangeInput, GetSessionInput};

    use super::*;

    fn message(e: ApiError) -> String {
        let status = e.status();
        assert_eq!(status, 400);
        let body = futures_util::FutureExt::now_or_never(to_bytes(e.into_response().into_body(), 10_000))
            .unwrap()
            .unwrap();
        serde_json::from_slice::<Value>(&body).unwrap()["message"].as_str().unwrap().to_owned()
    }

    #[test]
    fn accepts_envelope_bare_and_empty() {
        let _: GetSessionInput = parse_input("getSession", br#"{"rpcName":"getSession","data":{}}"#).unwrap();
        let _: GetSessionInput = parse_input("getSession", b"{}").unwrap();
        let _: GetSessionInput = parse_input("getSession", b"").unwrap();
        let c: CreateChangeInput =
            parse_input("createChange", br#"{"data":{"stageId":"s","title":"t"}}"#).unwrap();
        assert_eq!(c.title, "t");
    }

    #[test]
    fn names_the_field() {
        let e = parse_input::<CreateChangeInput>("createChange", br#"{"stageId":"s"}"#).unwrap_err();
        assert_eq!(message(e), "title: is required");
        let e = parse_input::<CreateChangeInput>(
            "createChange",
            br#"{"stageId":"s","title":"t","capture":{"stroke":[{"x":"a","y":1}]}}"#,
        )
        .unwrap_err();
        assert!(message(e).starts_with("capture.stroke[0].x: invalid type"));
        let e =
            parse_input::<GetSessionInput>("getSession", br#"{"rpcName":"other","data":{}}"#).unwrap_err();
        assert!(message(e).starts_with("rpcName:"));
        let e = parse_input::<GetSessionInput>("getSession", b"{nope").unwrap_err();
        assert!(message(e).starts_with("body: not JSON"));
    }
}

//! `POST /rpc/{name}`: the envelope `{"rpcName", "data"}` (or the bare input), the
//! order of checks (unknown RPC 404 → token 401 → scope 403 → input 400), and the
//! dispatch from an RPC name to its operation.

use axum::body::{Body, Bytes};
use axum::extract::{Path, State};
use axum::http::{HeaderMap, header};
use axum::response::Response;
use futures_util::StreamExt;
use redline_protocol::bounded::Object;
use serde::de::{DeserializeOwned, IgnoredAny, MapAccess, Visitor};
use serde::{Deserialize, Deserializer};
use serde_json::value::RawValue;
use tokio::time::Instant;

use crate::AppState;
use crate::error::ApiError;
use crate::http::transport::Answer;
use crate::limit::{ClientAddr, Deadlines, Hold, Holder, MAX_BODY_BYTES};
use crate::ops::{AnonymousOp, Ctx, Op, group_token};

/// `createChange`'s body cap: twice the largest filing the extension makes (500
/// elements with 200-character texts and names, the first 20 with their styles, a
/// 10,000-point stroke at full precision, 50 console errors of 500 characters and 50
/// failed requests: measured in `tests/limits.rs`, `filing_bodies_fit_their_cap`), and
/// room for the largest the field limits allow (every field at its limit, in compact
/// ASCII JSON: 1.89 MB without styles and failed requests, 4.22 MB with both).
pub const CREATE_CHANGE_BODY_BYTES: usize = 5 * 1024 * 1024;

/// The body cap of RPCs with free text (an item's body, a question, an answer, a note:
/// [`redline_protocol::TEXT_MAX_CHARS`] characters, each up to 12 bytes escaped).
pub const TEXT_BODY_BYTES: usize = 256 * 1024;

/// The body cap of `recordRefind`: at most 50 elements of a 200-character label and a
/// 500-character path, each character up to 12 bytes escaped.
pub const REFIND_BODY_BYTES: usize = 512 * 1024;

/// The body cap of every other RPC: ids, names and short lists.
pub const SMALL_BODY_BYTES: usize = 64 * 1024;

/// How many bytes RPC `name`'s body may have; more is refused while it is read (413).
pub fn body_max_bytes(name: &str) -> usize {
    use redline_protocol::*;
    match name {
        // A question's option images together are at most one image's bytes, as are a
        // regression report's.
        UploadShot::NAME
        | ReplyToChange::NAME
        | AttachChangeShot::NAME
        | AskChangeQuestion::NAME
        | ReportRegression::NAME => MAX_BODY_BYTES,
        CreateChange::NAME => CREATE_CHANGE_BODY_BYTES,
        UpdateChange::NAME | AnswerChangeQuestion::NAME | CompleteChange::NAME => TEXT_BODY_BYTES,
        RecordRefind::NAME => REFIND_BODY_BYTES,
        _ => SMALL_BODY_BYTES,
    }
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
            VerifyChange,
            ReportRegression,
            RecordRefind,
            ListChanges,
            GetChange,
            CountChanges,
            ClaimChanges,
            ReleaseGroup,
            AcknowledgeChangeMessages,
            ListAgents,
            CreateGroupToken,
            RevokeGroupToken,
            ListWebhooks,
            GetStats,
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

pub async fn handle(
    State(state): State<AppState>,
    Path(name): Path<String>,
    client: ClientAddr,
    headers: HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    use redline_protocol::*;
    macro_rules! served {
        ($($op:ty),* ; anonymous: $($anon:ty),* $(,)?) => {
            match name.as_str() {
                $(<$op as Rpc>::NAME => call::<$op>(&state, &name, client, &headers, body).await,)*
                $(<$anon as Rpc>::NAME => call_anonymous::<$anon>(&state, &name, client, &headers, body).await,)*
                _ => Err(ApiError::not_found(format!("unknown RPC {name:?}"))),
            }
        };
    }
    with_served_rpcs!(served)
}

async fn call<R: Op<Input: std::any::Any + Sync>>(
    state: &AppState,
    name: &str,
    client: ClientAddr,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let who = state.authenticate(headers, client).await?;
    state.limiter.check(&who.token_id, state.rate_limit, state.services.clock.now())?;
    let group = who.group_id.clone();
    match (&group, R::SCOPE) {
        (Some(_), _) if !group_token::allows(name) => {
            return Err(ApiError::forbidden(format!("a group token may not call {name}")));
        }
        (None, Some(scope)) => who.require(scope)?,
        _ => {}
    }
    let address = client.key(headers, state.client_ip_header.as_ref());
    let holders = || vec![Holder::Token(&who.token_id).key(), Holder::Client(&address).key()];
    // The body's bytes stay taken from the budget until the answer is made: what is
    // parsed from them lives as long.
    let (body, _taken) = read_body(state, name, headers, body, state.body_budget.hold(holders())).await?;
    let input = parse_input::<R::Input>(name, &body)?;
    drop(body);
    let answer_holders = holders();
    state.answer_budget.check_room(&answer_holders)?;
    let ctx = Ctx {
        state: &state.services,
        claims: &state.claims,
        who,
        base_url: base_url(state, headers),
        now: state.services.clock.now(),
    };
    if let Some(group) = &group {
        group_token::check_item(&ctx, group, &input).await?;
    }
    let output = R::run(&ctx, input).await?;
    answer(state, &output, answer_holders)
}

async fn call_anonymous<R: AnonymousOp>(
    state: &AppState,
    name: &str,
    client: ClientAddr,
    headers: &HeaderMap,
    body: Body,
) -> Result<Response, ApiError> {
    let now = state.services.clock.now();
    // Keys of their own: a token id is a UUID, never `name address`.
    let client = client.key(headers, state.client_ip_header.as_ref());
    state.limiter.check(&format!("{name} {client}"), R::limit(&state.sign_in_limits), now)?;
    let holders = || vec![Holder::Client(&client).key()];
    let (body, _taken) = read_body(state, name, headers, body, state.body_budget.hold(holders())).await?;
    let input = parse_input::<R::Input>(name, &body)?;
    let output = R::run(&state.services, &base_url(state, headers), &client, now, input).await?;
    answer(state, &output, holders())
}

/// The answer of `output`, its bytes taken from the answer budget for `holders` until
/// the client has taken them (503 or 429 when they do not fit).
fn answer(
    state: &AppState,
    output: &impl serde::Serialize,
    holders: Vec<String>,
) -> Result<Response, ApiError> {
    let json = serde_json::to_vec(output).map_err(ApiError::internal)?;
    let mut hold = state.answer_budget.hold(holders);
    hold.take(json.len())?;
    Ok(Answer::response(json, hold, &state.deadlines))
}

/// RPC `name`'s body, read until its cap ([`body_max_bytes`]): a longer body is refused
/// with 413 as soon as the cap is passed (or at once, from its `Content-Length`), never
/// held whole. Its bytes are taken for `hold` from the server's body budget as they
/// arrive (never its declared length at once): 503 or 429 when they do not fit
/// ([`crate::limit::Budget`]). It must keep coming: a
/// pause of [`Deadlines::body_idle`], or a body slower than its overall deadline
/// ([`Deadlines::overall`], from its declared length or else its cap), is answered 408.
/// What was taken is given back when the returned hold is dropped.
async fn read_body(
    state: &AppState,
    name: &str,
    headers: &HeaderMap,
    body: Body,
    mut hold: Hold,
) -> Result<(Bytes, Hold), ApiError> {
    let max = body_max_bytes(name);
    let too_long = || ApiError::too_large(format!("the request body is over {name}'s limit of {max} bytes"));
    let declared = headers.get(header::CONTENT_LENGTH).and_then(|v| v.to_str().ok()?.parse::<usize>().ok());
    if declared.is_some_and(|declared| declared > max) {
        return Err(too_long());
    }
    let expected = declared.unwrap_or(max);
    let deadlines: &Deadlines = &state.deadlines;
    let until = Instant::now() + deadlines.overall(deadlines.body_idle, expected);
    let late = || {
        ApiError::timeout(format!(
            "the request body did not arrive in time (a pause of {} s, or slower than {} bytes a second)",
            deadlines.body_idle.as_secs_f64(),
            deadlines.min_bytes_per_sec
        ))
    };
    let mut read = Vec::new();
    let mut chunks = body.into_data_stream();
    loop {
        let wait = (Instant::now() + deadlines.body_idle).min(until);
        let chunk = match tokio::time::timeout_at(wait, chunks.next()).await {
            Err(_) => return Err(late()),
            Ok(None) => break,
            // Anything but the cap (a client that went away) is not about the size.
            Ok(Some(chunk)) => chunk.map_err(|e| ApiError::malformed(format!("could not be read ({e})")))?,
        };
        let len = read.len() + chunk.len();
        if len > max {
            return Err(too_long());
        }
        hold.take(chunk.len())?;
        if len > read.capacity() {
            // Room grows by doubling, to the declared length at most: it is at most
            // twice what arrived.
            let room = (read.capacity() * 2).clamp(len, expected.max(len));
            read.reserve_exact(room - read.len());
        }
        read.extend_from_slice(&chunk);
    }
    Ok((Bytes::from(read), hold))
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
///
/// The top level is read shallowly ([`Top`]: `rpcName` and `data` left as JSON text,
/// every other member skipped unread) and the input is then read straight into its
/// type: no tree of the body is built, which held many times the body's size for a body
/// of many short members (`tests::parsing_holds_little_more_than_the_body`) and cost a
/// filing more than its typed parse.
fn parse_input<T: DeserializeOwned>(name: &str, body: &[u8]) -> Result<T, ApiError> {
    let not_json = |e: &dyn std::fmt::Display| ApiError::malformed(format!("not JSON ({e})"));
    // No body at all; a body of only whitespace is not JSON (nor what the document allows).
    if body.is_empty() {
        return deserialize_json("{}");
    }
    let text = std::str::from_utf8(body).map_err(|e| not_json(&e))?;
    let top: Top<'_> = match serde_json::from_str(text) {
        Ok(top) => top,
        // Not an object: the input's type says what it expected.
        Err(e) if e.is_data() => return deserialize_json(text),
        Err(e) => return Err(not_json(&e)),
    };
    let envelope = top.rpc_name.is_some() || (top.data.is_some() && !top.others);
    if !envelope {
        return deserialize_json(text);
    }
    if let Some(given) = top.rpc_name {
        match serde_json::from_str::<String>(given.get()) {
            Ok(n) if n != name => {
                return Err(ApiError::bad_input("rpcName", format!("is {n:?} but the URL names {name:?}")));
            }
            Ok(_) => {}
            Err(_) => return Err(ApiError::bad_input("rpcName", "must be a string")),
        }
    }
    deserialize_json(top.data.map_or("{}", RawValue::get))
}

/// The top level of a body that is an object: its `rpcName` and `data` as JSON text
/// (the last of each, as JSON parsers keep), and whether it has other members.
struct Top<'a> {
    rpc_name: Option<&'a RawValue>,
    data: Option<&'a RawValue>,
    others: bool,
}

impl<'de> Deserialize<'de> for Top<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Members;

        impl<'de> Visitor<'de> for Members {
            type Value = Top<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an object")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Top<'de>, A::Error> {
                let mut top = Top { rpc_name: None, data: None, others: false };
                while let Some(key) = map.next_key::<Key>()? {
                    match key {
                        Key::RpcName => top.rpc_name = Some(map.next_value()?),
                        Key::Data => top.data = Some(map.next_value()?),
                        Key::Other => {
                            map.next_value::<IgnoredAny>()?;
                            top.others = true;
                        }
                    }
                }
                Ok(top)
            }
        }

        deserializer.deserialize_map(Members)
    }
}

/// A member's name at the top of a body, told apart without keeping it.
enum Key {
    RpcName,
    Data,
    Other,
}

impl<'de> Deserialize<'de> for Key {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Name;

        impl Visitor<'_> for Name {
            type Value = Key;

            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a member's name")
            }

            fn visit_str<E: serde::de::Error>(self, name: &str) -> Result<Key, E> {
                Ok(match name {
                    "rpcName" => Key::RpcName,
                    "data" => Key::Data,
                    _ => Key::Other,
                })
            }
        }

        deserializer.deserialize_identifier(Name)
    }
}

/// Deserialises an input from JSON text, naming the offending field in the 400's message.
/// An input is an object (see [`Object`]), as `/openapi.json` says.
fn deserialize_json<T: DeserializeOwned>(text: &str) -> Result<T, ApiError> {
    let mut json = serde_json::Deserializer::from_str(text);
    serde_path_to_error::deserialize(&mut json).map(|Object(input)| input).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        // The message names the field; where in the body it was adds nothing.
        let position = format!(" at line {} column {}", inner.line(), inner.column());
        let problem = inner.to_string();
        field_error(&path, problem.strip_suffix(&position).unwrap_or(&problem))
    })
}

/// The 400 for `problem` at `path` (serde's path, `.` for the top level).
fn field_error(path: &str, problem: &str) -> ApiError {
    // serde reports a missing field at its parent: "missing field `title`".
    let missing = problem.strip_prefix("missing field `").and_then(|rest| rest.strip_suffix('`'));
    let field = match (path, missing) {
        (".", Some(f)) => f.to_owned(),
        (p, Some(f)) => format!("{p}.{f}"),
        (".", None) => "data".to_owned(),
        (p, None) => p.to_owned(),
    };
    match missing {
        Some(_) => ApiError::bad_input(&field, "is required"),
        None => ApiError::bad_input(&field, problem),
    }
}

#[cfg(test)]
mod tests {
    use axum::body::to_bytes;
    use axum::response::IntoResponse;
    use redline_protocol::{CreateChangeInput, GetSessionInput};

    use super::*;

    fn message(e: ApiError) -> String {
        let status = e.status();
        assert_eq!(status, 400);
        let body = futures_util::FutureExt::now_or_never(to_bytes(e.into_response().into_body(), 10_000))
            .unwrap()
            .unwrap();
        serde_json::from_slice::<serde_json::Value>(&body).unwrap()["message"].as_str().unwrap().to_owned()
    }

    /// Bodies at `createChange`'s cap, made of what costs most to hold once read: many
    /// short members the input does not know, at the top or in an envelope, many short
    /// style entries, and the largest filing the extension makes.
    fn costly_bodies() -> Vec<(&'static str, String)> {
        let cap = CREATE_CHANGE_BODY_BYTES;
        let fill = |mut body: String, entry: &dyn Fn(usize) -> String, end: &str| {
            let mut i = 0;
            while body.len() < cap - 64 {
                body.push_str(&entry(i));
                i += 1;
            }
            body + end
        };
        let member = |i: usize| format!(",\"m{i}\":0");
        let bare = fill(r#"{"stageId":"s","title":"t""#.to_owned(), &member, "}");
        let enveloped =
            fill(r#"{"rpcName":"createChange","data":{"stageId":"s","title":"t"}"#.to_owned(), &member, "}");
        let start = r#"{"stageId":"s","title":"t","capture":{"elements":[{"styles":{"changed":{"p":"0""#;
        let styles = fill(start.to_owned(), &|i| format!(",\"p{i}\":\"\""), "}}}]}}");
        let value = "v".repeat(30);
        let styled: Vec<String> = redline_protocol::styles::STYLE_PROPERTIES
            .iter()
            .map(|(n, _)| format!("\"{n}\":\"{value}\""))
            .collect();
        let styled = format!(r#","styles":{{"changed":{{{}}}}}"#, styled.join(","));
        let text = "x".repeat(200);
        let elements: Vec<String> = (0..500)
            .map(|i| {
                let styles = if i < 20 { styled.as_str() } else { "" };
                format!(
                    r#"{{"testId":"t{i}","cssPath":"main > div:nth-child({i})","text":"{text}","name":"{text}","tag":"div","rect":{{"x":1.5,"y":2.5,"width":3.5,"height":4.5}}{styles}}}"#
                )
            })
            .collect();
        let stroke: Vec<String> =
            (0..10_000).map(|i| format!(r#"{{"x":{i}.123456789,"y":{i}.987654321}}"#)).collect();
        let errors: Vec<String> = (0..50).map(|_| format!("\"{}\"", "e".repeat(500))).collect();
        let filing = format!(
            r#"{{"rpcName":"createChange","data":{{"stageId":"s","title":"t","consoleErrors":[{}],"capture":{{"stroke":[{}],"elements":[{}]}}}}}}"#,
            errors.join(","),
            stroke.join(","),
            elements.join(",")
        );
        vec![
            ("bare, many members", bare),
            ("enveloped, many members", enveloped),
            ("many style entries", styles),
            ("the largest filing", filing),
        ]
    }

    /// Reading a body holds little more than the body itself: no tree of it is built,
    /// and the parts of an input that would cost more than they take to send (style
    /// entries) are refused past their limits while they are read. (Before, the same
    /// bodies held up to 13 times their size: see `docs/protocol-additions.md`.)
    #[test]
    fn parsing_holds_little_more_than_the_body() {
        for (what, body) in costly_bodies() {
            let read = || parse_input::<CreateChangeInput>("createChange", body.as_bytes()).is_ok();
            let (parsed, held) = crate::held::peak(read);
            let ratio = held as f64 / body.len() as f64;
            println!("{what}: {} bytes, parsed {parsed}, held at most {held} ({ratio:.2}x)", body.len());
            assert!(ratio < 1.5, "{what}: {held} bytes held for a body of {}", body.len());
        }
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
        assert_eq!(message(e), "capture.stroke[0].x: invalid type: string \"a\", expected f64");
        // Inside an envelope the path starts at `data`'s fields too.
        let e = parse_input::<CreateChangeInput>("createChange", br#"{"data":{"stageId":"s","title":7}}"#)
            .unwrap_err();
        assert_eq!(
            message(e),
            "title: invalid type: integer `7`, expected a string of at most 200 characters"
        );
        let e =
            parse_input::<CreateChangeInput>("createChange", br#"{"rpcName":"createChange"}"#).unwrap_err();
        assert_eq!(message(e), "stageId: is required");
        let e = parse_input::<CreateChangeInput>("createChange", br#""a title""#).unwrap_err();
        assert_eq!(message(e), "data: invalid type: string \"a title\", expected an object");
        // A list of the fields' values is not an input, at the top or inside.
        let e = parse_input::<GetSessionInput>("getSession", b"[]").unwrap_err();
        assert_eq!(message(e), "data: invalid type: sequence, expected an object");
        let e = parse_input::<CreateChangeInput>(
            "createChange",
            br#"{"stageId":"s","title":"t","viewport":[1,2],"capture":{"stroke":[[0,0]]}}"#,
        )
        .unwrap_err();
        assert_eq!(message(e), "viewport: invalid type: sequence, expected an object");
        let e = parse_input::<CreateChangeInput>(
            "createChange",
            br#"{"stageId":"s","title":"t","capture":{"stroke":[{"x":0,"y":0},[0,0]]}}"#,
        )
        .unwrap_err();
        assert_eq!(message(e), "capture.stroke[1]: invalid type: sequence, expected an object");
        let e = parse_input::<GetSessionInput>("getSession", br#"{"rpcName":7}"#).unwrap_err();
        assert_eq!(message(e), "rpcName: must be a string");
        let e =
            parse_input::<GetSessionInput>("getSession", br#"{"rpcName":"other","data":{}}"#).unwrap_err();
        assert!(message(e).starts_with("rpcName:"));
        let e = parse_input::<GetSessionInput>("getSession", b"{nope").unwrap_err();
        assert!(message(e).starts_with("body: not JSON"));
        let e = parse_input::<GetSessionInput>("getSession", b" \n").unwrap_err();
        assert!(message(e).starts_with("body: not JSON"));
    }
}

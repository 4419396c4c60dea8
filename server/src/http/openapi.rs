//! `GET /openapi.json`: an OpenAPI 3.0 document with every RPC as `POST /rpc/{name}`,
//! its request and response schemas generated from the protocol's Rust types (their
//! `schema` feature), so external tools can drive and fuzz the API. Schemas follow
//! what the server accepts (serde's deserialising view: a field with a default is
//! optional). They state every limit the server enforces while reading an input
//! (`maxLength`, `maxItems`, `minLength: 1` and a non-blank `pattern` for required text,
//! `minimum`/`maximum`), the forms it accepts (change references, image types and bytes)
//! as patterns (`redline_protocol::patterns` and `schema`) and the rules tying fields
//! together as `anyOf` (`redline_protocol::schema`), and each operation its body cap
//! (`x-max-body-bytes`). `cargo xtask test` fuzzes the server against this document with
//! schemathesis (`xtask/src/fuzz.rs`).

use std::sync::LazyLock;

use axum::body::Bytes;
use axum::http::header;
use axum::response::IntoResponse;
use redline_protocol::{Rpc, Scope};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::http::rpc::{body_max_bytes, with_served_rpcs};

/// The document as sent, made once: anyone may ask for it, so a request neither
/// rebuilds it nor holds a copy of its own.
static DOCUMENT: LazyLock<Bytes> =
    LazyLock::new(|| Bytes::from(serde_json::to_vec(&document()).expect("the document is JSON")));

/// `GET /openapi.json`.
pub async fn handle() -> impl IntoResponse {
    ([(header::CONTENT_TYPE, "application/json")], DOCUMENT.clone())
}

/// The whole document.
pub fn document() -> Value {
    use redline_protocol::*;
    let mut generator = SchemaSettings::openapi3().into_generator();
    let mut paths = Map::new();
    macro_rules! paths {
        ($($op:ty),* ; anonymous: $($anon:ty),* $(,)?) => {
            $(paths.insert(format!("/rpc/{}", <$op>::NAME), path::<$op>(&mut generator, true));)*
            $(paths.insert(format!("/rpc/{}", <$anon>::NAME), path::<$anon>(&mut generator, false));)*
        };
    }
    with_served_rpcs!(paths);
    let error = generator.subschema_for::<ErrorBody>();
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "Redline changes API",
            "version": env!("CARGO_PKG_VERSION"),
            "description": "The changes protocol (shared/protocol.md). Every RPC is `POST /rpc/{name}` \
                with the input as the body, bare or as `{\"rpcName\": name, \"data\": input}`. \
                Errors are `{message, code}` with the HTTP status."
        },
        "paths": paths,
        "components": {
            "schemas": generator.take_definitions(true),
            "responses": {
                "Error": {
                    "description": "`{message, code}`; a 409 `not_claimable` adds `items`",
                    "content": { "application/json": { "schema": error } }
                }
            },
            "securitySchemes": { "token": { "type": "http", "scheme": "bearer" } }
        }
    })
}

/// The path item of RPC `R`: its input as the request body, its output as the 200.
fn path<R: Rpc>(generator: &mut SchemaGenerator, needs_token: bool) -> Value
where
    R::Input: JsonSchema,
    R::Output: JsonSchema,
{
    let body_max = body_max_bytes(R::NAME);
    let mut operation = json!({
        "operationId": R::NAME,
        "summary": scope_note(R::SCOPE, needs_token),
        "description": format!("A request body over {body_max} bytes is refused with 413 `too_large`."),
        "x-max-body-bytes": body_max,
        "requestBody": {
            // The server reads an empty body as `{}`: a body is required only when `{}` is
            // not a valid input.
            "required": serde_json::from_str::<R::Input>("{}").is_err(),
            "content": { "application/json": { "schema": generator.subschema_for::<R::Input>() } }
        },
        "responses": {
            "200": {
                "description": "OK",
                "content": { "application/json": { "schema": generator.subschema_for::<R::Output>() } }
            },
            "default": { "$ref": "#/components/responses/Error" }
        }
    });
    operation["security"] = if needs_token { json!([{ "token": [] }]) } else { json!([]) };
    json!({ "post": operation })
}

fn scope_note(scope: Option<Scope>, needs_token: bool) -> String {
    match (scope, needs_token) {
        (Some(scope), _) => format!("Needs a token with scope `{}`.", scope.as_str()),
        (None, true) => "Needs a valid token.".to_owned(),
        (None, false) => "Needs no token.".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;
    use redline_protocol::patterns::{CHANGE_REF, COMMIT_SHA, HTTPS_LINK, NO_NUL, NON_BLANK, ROUTE, UUID};
    use redline_protocol::schema::{content_type_pattern, image_base64_pattern};
    use redline_protocol::{ImageType, commit_sha, is_uuid, parse_change_ref};
    use regex::Regex;

    use serde_json::Value;

    use super::document;
    use crate::store::blobs::{ImageInput, decode_now};

    const TYPES: [ImageType; 3] = [ImageType::Png, ImageType::Jpeg, ImageType::Webp];

    /// Whitespace on which engines disagree: Rust's `trim` removes the first three, not the
    /// last two (which Python's `\s` and ECMA's `\s` count).
    const SPACES: [&str; 5] = ["\u{85}", "\u{3000}", "\n", "\u{1c}", "\u{feff}"];

    fn regex(pattern: &str) -> Regex {
        Regex::new(pattern).unwrap_or_else(|e| panic!("{pattern}: {e}"))
    }

    /// Every string of `samples` matches `pattern` exactly when `accepted` says the server
    /// takes it (none with U+0000, which every string the server stores refuses).
    fn agree(pattern: &str, samples: &[String], accepted: impl Fn(&str) -> bool) {
        let re = regex(pattern);
        let mut seen = [false; 2];
        for s in samples {
            let taken = accepted(s) && !s.contains('\0');
            assert_eq!(re.is_match(s), taken, "{s:?} against {pattern}");
            seen[usize::from(taken)] = true;
        }
        assert_eq!(seen, [true, true], "the samples of {pattern} hold both kinds");
    }

    fn padded(core: &[&str]) -> Vec<String> {
        let mut out: Vec<String> = core.iter().map(|s| s.to_string()).collect();
        for space in SPACES {
            out.extend(core.iter().flat_map(|s| [format!("{space}{s}"), format!("{s}{space}")]));
        }
        out
    }

    #[test]
    fn non_blank_is_what_trim_keeps() {
        let samples = padded(&["", "a", " ", "\t", "é", "a\0", "\0"]);
        agree(NON_BLANK, &samples, |s| !s.trim().is_empty());
        agree(NO_NUL, &samples, |_| true);
    }

    #[test]
    fn links_are_what_complete_change_stores() {
        let samples = padded(&[
            "https://github.com/acme/shop/commit/0123abc",
            "https://é.example/a",
            "https://",
            "http://github.com/a",
            "https://a b",
            "https://a\u{7f}",
            "ftp://a",
            "",
        ]);
        agree(HTTPS_LINK, &samples, redline_protocol::is_https_link);
    }

    #[test]
    fn routes_are_what_create_change_stores() {
        let core = [
            "/",
            "/orders?page=2#top",
            "/a:b",
            "",
            "//evil.example",
            "/\\x",
            "https://a/b",
            "javascript:x",
            "/a b",
            "/a\u{7f}",
            "a/b",
        ];
        agree(ROUTE, &padded(&core), redline_protocol::is_route);
    }

    #[test]
    fn commit_ids_are_what_complete_change_stores() {
        let forty = "0123456789abcdefABCDEF0123456789abcdef01";
        let core = ["a91c4e2", "A91C4E2", "a91c4e", "beef", forty, &forty[..39], "", "g91c4e2", "a91c 4e2"];
        let mut samples = padded(&core);
        samples.push(format!("{forty}0"));
        samples.push("--output=x".to_owned());
        agree(COMMIT_SHA, &samples, |s| commit_sha(s).is_some());
    }

    #[test]
    fn change_refs_are_what_the_server_parses() {
        let id = "3F2504E0-4F89-11D3-9A0C-0305e82c3301";
        let core = ["7", "#7", "#", "", "7a", "##7", "-1", "1234567890123456789", "12345678901234567890", id];
        let mut samples = padded(&core);
        samples.push(id[..35].to_owned());
        samples.push(format!("{id}0"));
        agree(CHANGE_REF, &samples, |s| parse_change_ref(s).is_some());
        agree(UUID, &samples, |s| is_uuid(s.trim()));
    }

    #[test]
    fn content_types_are_what_the_server_reads() {
        let core = [
            "image/png",
            "IMAGE/PNG",
            "png",
            "Image/JPG",
            "jpeg",
            "image/jpe",
            "webp",
            "image/webp; q=1",
            "png ;x",
            "image/ png",
            "image/gif",
            "pngx",
            "image/image/png",
            "image/png;\0",
        ];
        for kind in TYPES {
            agree(&content_type_pattern(kind), &padded(&core), |s| {
                ImageType::from_content_type(s) == Some(kind)
            });
        }
    }

    /// Images of each type and every length up to a few groups past the magic number,
    /// plainly, as data URLs and spaced, and the same spoiled (padding, the bits after the
    /// last byte, another type's bytes, a character base64 lacks): the pattern of each
    /// type matches exactly those the server decodes as that type.
    #[test]
    fn image_bytes_are_what_the_server_decodes() {
        let magic: [&[u8]; 3] = [b"\x89PNG\r\n\x1a\n", &[0xFF, 0xD8, 0xFF], b"RIFF\x01\x02\x03\x04WEBP"];
        let mut samples = Vec::new();
        for bytes in magic {
            for extra in 0..8u8 {
                let mut image = bytes.to_vec();
                image.extend((0..extra).map(|i| i.wrapping_mul(97).wrapping_add(200)));
                let b64 = STANDARD.encode(&image);
                samples.push(b64.clone());
                samples.push(format!("data:image/png;base64,{b64}"));
                samples.push(format!("data:;base64, {b64}\n"));
                samples.push(format!("data:image/png,{b64}"));
                samples.push(format!("x;base64,{b64}"));
                samples.push(format!("data:\0;base64,{b64}"));
                samples.push(b64.trim_end_matches('=').to_owned());
                samples.push(format!("{b64}="));
                samples.push(format!("{}.", &b64[..b64.len() - 1]));
                // The last character before the padding with bits set that no byte holds.
                if let Some(i) = b64.find('=') {
                    let mut spoiled = b64.clone().into_bytes();
                    spoiled[i - 1] = if spoiled[i - 1] == b'/' { b'+' } else { b'/' };
                    samples.push(String::from_utf8(spoiled).unwrap());
                }
            }
        }
        samples.extend(["".to_owned(), "R0lGODlh".to_owned(), "\u{1c}/9j/".to_owned()]);
        for kind in TYPES {
            let decodes = |s: &str| {
                let image = ImageInput {
                    field: "imageBase64",
                    content_type: kind.content_type().to_owned(),
                    base64: s.into(),
                };
                decode_now(&image).is_ok()
            };
            agree(&image_base64_pattern(kind), &samples, decodes);
        }
    }

    /// Every string and every list of every RPC's input states its bound, nested ones
    /// too: a field added without one (as `verifyChange`'s were) fails here. Its length
    /// is then read no further than that bound (`bounded.rs`), as the limit tests check.
    #[test]
    fn every_input_string_and_list_states_its_bound() {
        let doc = document();
        let mut checked = 0;
        for (path, item) in doc["paths"].as_object().unwrap() {
            let body = &item["post"]["requestBody"];
            let schema = &body["content"]["application/json"]["schema"];
            checked += bounded(&doc, schema, path);
            // An empty body is read as `{}`: required exactly when `{}` is not an input.
            let empty_ok = ["/rpc/getSession", "/rpc/requestCliAuth"].contains(&path.as_str());
            assert_eq!(body["required"], !empty_ok, "{path}");
        }
        assert!(checked > 100, "only {checked} fields were checked");
    }

    /// Checks `schema` (at `at`) and what it holds; answers how many values it checked.
    fn bounded(doc: &Value, schema: &Value, at: &str) -> usize {
        if let Some(reference) = schema["$ref"].as_str() {
            let name = reference.trim_start_matches("#/components/schemas/");
            return bounded(doc, &doc["components"]["schemas"][name], at);
        }
        let mut checked = 1;
        // A nullable reference is `allOf: [{$ref}]`; the `anyOf`s of rules that tie fields
        // together restate fields bounded here.
        for part in schema["allOf"].as_array().into_iter().flatten() {
            checked += bounded(doc, part, at);
        }
        match schema["type"].as_str() {
            Some("string") if schema.get("enum").is_none() => {
                assert!(schema["maxLength"].is_u64(), "{at} states no maxLength: {schema}");
            }
            Some("array") => {
                assert!(schema["maxItems"].is_u64(), "{at} states no maxItems: {schema}");
                checked += bounded(doc, &schema["items"], &format!("{at}[]"));
            }
            Some("object") => {
                for (name, property) in schema["properties"].as_object().into_iter().flatten() {
                    checked += bounded(doc, property, &format!("{at}.{name}"));
                }
            }
            _ => {}
        }
        checked
    }
}

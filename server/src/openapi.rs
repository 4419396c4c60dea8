//! `GET /openapi.json`: an OpenAPI 3.0 document with every RPC as `POST /rpc/{name}`,
//! its request and response schemas generated from the protocol's Rust types (their
//! `schema` feature), so external tools can drive and fuzz the API. Schemas follow
//! what the server accepts (serde's deserialising view: a field with a default is
//! optional). They state every limit the server enforces while reading an input
//! (`maxLength`, `maxItems`, `minLength: 1` and a non-blank `pattern` for required text,
//! `minimum`/`maximum`), and each operation its body cap (`x-max-body-bytes`).

use axum::Json;
use redline_protocol::{Rpc, Scope};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

use crate::rpc::{body_max_bytes, with_served_rpcs};

/// `GET /openapi.json`.
pub async fn handle() -> Json<Value> {
    Json(document())
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
            "required": true,
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

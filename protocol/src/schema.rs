//! What `/openapi.json` states about inputs beyond each field's type, length and form
//! (which sit on the fields, as their [`crate::bound`] adapters, the forms' patterns in
//! [`crate::patterns`]): the patterns of image types and bytes, and the rules tying
//! fields together as `anyOf` alternatives, so a client generated from the document
//! never sends what the server refuses. The patterns follow the rules of
//! [`crate::patterns`]: the regex subset ECMA 262, Python and Rust read alike.

use schemars::{Schema, SchemaGenerator, json_schema};
use serde_json::{Map, Value, json};

use crate::patterns::{NON_BLANK, ws};
use crate::records::ChangeStatus;
use crate::rules::{ImageType, is_user_settable_status};

/// `contentType` of each image type as [`ImageType::from_content_type`] reads it: the
/// type with or without `image/`, any ASCII case, whitespace around it, parameters after
/// a `;` ignored (and, as in every stored string, no U+0000).
pub fn content_type_pattern(kind: ImageType) -> String {
    let name = match kind {
        ImageType::Png => "[Pp][Nn][Gg]",
        ImageType::Jpeg => "[Jj][Pp][Ee]?[Gg]",
        ImageType::Webp => "[Ww][Ee][Bb][Pp]",
    };
    format!(concat!("^[", ws!(), r"]*(?:[Ii][Mm][Aa][Gg][Ee]/)?{}[", ws!(), r"]*(?:;[^\x00]*)?$"), name)
}

/// `imageBase64` of each image type as the server decodes it: standard base64 with its
/// padding (and zero bits after the last byte), optionally after a `data:…;base64,`
/// prefix, whitespace around it ignored, whose bytes start with the type's magic number
/// (`\x89PNG\r\n\x1a\n`, `FF D8 FF`, `RIFF….WEBP`).
pub fn image_base64_pattern(kind: ImageType) -> String {
    // The magic number's first groups of four characters; a PNG's eight bytes end inside
    // the third group, which is either the file's last (`Ggo=`) or followed by more.
    let rest = "(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/][AQgw]==|[A-Za-z0-9+/]{2}[AEIMQUYcgkosw048]=)?";
    let magic = match kind {
        ImageType::Png => format!("iVBORw0K(?:Ggo=|Gg[o-r][A-Za-z0-9+/]{rest})"),
        ImageType::Jpeg => format!("/9j/{rest}"),
        ImageType::Webp => format!("UklGR[g-v][A-Za-z0-9+/]{{4}}[BFJNRVZdhlptx159]XRUJQ{rest}"),
    };
    format!(concat!(r"^(?:data:[^,\x00]*;base64,)?[", ws!(), "]*{}[", ws!(), "]*$"), magic)
}

/// `setChangeStatus`'s `status`: only the statuses a user may set.
pub fn settable_status(_: &mut SchemaGenerator) -> Schema {
    let settable: Vec<&str> = ChangeStatus::ALL
        .into_iter()
        .filter(|s| is_user_settable_status(*s))
        .map(ChangeStatus::as_str)
        .collect();
    json_schema!({ "type": "string", "enum": settable })
}

/// An image (`contentType` and `imageBase64`) that must be there: its type is one of
/// ours and its bytes are of that type.
pub fn image_required(schema: &mut Schema) {
    all_of_one(schema, image_alternatives());
}

/// An image that may be left out (`imageBase64` absent or null); when it is there,
/// `contentType` is required and the bytes are of that type.
pub fn image_optional(schema: &mut Schema) {
    let mut alternatives = image_alternatives();
    alternatives.push(json!({ "properties": { "imageBase64": absent() } }));
    all_of_one(schema, alternatives);
}

fn image_alternatives() -> Vec<Value> {
    [ImageType::Png, ImageType::Jpeg, ImageType::Webp]
        .into_iter()
        .map(|kind| {
            json!({
                "required": ["contentType", "imageBase64"],
                "properties": {
                    "contentType": { "type": "string", "pattern": content_type_pattern(kind) },
                    "imageBase64": { "type": "string", "pattern": image_base64_pattern(kind) },
                }
            })
        })
        .collect()
}

/// An agent write's `fence` needs its `groupId` (see Leases).
pub fn fence_needs_group(schema: &mut Schema) {
    all_of_one(
        schema,
        vec![
            json!({ "properties": { "fence": absent() } }),
            json!({ "required": ["groupId"], "properties": { "groupId": { "type": "string" } } }),
        ],
    );
}

/// `answerChangeQuestion` says something: words in `body`, or a `chosenOption`.
pub fn answer_says_something(schema: &mut Schema) {
    all_of_one(
        schema,
        vec![
            json!({ "properties": { "body": { "type": "string", "pattern": NON_BLANK } } }),
            json!({ "required": ["chosenOption"], "properties": { "chosenOption": { "type": "string" } } }),
        ],
    );
}

/// `verifyChange` `still_wrong` says what is still wrong, in `body`.
pub fn still_wrong_says_what(schema: &mut Schema) {
    all_of_one(
        schema,
        vec![
            json!({ "properties": { "verdict": { "enum": ["fixed"] } } }),
            json!({ "required": ["body"], "properties": { "body": { "type": "string", "pattern": NON_BLANK } } }),
        ],
    );
}

/// `pollCliAuth` presents the `deviceSecret` its request was answered with: optional
/// in the protocol's type (other servers make none), required by ours.
pub fn device_secret_required(schema: &mut Schema) {
    if let Some(Value::Array(required)) = schema.get_mut("required") {
        required.push(json!("deviceSecret"));
    }
}

/// A value left out or null (OpenAPI 3.0 has no `null` type).
fn absent() -> Value {
    json!({ "enum": [null], "nullable": true })
}

/// Adds "one of `alternatives` holds" to an object schema, together with any such rule
/// it has already: one `anyOf` of every combination, each alternative one flat object
/// schema (generators such as schemathesis merge those with the object's own schema,
/// where nested `allOf`s of `anyOf`s would leave them filtering at random).
fn all_of_one(schema: &mut Schema, alternatives: Vec<Value>) {
    let object = schema.ensure_object();
    let combined = match object.remove("anyOf") {
        Some(Value::Array(existing)) => {
            existing.iter().flat_map(|a| alternatives.iter().map(move |b| merge(a, b))).collect()
        }
        _ => alternatives,
    };
    object.insert("anyOf".to_owned(), Value::Array(combined));
}

/// Two alternatives that constrain different fields, as one.
fn merge(a: &Value, b: &Value) -> Value {
    let mut properties = Map::new();
    let mut required = Vec::new();
    for side in [a, b] {
        if let Some(p) = side["properties"].as_object() {
            for (name, schema) in p {
                let earlier = properties.insert(name.clone(), schema.clone());
                debug_assert!(earlier.is_none(), "two rules on `{name}`");
            }
        }
        required.extend(side["required"].as_array().into_iter().flatten().cloned());
    }
    let mut merged = json!({ "properties": properties });
    if !required.is_empty() {
        merged["required"] = Value::Array(required);
    }
    merged
}

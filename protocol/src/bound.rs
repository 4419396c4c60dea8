//! A field's bound, stated once for both its reader and its JSON Schema: each field
//! names an adapter type with `#[serde(with = "...")]`, which serde calls to read and
//! write the field, and which `schemars` reads as the type whose schema the field has.
//!
//! ```text
//! #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
//! pub change_id: String,
//! #[serde(default, with = "Opt::<List<Plain<ChangeStatus>, 0, STATUSES_MAX>>")]
//! pub status: Option<Vec<ChangeStatus>>,
//! ```
//!
//! The path is resolved where the field is, so its module imports the limits it names
//! (a limit with a path of its own goes in braces: `{ crate::styles::FAILED_REQUESTS_MAX }`).
//!
//! [`Text`] reads with [`bounded::string`] (at most `MAX` characters, no U+0000) and
//! states `minLength` (when `MIN > 0`), `maxLength` and the pattern of its [`Form`];
//! [`List`] reads with [`bounded::vec`] and states `minItems`/`maxItems`, its entries'
//! bound on `items`; [`Opt`] is the same, `null` or absent allowed. The minimum is
//! stated to the schema only: refusing an empty value is the server's check of the field.

use std::marker::PhantomData;

use serde::de::{Deserialize, DeserializeOwned, Deserializer};
use serde::ser::{Serialize, Serializer};

use crate::bounded;

/// A bound on one value: how it is read, and (feature `schema`) what it adds to the
/// value's JSON Schema.
pub trait Bound {
    type Value;

    /// Reads the value, refusing it over its bound.
    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self::Value, D::Error>;

    /// Adds the bound to the schema of `Self::Value` (or of `Option<Self::Value>`).
    #[cfg(feature = "schema")]
    fn state(schema: &mut schemars::Schema);
}

/// The form of a [`Text`]: the pattern the schema states for it (each in
/// [`crate::patterns`]). Every text is read without U+0000 whatever its form.
pub trait Form {
    #[cfg(feature = "schema")]
    const PATTERN: &'static str;
}

macro_rules! forms {
    ($( $(#[$doc:meta])* $form:ident = $pattern:ident; )*) => {$(
        $(#[$doc])*
        pub enum $form {}
        impl Form for $form {
            #[cfg(feature = "schema")]
            const PATTERN: &'static str = crate::patterns::$pattern;
        }
    )*};
}

forms! {
    /// Any text without U+0000.
    NoNul = NO_NUL;
    /// Text that is not blank once trimmed.
    NonBlank = NON_BLANK;
    /// A change reference: `#7`, `7` or a UUID.
    Reference = CHANGE_REF;
    /// A page cursor the server made.
    Cursor = CURSOR;
    /// A client-made `changeId`: a UUID.
    Uuid = UUID;
    /// A commit id: 7 to 40 hex digits.
    CommitSha = COMMIT_SHA;
    /// An `https://` link.
    HttpsLink = HTTPS_LINK;
    /// An item's `route`.
    Route = ROUTE;
}

/// A string of `MIN` to `MAX` characters of form `F`.
pub struct Text<F, const MIN: usize, const MAX: usize>(PhantomData<F>);

impl<F: Form, const MIN: usize, const MAX: usize> Bound for Text<F, MIN, MAX> {
    type Value = String;

    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<String, D::Error> {
        bounded::string::<D, MAX>(deserializer)
    }

    #[cfg(feature = "schema")]
    fn state(schema: &mut schemars::Schema) {
        if MIN > 0 {
            schema.insert("minLength".to_owned(), MIN.into());
        }
        schema.insert("maxLength".to_owned(), MAX.into());
        schema.insert("pattern".to_owned(), F::PATTERN.into());
    }
}

/// A list of `MIN` to `MAX` entries, each read (and stated) by `B`.
pub struct List<B, const MIN: usize, const MAX: usize>(PhantomData<B>);

impl<B: Bound, const MIN: usize, const MAX: usize> Bound for List<B, MIN, MAX> {
    type Value = Vec<B::Value>;

    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Vec<B::Value>, D::Error> {
        let list = bounded::vec::<D, Read<B>, MAX>(deserializer)?;
        Ok(list.into_iter().map(|entry| entry.0).collect())
    }

    #[cfg(feature = "schema")]
    fn state(schema: &mut schemars::Schema) {
        if MIN > 0 {
            schema.insert("minItems".to_owned(), MIN.into());
        }
        schema.insert("maxItems".to_owned(), MAX.into());
        if let Some(items) = schema.get_mut("items").and_then(|i| <&mut schemars::Schema>::try_from(i).ok()) {
            B::state(items);
        }
    }
}

/// `B`'s value, or `null` or absent (with `#[serde(default)]`) as `None`.
pub struct Opt<B>(PhantomData<B>);

impl<B: Bound> Bound for Opt<B> {
    type Value = Option<B::Value>;

    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<B::Value>, D::Error> {
        Ok(Option::<Read<B>>::deserialize(deserializer)?.map(|value| value.0))
    }

    #[cfg(feature = "schema")]
    fn state(schema: &mut schemars::Schema) {
        B::state(schema);
    }
}

/// A list entry read as its type reads it, with no bound of its own.
pub struct Plain<T>(PhantomData<T>);

impl<T: DeserializeOwned> Bound for Plain<T> {
    type Value = T;

    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
        T::deserialize(deserializer)
    }

    #[cfg(feature = "schema")]
    fn state(_: &mut schemars::Schema) {}
}

/// A struct read from a JSON object only ([`bounded::object`]).
pub struct Object<T>(PhantomData<T>);

impl<T: DeserializeOwned> Bound for Object<T> {
    type Value = T;

    fn read<'de, D: Deserializer<'de>>(deserializer: D) -> Result<T, D::Error> {
        bounded::object(deserializer)
    }

    #[cfg(feature = "schema")]
    fn state(_: &mut schemars::Schema) {}
}

/// A value read by `B`, as a value of its own (an entry of a list, an option's content).
struct Read<B: Bound>(B::Value);

impl<'de, B: Bound> Deserialize<'de> for Read<B> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        B::read(deserializer).map(Read)
    }
}

/// What `#[serde(with = ...)]` calls (`deserialize`, `serialize`) and what `schemars`
/// takes the field's schema from (`JsonSchema`, inlined: the schema of the value's own
/// type with the bound added), for each adapter a field may name.
macro_rules! field_adapter {
    ($adapter:ident < $($param:ident),* $(; const $konst:ident)* >) => {
        impl<$($param,)* $(const $konst: usize,)*> $adapter<$($param,)* $($konst,)*>
        where
            Self: Bound,
        {
            pub fn deserialize<'de, D: Deserializer<'de>>(
                deserializer: D,
            ) -> Result<<Self as Bound>::Value, D::Error> {
                <Self as Bound>::read(deserializer)
            }

            pub fn serialize<S: Serializer>(
                value: &<Self as Bound>::Value,
                serializer: S,
            ) -> Result<S::Ok, S::Error>
            where
                <Self as Bound>::Value: Serialize,
            {
                value.serialize(serializer)
            }
        }

        #[cfg(feature = "schema")]
        impl<$($param,)* $(const $konst: usize,)*> schemars::JsonSchema for $adapter<$($param,)* $($konst,)*>
        where
            Self: Bound,
            <Self as Bound>::Value: schemars::JsonSchema,
        {
            fn inline_schema() -> bool {
                true
            }

            fn schema_name() -> std::borrow::Cow<'static, str> {
                <<Self as Bound>::Value as schemars::JsonSchema>::schema_name()
            }

            fn json_schema(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
                let mut schema = generator.subschema_for::<<Self as Bound>::Value>();
                <Self as Bound>::state(&mut schema);
                schema
            }
        }
    };
}

field_adapter!(Text<F; const MIN; const MAX>);
field_adapter!(List<B; const MIN; const MAX>);
field_adapter!(Opt<B>);

#[cfg(test)]
mod tests {
    use serde::{Deserialize, Serialize};

    use super::*;

    #[derive(Debug, Serialize, Deserialize)]
    struct Input {
        #[serde(default, with = "List::<Plain<u8>, 0, 3>")]
        list: Vec<u8>,
        #[serde(default, with = "Opt::<List<Text<NoNul, 1, 4>, 1, 2>>")]
        words: Option<Vec<String>>,
        #[serde(default, with = "Opt::<Text<NonBlank, 0, 3>>")]
        name: Option<String>,
    }

    fn read(json: &str) -> Result<Input, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn reads_up_to_the_bound_and_writes_as_the_type_does() {
        let input = read(r#"{"list":[1,2,3],"words":["abcd","é€😀x"],"name":"ééé"}"#).unwrap();
        assert_eq!(input.list, [1, 2, 3]);
        assert_eq!(input.words.as_ref().unwrap()[1], "é€😀x");
        assert_eq!(
            serde_json::to_string(&input).unwrap(),
            r#"{"list":[1,2,3],"words":["abcd","é€😀x"],"name":"ééé"}"#
        );
        let input = read(r#"{"words":null}"#).unwrap();
        assert!(input.list.is_empty() && input.words.is_none() && input.name.is_none());
    }

    #[test]
    fn refuses_what_is_over_the_bound() {
        assert!(read(r#"{"list":[1,2,3,4]}"#).unwrap_err().starts_with("must have at most 3 entries"));
        assert!(read(r#"{"words":["a","b","c"]}"#).unwrap_err().starts_with("must have at most 2 entries"));
        assert!(read(r#"{"words":["abcde"]}"#).unwrap_err().starts_with("must be at most 4 characters"));
        assert!(read(r#"{"name":"a\u0000"}"#).unwrap_err().starts_with("must not contain U+0000"));
    }

    #[test]
    fn a_list_of_objects_takes_objects_only_up_to_its_bound() {
        #[derive(Debug, PartialEq, Deserialize)]
        struct Point {
            x: u8,
        }
        #[derive(Debug, Deserialize)]
        struct Stroke {
            #[serde(default, with = "List::<Object<Point>, 0, 2>")]
            points: Vec<Point>,
        }
        let read =
            |json: &str| serde_json::from_str::<Stroke>(json).map(|s| s.points).map_err(|e| e.to_string());
        assert_eq!(read(r#"{"points":[{"x":1},{"x":2}]}"#).unwrap(), [Point { x: 1 }, Point { x: 2 }]);
        assert_eq!(read("{}").unwrap(), []);
        // serde's derived struct reader would take `[1]` as `{"x": 1}`.
        assert!(read(r#"{"points":[[1]]}"#).unwrap_err().contains("expected an object"));
        let over = read(r#"{"points":[{"x":1},{"x":2},{"x":3}]}"#).unwrap_err();
        assert!(over.starts_with("must have at most 2 entries"), "{over}");
    }

    #[cfg(feature = "schema")]
    #[test]
    fn states_the_bound_in_the_schema() {
        #[derive(schemars::JsonSchema, Deserialize)]
        #[allow(dead_code)]
        struct Stated {
            #[serde(with = "List::<Text<Reference, 1, 36>, 1, 5>")]
            ids: Vec<String>,
            #[serde(default, with = "Opt::<Text<NoNul, 0, 9>>")]
            note: Option<String>,
        }
        let schema = schemars::schema_for!(Stated).to_value();
        let ids = &schema["properties"]["ids"];
        assert_eq!((ids["minItems"].as_u64(), ids["maxItems"].as_u64()), (Some(1), Some(5)));
        assert_eq!(ids["items"]["maxLength"], 36);
        assert_eq!(ids["items"]["pattern"], crate::patterns::CHANGE_REF);
        let note = &schema["properties"]["note"];
        assert_eq!(note["type"], serde_json::json!(["string", "null"]));
        assert_eq!(note["maxLength"], 9);
        assert!(note.get("minLength").is_none());
        assert_eq!(schema["required"], serde_json::json!(["ids"]));
    }
}

//! Length-bounded reading of inputs: serde `deserialize_with` functions that refuse a
//! list or a string over its limit *while it is read*, so an oversized input costs at
//! most the limit (plus one entry) and never a vector of a million entries.
//!
//! Input fields name them through [`crate::bound`], whose adapters also state the same
//! limit to the JSON Schema, so the OpenAPI document says what the server refuses.
//! Strings count characters (Unicode scalar values), as JSON Schema's `maxLength` does.
//!
//! Strings read here refuse U+0000 as well (see [`string`]).
//!
//! The error names no field: the server's parser adds the path (`capture.elements:
//! must have at most 500 entries`).

use std::fmt;
use std::marker::PhantomData;

use serde::de::value::MapAccessDeserializer;
use serde::de::{self, Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};

/// A list of at most `N` entries.
pub fn vec<'de, D, T, const N: usize>(deserializer: D) -> Result<Vec<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    deserializer.deserialize_seq(BoundedSeq::<T, N>(PhantomData))
}

/// A string of at most `N` characters, without U+0000 (which Postgres cannot store in
/// text).
pub fn string<'de, D, const N: usize>(deserializer: D) -> Result<String, D::Error>
where
    D: Deserializer<'de>,
{
    deserializer.deserialize_str(BoundedStr::<N, false>)
}

/// An object read only from a JSON object: serde's derived `Deserialize` of a struct
/// also takes a list of its fields' values (`[1, 2]` as `{x: 1, y: 2}`, `[]` as `{}`),
/// which no schema of ours states. As a value of its own: the server reads every input
/// as `Object<Input>`.
pub struct Object<T>(pub T);

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Object<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        object(deserializer).map(Object)
    }
}

/// A struct, from a JSON object only (see [`Object`]).
pub fn object<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    struct OnlyMap<T>(PhantomData<T>);

    impl<'de, T: Deserialize<'de>> Visitor<'de> for OnlyMap<T> {
        type Value = T;

        fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
            f.write_str("an object")
        }

        fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<T, A::Error> {
            // The struct reads its fields from this map, each through the deserializer
            // the map came from (so errors keep their paths).
            T::deserialize(MapAccessDeserializer::new(map))
        }
    }

    deserializer.deserialize_map(OnlyMap(PhantomData))
}

/// An optional struct (`null` or absent is `None`), from a JSON object only.
pub fn opt_object<'de, D, T>(deserializer: D) -> Result<Option<T>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Ok(Option::<Object<T>>::deserialize(deserializer)?.map(|o| o.0))
}

/// Whether `s` has at most `max` characters (without counting when its bytes fit).
pub fn within_chars(s: &str, max: usize) -> bool {
    s.len() <= max || s.chars().nth(max).is_none()
}

/// A string of at most `N` characters, U+0000 allowed: for text kept inside JSON (a
/// capture's), where it is escaped, as the rest of a capture's text is.
pub(crate) struct JsonText<const N: usize>(pub(crate) String);

impl<'de, const N: usize> Deserialize<'de> for JsonText<N> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(BoundedStr::<N, true>).map(JsonText)
    }
}

struct BoundedSeq<T, const N: usize>(PhantomData<T>);

impl<'de, T: Deserialize<'de>, const N: usize> Visitor<'de> for BoundedSeq<T, N> {
    type Value = Vec<T>;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a list of at most {N} entries")
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Vec<T>, A::Error> {
        // A size hint is the sender's claim: trust it only up to the limit.
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(N).min(1024));
        while out.len() < N {
            match seq.next_element()? {
                Some(item) => out.push(item),
                None => return Ok(out),
            }
        }
        // One entry past the limit is skipped unread (not built) to tell it is there.
        match seq.next_element::<IgnoredAny>()? {
            None => Ok(out),
            Some(_) => Err(de::Error::custom(format_args!("must have at most {N} entries"))),
        }
    }
}

/// A string of at most `N` characters; with U+0000 only if `NUL`.
struct BoundedStr<const N: usize, const NUL: bool>;

impl<'de, const N: usize, const NUL: bool> Visitor<'de> for BoundedStr<N, NUL> {
    type Value = String;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "a string of at most {N} characters")
    }

    fn visit_str<E: de::Error>(self, s: &str) -> Result<String, E> {
        checked_str::<E, N, NUL>(s).map(str::to_owned)
    }

    fn visit_string<E: de::Error>(self, s: String) -> Result<String, E> {
        checked_str::<E, N, NUL>(&s)?;
        Ok(s)
    }
}

/// At most `N` characters, and no U+0000 unless `NUL`: the server stores these strings
/// in columns, and Postgres cannot hold it in text (refused on SQLite too, so both
/// answer alike).
fn checked_str<E: de::Error, const N: usize, const NUL: bool>(s: &str) -> Result<&str, E> {
    if !within_chars(s, N) {
        Err(E::custom(format_args!("must be at most {N} characters")))
    } else if !NUL && s.contains('\0') {
        Err(E::custom("must not contain U+0000"))
    } else {
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Deserialize)]
    struct Input {
        #[serde(default, deserialize_with = "super::vec::<_, _, 3>")]
        list: Vec<u8>,
        #[serde(default, deserialize_with = "super::string::<_, 3>")]
        name: String,
    }

    fn read(json: &str) -> Result<Input, String> {
        serde_json::from_str(json).map_err(|e| e.to_string())
    }

    #[test]
    fn lists_and_strings_up_to_their_limits() {
        let input = read(r#"{"list":[1,2,3],"name":"é€😀"}"#).unwrap();
        assert_eq!(input.list, [1, 2, 3]);
        assert_eq!(input.name, "é€😀");
        let input = read(r#"{}"#).unwrap();
        assert!(input.list.is_empty() && input.name.is_empty());
    }

    #[test]
    fn refuses_what_is_over() {
        assert!(read(r#"{"list":[1,2,3,4]}"#).unwrap_err().starts_with("must have at most 3 entries"));
        // The entry past the limit is not read as a `u8`, only skipped.
        assert!(read(r#"{"list":[1,2,3,{"x":[]}]}"#).unwrap_err().starts_with("must have at most 3 entries"));
        assert!(read(r#"{"name":"éééé"}"#).unwrap_err().starts_with("must be at most 3 characters"));
        assert!(read(r#"{"name":"a\u0000"}"#).unwrap_err().starts_with("must not contain U+0000"));
        assert!(read(r#"{"list":"no"}"#).unwrap_err().contains("a list of at most 3 entries"));
    }
}

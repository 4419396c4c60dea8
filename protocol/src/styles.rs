//! **(ours)** What a filing says about how the circled elements looked and what the page
//! failed to load: each element's compact set of computed styles, split into what
//! differs from its parent or the browser's default and the rest, and the page's
//! failed requests (`docs/protocol-additions.md`, "Computed styles and failed requests").

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::bounded::JsonText;

/// What a property of the compact set is compared with to tell whether the element's
/// value says something: an inherited property with its parent's value (the same value
/// is only inherited), any other with the browser's default for the element's tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Baseline {
    Parent,
    UaDefault,
}

/// The compact set, in the order clients show it: font, colour, background, spacing,
/// size, display and position (CSS property names, as `getComputedStyle` reads them).
pub const STYLE_PROPERTIES: [(&str, Baseline); 14] = [
    ("font-family", Baseline::Parent),
    ("font-size", Baseline::Parent),
    ("font-weight", Baseline::Parent),
    ("font-style", Baseline::Parent),
    ("line-height", Baseline::Parent),
    ("color", Baseline::Parent),
    ("background-color", Baseline::UaDefault),
    ("background-image", Baseline::UaDefault),
    ("margin", Baseline::UaDefault),
    ("padding", Baseline::UaDefault),
    ("width", Baseline::UaDefault),
    ("height", Baseline::UaDefault),
    ("display", Baseline::UaDefault),
    ("position", Baseline::UaDefault),
];

/// A computed value longer than this is cut (a long font stack or `url(…)`), with `…`.
pub const STYLE_VALUE_MAX_CHARS: usize = 100;
/// A property name's length (the compact set's longest is 16).
pub const STYLE_NAME_MAX_CHARS: usize = 32;
/// Properties in either half of an element's styles.
pub const STYLE_PROPERTIES_MAX: usize = 16;

/// **(ours)** An element's `styles`: the compact set's computed values, `changed` those
/// that differ from the element's parent (inherited properties) or from the browser's
/// default for its tag (the others), `unchanged` the rest. Together the whole set.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ElementStyles {
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(schema_with = "style_map"))]
    pub changed: StyleValues,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(schema_with = "style_map"))]
    pub unchanged: StyleValues,
}

/// CSS property names and their values, in the order they were read; on the wire a
/// JSON object. A list rather than a map: the page builds it, and a map's code would be
/// a good part of what this feature adds to what a page loads.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StyleValues(pub Vec<(String, String)>);

impl StyleValues {
    /// The value of property `name`.
    pub fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        self.0.iter().map(|(n, v)| (n.as_str(), v.as_str()))
    }
}

impl<const N: usize> From<[(&str, &str); N]> for StyleValues {
    fn from(pairs: [(&str, &str); N]) -> StyleValues {
        StyleValues(pairs.iter().map(|(n, v)| ((*n).to_owned(), (*v).to_owned())).collect())
    }
}

impl Serialize for StyleValues {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let mut map = serializer.serialize_map(Some(self.0.len()))?;
        for (name, value) in &self.0 {
            map.serialize_entry(name, value)?;
        }
        map.end()
    }
}

impl<'de> Deserialize<'de> for StyleValues {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Values;

        impl<'de> Visitor<'de> for Values {
            type Value = StyleValues;

            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("an object of CSS property names to values")
            }

            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<StyleValues, A::Error> {
                // Within the limits while read (as `bounded` reads lists and strings):
                // short entries cost far more held than sent, so a filing of many could
                // take many times its size.
                let mut values = Vec::new();
                while let Some(JsonText(name)) = map.next_key::<JsonText<STYLE_NAME_MAX_CHARS>>()? {
                    if values.len() == STYLE_PROPERTIES_MAX {
                        return Err(de::Error::custom(format_args!(
                            "must have at most {STYLE_PROPERTIES_MAX} properties"
                        )));
                    }
                    let JsonText(value) = map.next_value::<JsonText<STYLE_VALUE_MAX_CHARS>>()?;
                    values.push((name, value));
                }
                Ok(StyleValues(values))
            }
        }

        deserializer.deserialize_map(Values)
    }
}

impl ElementStyles {
    /// Sorts the compact set's values (in [`STYLE_PROPERTIES`]' order, as the page read
    /// them for the element, its parent, and a default element of its tag) into what
    /// changed and what did not. An element without a parent (the root) is compared
    /// with the default for every property.
    pub fn classify(element: &[String], parent: Option<&[String]>, ua_default: &[String]) -> ElementStyles {
        let mut styles = ElementStyles::default();
        for (i, (name, baseline)) in STYLE_PROPERTIES.iter().enumerate() {
            let Some(value) = element.get(i) else { break };
            let reference = match (baseline, parent) {
                (Baseline::Parent, Some(parent)) => parent.get(i),
                _ => ua_default.get(i),
            };
            let half = if reference == Some(value) { &mut styles.unchanged } else { &mut styles.changed };
            half.0.push(((*name).to_owned(), cut(value)));
        }
        styles
    }

    /// The properties to show, in the compact set's order (names it does not know last,
    /// alphabetically): what changed, and with `unchanged` the rest too.
    pub fn in_order(&self, unchanged: bool) -> Vec<(&str, &str)> {
        let mut shown: Vec<(&str, &str)> = self.changed.iter().collect();
        if unchanged {
            shown.extend(self.unchanged.iter());
        }
        let rank = |name: &str| STYLE_PROPERTIES.iter().position(|(p, _)| *p == name).unwrap_or(usize::MAX);
        shown.sort_by(|a, b| rank(a.0).cmp(&rank(b.0)).then(a.0.cmp(b.0)));
        shown
    }

    pub fn is_empty(&self) -> bool {
        self.changed.is_empty() && self.unchanged.is_empty()
    }
}

/// `value` in at most [`STYLE_VALUE_MAX_CHARS`] bytes (so as many characters), cut with `…`.
fn cut(value: &str) -> String {
    if value.len() <= STYLE_VALUE_MAX_CHARS {
        value.to_owned()
    } else {
        [at_most_bytes(value, STYLE_VALUE_MAX_CHARS - '…'.len_utf8()), "…"].concat()
    }
}

/// The longest start of `s` of at most `max` bytes that ends on a character boundary.
/// Bytes rather than characters: this runs in the page, where the code to count
/// characters would cost more than the few characters it keeps.
fn at_most_bytes(s: &str, max: usize) -> &str {
    let mut at = max.min(s.len());
    while !s.is_char_boundary(at) {
        at -= 1;
    }
    &s[..at]
}

/// A failed request's method is a word; a longer one is cut to this.
pub const REQUEST_METHOD_MAX_CHARS: usize = 20;
/// The most failed requests a filing carries (the page keeps the latest).
pub const FAILED_REQUESTS_MAX: usize = 50;
/// The highest HTTP status; 0 is a request that got no response at all.
pub const REQUEST_STATUS_MAX: u16 = 999;

/// **(ours)** A request of the page that failed: `status` 400 or more, or 0 when it got
/// no response (refused, unreachable, blocked); `url` without its query or fragment.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct FailedRequest {
    #[cfg_attr(feature = "schema", schemars(length(max = REQUEST_METHOD_MAX_CHARS)))]
    pub method: String,
    #[cfg_attr(feature = "schema", schemars(length(max = crate::URL_MAX_CHARS)))]
    pub url: String,
    #[cfg_attr(feature = "schema", schemars(range(max = REQUEST_STATUS_MAX)))]
    pub status: u16,
}

impl FailedRequest {
    /// A request as the page saw it, the URL without its query string, fragment and
    /// user name and password (which carry tokens and credentials, `kept_url`), method
    /// and URL cut to their limits (in bytes, so within them in characters too).
    pub fn new(method: &str, url: &str, status: u16) -> FailedRequest {
        FailedRequest {
            method: at_most_bytes(method, REQUEST_METHOD_MAX_CHARS).to_owned(),
            url: at_most_bytes(&crate::kept_url(url), crate::URL_MAX_CHARS).to_owned(),
            status: status.min(REQUEST_STATUS_MAX),
        }
    }

    /// The status as people read it: the number, or "no response" for 0.
    pub fn status_text(&self) -> String {
        if self.status == 0 { "no response".to_owned() } else { self.status.to_string() }
    }
}

/// An element's half of `styles` in `/openapi.json`: CSS property names to their computed
/// values, within the limits `validate_capture` checks.
#[cfg(feature = "schema")]
fn style_map(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
    schemars::json_schema!({
        "type": "object",
        "maxProperties": STYLE_PROPERTIES_MAX,
        "propertyNames": {"maxLength": STYLE_NAME_MAX_CHARS},
        "additionalProperties": {"type": "string", "maxLength": STYLE_VALUE_MAX_CHARS},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(pairs: &[(&str, &str)]) -> Vec<String> {
        STYLE_PROPERTIES
            .iter()
            .map(|(name, _)| pairs.iter().find(|(n, _)| n == name).map_or("x", |(_, v)| v).to_owned())
            .collect()
    }

    #[test]
    fn inherited_properties_compare_with_the_parent_and_others_with_the_default() {
        let parent = values(&[("font-size", "16px"), ("color", "rgb(0, 0, 0)"), ("margin", "4px")]);
        let ua = values(&[
            ("font-size", "13px"),
            ("color", "rgb(9, 9, 9)"),
            ("margin", "0px"),
            ("display", "block"),
        ]);
        let element = values(&[
            ("font-size", "16px"),
            ("color", "rgb(255, 0, 0)"),
            ("margin", "4px"),
            ("display", "block"),
        ]);
        let styles = ElementStyles::classify(&element, Some(&parent), &ua);
        assert_eq!(styles.changed.get("color"), Some("rgb(255, 0, 0)"));
        assert_eq!(styles.changed.get("margin"), Some("4px"), "the same as the parent is no default");
        assert_eq!(styles.unchanged.get("font-size"), Some("16px"), "inherited");
        assert_eq!(styles.unchanged.get("display"), Some("block"), "the tag's default");
        assert_eq!(styles.changed.len() + styles.unchanged.len(), STYLE_PROPERTIES.len());
    }

    #[test]
    fn the_root_compares_everything_with_the_default() {
        let ua = values(&[("font-size", "16px")]);
        let element = values(&[("font-size", "18px")]);
        let styles = ElementStyles::classify(&element, None, &ua);
        assert_eq!(styles.changed.iter().map(|(name, _)| name).collect::<Vec<_>>(), ["font-size"]);
    }

    #[test]
    fn long_values_are_cut() {
        let mut element = values(&[]);
        element[0] = "a".repeat(STYLE_VALUE_MAX_CHARS + 20);
        let styles = ElementStyles::classify(&element, Some(&values(&[])), &values(&[]));
        let family = styles.changed.get("font-family").unwrap();
        assert_eq!(
            family,
            format!("{}…", "a".repeat(STYLE_VALUE_MAX_CHARS - 3)),
            "within the limit in bytes"
        );
        element[0] = "a".repeat(STYLE_VALUE_MAX_CHARS);
        let styles = ElementStyles::classify(&element, Some(&values(&[])), &values(&[]));
        assert_eq!(
            styles.changed.get("font-family"),
            Some(element[0].as_str()),
            "exactly at the limit is kept"
        );
        element[0] = "é".repeat(STYLE_VALUE_MAX_CHARS);
        let styles = ElementStyles::classify(&element, Some(&values(&[])), &values(&[]));
        let family = styles.changed.get("font-family").unwrap();
        assert_eq!(
            family,
            format!("{}…", "é".repeat((STYLE_VALUE_MAX_CHARS - 3) / 2)),
            "cut between characters"
        );
    }

    #[test]
    fn shown_in_the_sets_order_with_or_without_the_unchanged() {
        let styles = ElementStyles {
            changed: [("display", "flex"), ("accent-color", "blue"), ("color", "red")].into(),
            unchanged: [("font-size", "16px")].into(),
        };
        assert_eq!(styles.in_order(false), [("color", "red"), ("display", "flex"), ("accent-color", "blue")]);
        assert_eq!(
            styles.in_order(true),
            [("font-size", "16px"), ("color", "red"), ("display", "flex"), ("accent-color", "blue")]
        );
    }

    #[test]
    fn style_values_are_a_json_object_in_their_order() {
        let values = StyleValues::from([("padding", "4px"), ("color", "red")]);
        let json = serde_json::to_string(&values).unwrap();
        assert_eq!(json, r#"{"padding":"4px","color":"red"}"#);
        assert_eq!(serde_json::from_str::<StyleValues>(&json).unwrap(), values);
        assert!(serde_json::from_str::<StyleValues>(r#"[["padding", "4px"]]"#).is_err());
        assert!(serde_json::from_str::<StyleValues>(r#"{"padding": 4}"#).is_err());
    }

    #[test]
    fn style_values_are_refused_past_their_limits_while_read() {
        let read = |json: String| serde_json::from_str::<StyleValues>(&json).map_err(|e| e.to_string());
        let entries = |n: usize| (0..n).map(|i| format!("\"p{i}\":\"0\"")).collect::<Vec<_>>().join(",");
        assert_eq!(
            read(format!("{{{}}}", entries(STYLE_PROPERTIES_MAX))).unwrap().len(),
            STYLE_PROPERTIES_MAX
        );
        let over = read(format!("{{{}}}", entries(100_000))).unwrap_err();
        assert!(over.starts_with("must have at most 16 properties"), "{over}");
        let long = "é".repeat(STYLE_VALUE_MAX_CHARS);
        assert_eq!(read(format!("{{\"color\":\"{long}\"}}")).unwrap().get("color"), Some(long.as_str()));
        let value = read(format!("{{\"color\":\"{long}x\"}}")).unwrap_err();
        assert!(value.starts_with("must be at most 100 characters"), "{value}");
        let name = read(format!("{{\"{}\":\"0\"}}", "n".repeat(STYLE_NAME_MAX_CHARS + 1))).unwrap_err();
        assert!(name.starts_with("must be at most 32 characters"), "{name}");
    }

    #[test]
    fn a_failed_request_keeps_no_query_and_a_short_method() {
        let r = FailedRequest::new("POST", "https://me:pw@api.example/orders?token=s3cret#x", 500);
        assert_eq!(
            r,
            FailedRequest { method: "POST".into(), url: "https://api.example/orders".into(), status: 500 }
        );
        let long =
            FailedRequest::new(&"x".repeat(50), &format!("https://a.example/{}", "é".repeat(3000)), 1200);
        assert_eq!((long.method.len(), long.status), (REQUEST_METHOD_MAX_CHARS, REQUEST_STATUS_MAX));
        assert!(long.url.len() <= crate::URL_MAX_CHARS && long.url.len() >= crate::URL_MAX_CHARS - 1);
        assert!(long.url.ends_with('é'), "cut between characters");
    }
}

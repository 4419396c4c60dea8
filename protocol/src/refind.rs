//! **(ours)** Items re-found on a later build (docs/protocol-additions.md, "Items
//! re-found on a new build"): when the filer's panel sees the stage serve a build other
//! than the one an item was filed on, it looks for the item's circled elements again
//! and records what it found (`recordRefind`), which `getChange` answers as `refind`
//! so the agent sees it too. What each element's finding means and how both clients
//! say it are here, once.

use serde::{Deserialize, Serialize};

use crate::bound::{List, NoNul, NonBlank, Object, Opt, Reference, Text};
use crate::{CSS_PATH_MAX_CHARS, ID_MAX_CHARS, NAME_MAX_CHARS, SHORT_MAX_CHARS, Timestamp, short_sha};

/// At most this many elements of an item are re-found and recorded (its first ones).
pub const REFIND_ELEMENTS_MAX: usize = 50;

/// Where an element is on the new build.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Whereabouts {
    /// Found where it was: its captured CSS path leads to it.
    InPlace,
    /// Found (by test id, source anchor or text), but its captured CSS path no longer
    /// leads to it: it is at `cssPath` now.
    Moved,
    /// Nothing on the page matches it.
    Gone,
}

impl Whereabouts {
    pub const fn as_str(self) -> &'static str {
        match self {
            Whereabouts::InPlace => "in place",
            Whereabouts::Moved => "moved",
            Whereabouts::Gone => "gone",
        }
    }
}

/// One element as re-found.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RefoundElement {
    /// How the element is named (its test id, anchor, text or tag: the panel's chip).
    #[serde(with = "Text::<NonBlank, 1, NAME_MAX_CHARS>")]
    pub label: String,
    pub whereabouts: Whereabouts,
    /// Where it is now (a CSS path as `Element.cssPath` writes them); absent when gone,
    /// and ignored then.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, CSS_PATH_MAX_CHARS>>"
    )]
    pub css_path: Option<String>,
}

/// `recordRefind` **(ours)**: `changeId, projectId?, gitSha, elements[]` (1 to 50): what
/// the filer's page found of the item's elements on build `gitSha`. Replaces the item's
/// earlier finding.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordRefindInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    /// The build the page stated (its `fabric-git-sha`), or the stage's deployed one.
    #[serde(with = "Text::<NonBlank, 1, SHORT_MAX_CHARS>")]
    pub git_sha: String,
    #[serde(with = "List::<Object<RefoundElement>, 1, REFIND_ELEMENTS_MAX>")]
    pub elements: Vec<RefoundElement>,
}

/// An item's latest finding: on which build, by whom, when, and each element's.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Refind {
    pub git_sha: String,
    pub elements: Vec<RefoundElement>,
    /// The name of the person whose token recorded it.
    #[serde(default)]
    pub found_by: Option<String>,
    pub found_at: Timestamp,
}

/// `recordRefind` → `{refind}`: the finding as stored.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RecordRefindOutput {
    pub refind: Refind,
}

/// The item as a whole, from its elements' findings: `gone` when none of them is found,
/// `moved` when any moved or is gone, `in place` otherwise (also with no elements).
pub fn item_whereabouts(elements: &[RefoundElement]) -> Whereabouts {
    let gone = elements.iter().filter(|e| e.whereabouts == Whereabouts::Gone).count();
    if !elements.is_empty() && gone == elements.len() {
        Whereabouts::Gone
    } else if gone > 0 || elements.iter().any(|e| e.whereabouts == Whereabouts::Moved) {
        Whereabouts::Moved
    } else {
        Whereabouts::InPlace
    }
}

impl Refind {
    pub fn whereabouts(&self) -> Whereabouts {
        item_whereabouts(&self.elements)
    }

    /// How both clients say it: "re-found on build a91c4e2: Export CSV moved to
    /// `#toolbar > button`; orders.old gone".
    pub fn describe(&self) -> String {
        let elements: Vec<String> = self.elements.iter().map(RefoundElement::describe).collect();
        format!("re-found on build {}: {}", short_sha(&self.git_sha), elements.join("; "))
    }
}

impl RefoundElement {
    /// "Export CSV moved to `#toolbar > button`", "orders.old gone", "Save in place".
    pub fn describe(&self) -> String {
        match (self.whereabouts, self.css_path.as_deref()) {
            (Whereabouts::Moved, Some(path)) => format!("{} moved to `{path}`", self.label),
            (whereabouts, _) => format!("{} {}", self.label, whereabouts.as_str()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn element(label: &str, whereabouts: Whereabouts, css_path: Option<&str>) -> RefoundElement {
        RefoundElement { label: label.into(), whereabouts, css_path: css_path.map(Into::into) }
    }

    #[test]
    fn an_item_is_gone_when_nothing_is_found_and_moved_when_anything_is_not_in_place() {
        let in_place = element("Save", Whereabouts::InPlace, Some("#save"));
        let moved = element("Export CSV", Whereabouts::Moved, Some("#toolbar > button"));
        let gone = element("orders.old", Whereabouts::Gone, None);
        assert_eq!(item_whereabouts(std::slice::from_ref(&in_place)), Whereabouts::InPlace);
        assert_eq!(item_whereabouts(&[in_place.clone(), moved.clone()]), Whereabouts::Moved);
        assert_eq!(item_whereabouts(&[in_place, gone.clone()]), Whereabouts::Moved, "partly gone");
        assert_eq!(item_whereabouts(&[gone.clone(), gone]), Whereabouts::Gone);
        assert_eq!(item_whereabouts(&[]), Whereabouts::InPlace);
    }

    #[test]
    fn a_finding_reads_as_one_line() {
        let refind = Refind {
            git_sha: "a91c4e2ffee0".into(),
            elements: vec![
                element("Export CSV", Whereabouts::Moved, Some("#toolbar > button")),
                element("orders.old", Whereabouts::Gone, None),
                element("Save", Whereabouts::InPlace, Some("#save")),
            ],
            found_by: Some("ana".into()),
            found_at: Timestamp::from_unix_millis(0),
        };
        assert_eq!(
            refind.describe(),
            "re-found on build a91c4e2: Export CSV moved to `#toolbar > button`; orders.old gone; Save in place"
        );
        assert_eq!(refind.whereabouts(), Whereabouts::Moved);
    }

    #[test]
    fn inputs_are_bounded_and_named_as_on_the_wire() {
        let input = json!({"changeId": "#7", "gitSha": "b2", "elements": [
            {"label": "Export CSV", "whereabouts": "moved", "cssPath": "#t > b"},
            {"label": "orders.old", "whereabouts": "gone"}]});
        let read: RecordRefindInput = serde_json::from_value(input).unwrap();
        assert_eq!(read.elements[1], element("orders.old", Whereabouts::Gone, None));
        assert_eq!(serde_json::to_value(&read.elements[0]).unwrap()["whereabouts"], "moved");
        let many = vec![json!({"label": "x", "whereabouts": "gone"}); REFIND_ELEMENTS_MAX + 1];
        let error = serde_json::from_value::<RecordRefindInput>(
            json!({"changeId": "7", "gitSha": "b2", "elements": many}),
        )
        .unwrap_err();
        assert!(error.to_string().contains("at most 50"), "{error}");
        let long = "p".repeat(crate::CSS_PATH_MAX_CHARS + 1);
        let long_path = json!({"changeId": "7", "gitSha": "b2", "elements": [
            {"label": "x", "whereabouts": "moved", "cssPath": long}]});
        assert!(serde_json::from_value::<RecordRefindInput>(long_path).is_err());
        let unknown =
            json!({"changeId": "7", "gitSha": "b2", "elements": [{"label": "x", "whereabouts": "lost"}]});
        assert!(serde_json::from_value::<RecordRefindInput>(unknown).is_err());
    }
}

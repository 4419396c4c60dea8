//! Finding an item's circled elements again on a page: the order of the attempts (test
//! id, then source anchor, then CSS path, then text), what found each element and how
//! that reads. One rule for the extension's "Show on page" and "Check on stage" (the DOM
//! side is its `show.rs`) and for `redline guard` (the DOM side is a script the agent
//! evaluates in headless Chromium).

use crate::Element;
use serde::{Deserialize, Serialize};

/// Which of an element's handles found it on the page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum MatchedBy {
    TestId,
    SourceAnchor,
    CssPath,
    Text,
}

impl MatchedBy {
    pub fn label(self) -> &'static str {
        match self {
            MatchedBy::TestId => "test id",
            MatchedBy::SourceAnchor => "source anchor",
            MatchedBy::CssPath => "CSS path",
            MatchedBy::Text => "text",
        }
    }
}

/// One way to look for an element, in the order they are tried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Attempt {
    /// A CSS selector for `querySelectorAll` (test id, source anchor).
    Selector(MatchedBy, String),
    /// A CSS path from the capture, resolved through open shadow roots.
    CssPath(String),
    /// An element with this tag (any tag when empty) whose trimmed text is exactly this.
    Text { tag: String, text: String },
}

impl Attempt {
    pub fn matched_by(&self) -> MatchedBy {
        match self {
            Attempt::Selector(by, _) => *by,
            Attempt::CssPath(_) => MatchedBy::CssPath,
            Attempt::Text { .. } => MatchedBy::Text,
        }
    }
}

/// The attempts for one element: test id, then source anchor, then CSS path, then text.
pub fn attempts(element: &Element) -> Vec<Attempt> {
    let mut attempts = Vec::new();
    if let Some(id) = element.test_id.as_deref().filter(|s| !s.is_empty()) {
        attempts.push(Attempt::Selector(MatchedBy::TestId, attribute_selector("data-testid", id)));
    }
    if let Some(anchor) = element.source_anchor.as_deref().filter(|s| !s.is_empty()) {
        attempts
            .push(Attempt::Selector(MatchedBy::SourceAnchor, attribute_selector("data-fabric-src", anchor)));
    }
    if let Some(path) = element.css_path.as_deref().filter(|s| !s.is_empty()) {
        attempts.push(Attempt::CssPath(path.to_owned()));
    }
    if let Some(text) = element.text.as_deref().map(str::trim).filter(|s| !s.is_empty()) {
        attempts.push(Attempt::Text { tag: element.tag.clone(), text: text.to_owned() });
    }
    attempts
}

/// `[name="value"]` with the value escaped for a CSS string.
pub fn attribute_selector(name: &str, value: &str) -> String {
    let mut escaped = String::with_capacity(value.len());
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                escaped.push('\\');
                escaped.push(c);
            }
            '\n' => escaped.push_str("\\a "),
            c if c.is_control() => escaped.push_str(&format!("\\{:x} ", c as u32)),
            c => escaped.push(c),
        }
    }
    format!("[{name}=\"{escaped}\"]")
}

/// What the page found for one element.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Located {
    /// How the element is named in the item (its test id, anchor, path or tag).
    pub label: String,
    pub matched_by: Option<MatchedBy>,
    /// How many page elements are outlined for it.
    pub count: u32,
}

impl Located {
    /// "orders.export: found by test id", or "… not on this build".
    pub fn sentence(&self) -> String {
        match self.matched_by {
            Some(by) if self.count > 1 => {
                format!("{}: found by {} ({} matches)", self.label, by.label(), self.count)
            }
            Some(by) => format!("{}: found by {}", self.label, by.label()),
            None => format!("{}: not on this build", self.label),
        }
    }
}

/// An element whose path enters a frame the page it was looked for in may not read (of
/// another origin): the worker looks for it in that frame, with the rest of its path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct InFrame {
    /// The element's place in the list that was looked for.
    pub index: usize,
    /// Where the frame sits among the tab's frames (`frame_dom::frame_path`).
    pub frame_path: Vec<u32>,
    /// The element's path inside that frame.
    pub css_path: String,
}

/// What one page answers "Show on page": what it found for each element, and the
/// elements it hands on to frames of other origins.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Shown {
    pub located: Vec<Located>,
    pub in_frames: Vec<InFrame>,
}

/// A frame's path among the tab's frames and the elements to look for in it, each with
/// its place in the list the person asked about.
pub type FrameElements = (Vec<u32>, Vec<(usize, Element)>);

/// The elements to look for in each frame, each with its place in `elements` (the list
/// `handed_on` refers to, whose places are `places`' indices): one list per frame, so a
/// frame outlines all of its elements at once.
pub fn by_frame(handed_on: &[InFrame], elements: &[Element], places: &[usize]) -> Vec<FrameElements> {
    let mut frames: Vec<FrameElements> = Vec::new();
    for handed in handed_on {
        let Some(element) = elements.get(handed.index) else { continue };
        let element = Element { css_path: Some(handed.css_path.clone()), ..element.clone() };
        let place = places.get(handed.index).copied().unwrap_or(handed.index);
        match frames.iter_mut().find(|(path, _)| *path == handed.frame_path) {
            Some((_, list)) => list.push((place, element)),
            None => frames.push((handed.frame_path.clone(), vec![(place, element)])),
        }
    }
    frames
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tries_test_id_then_anchor_then_path_then_text() {
        let element = Element {
            test_id: Some("orders.export".into()),
            source_anchor: Some("demo/index.html:42".into()),
            css_path: Some("#toolbar > button".into()),
            text: Some("  Export CSV ".into()),
            tag: "button".into(),
            ..Element::default()
        };
        assert_eq!(
            attempts(&element),
            vec![
                Attempt::Selector(MatchedBy::TestId, "[data-testid=\"orders.export\"]".into()),
                Attempt::Selector(MatchedBy::SourceAnchor, "[data-fabric-src=\"demo/index.html:42\"]".into()),
                Attempt::CssPath("#toolbar > button".into()),
                Attempt::Text { tag: "button".into(), text: "Export CSV".into() },
            ]
        );
        assert_eq!(attempts(&Element::default()), vec![]);
    }

    #[test]
    fn elements_handed_on_to_frames_are_grouped_by_frame_and_keep_their_places() {
        let elements: Vec<Element> = ["a", "b", "c"]
            .map(|tag| Element {
                tag: tag.into(),
                css_path: Some(format!("#f |> {tag}")),
                ..Element::default()
            })
            .into();
        let handed = |index, frame: u32, path: &str| InFrame {
            index,
            frame_path: vec![0, frame],
            css_path: path.into(),
        };
        let frames =
            by_frame(&[handed(0, 7, "a"), handed(2, 9, "c"), handed(1, 7, "#g |> b")], &elements, &[4, 5, 6]);
        let summary: Vec<String> = frames
            .into_iter()
            .map(|(path, list)| {
                let list: Vec<String> =
                    list.into_iter().map(|(at, e)| format!("{at}:{}", e.css_path.unwrap())).collect();
                format!("{path:?} {}", list.join(", "))
            })
            .collect();
        assert_eq!(summary, ["[0, 7] 4:a, 5:#g |> b", "[0, 9] 6:c"]);
        assert_eq!(by_frame(&[handed(3, 7, "x")], &elements, &[0, 1, 2]), vec![], "no such element");
    }

    #[test]
    fn attribute_values_are_escaped() {
        assert_eq!(attribute_selector("data-testid", "a\"b\\c"), "[data-testid=\"a\\\"b\\\\c\"]");
        assert_eq!(attribute_selector("data-testid", "x\ny"), "[data-testid=\"x\\a y\"]");
    }

    #[test]
    fn results_read_as_sentences() {
        let found = Located { label: "orders.export".into(), matched_by: Some(MatchedBy::TestId), count: 1 };
        assert_eq!(found.sentence(), "orders.export: found by test id");
        let many = Located { label: "row".into(), matched_by: Some(MatchedBy::Text), count: 3 };
        assert_eq!(many.sentence(), "row: found by text (3 matches)");
        let gone = Located { label: "orders.old".into(), matched_by: None, count: 0 };
        assert_eq!(gone.sentence(), "orders.old: not on this build");
        assert_eq!(serde_json::to_value(&found).unwrap()["matchedBy"], "testId");
    }
}

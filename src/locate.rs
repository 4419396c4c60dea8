//! "Show on page": finding an item's circled elements again in the live tab. The order
//! of the attempts and what the panel says about them are pure; the DOM side lives in
//! `content::show` (compiled into the content module).

use redline_protocol::Element;
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

/// The name the panel uses for an element.
pub fn element_label(element: &Element) -> String {
    element
        .test_id
        .clone()
        .or_else(|| element.source_anchor.clone())
        .or_else(|| element.name.clone().filter(|n| !n.trim().is_empty()))
        .or_else(|| element.css_path.clone())
        .unwrap_or_else(|| if element.tag.is_empty() { "element".to_owned() } else { element.tag.clone() })
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
        assert_eq!(element_label(&element), "orders.export");
        assert_eq!(element_label(&Element { tag: "div".into(), ..Element::default() }), "div");
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

//! The text of a circled element and the sources of its accessible name, read from the
//! DOM without what a person does not read (scripts, style sheets) or what Redline masks
//! (`[data-private]` and the like). Runs in the content module, inside the page.

use wasm_bindgen::JsCast;
use web_sys::Element;

use super::element::{self, NameSources};
use super::screenshot::{SENSITIVE_FIELDS, is_masked};

/// What is not text a person reads: scripts, style sheets and what they hold.
const NOT_TEXT: &str = "script, style, noscript, template";

/// `el`'s text content without the text of what Redline masks in screenshots
/// (`screenshot::SENSITIVE_FIELDS`: `[data-private]` and the like, which may hold
/// secrets) and of scripts and style sheets; `None` for an element that is itself masked
/// or inside a `[data-private]` one.
pub fn readable_text(el: &Element) -> Option<String> {
    let left_out = [SENSITIVE_FIELDS, ", ", NOT_TEXT].concat();
    if is_masked(el) || el.closest("[data-private]").ok().flatten().is_some() {
        return None;
    }
    // Most elements hold nothing to leave out: one call then, not one per node.
    if el.query_selector(&left_out).ok().flatten().is_none() {
        return el.text_content();
    }
    let mut text = element::TextGatherer::default();
    gather_text(el, &left_out, &mut text);
    Some(text.into_text())
}

fn gather_text(node: &web_sys::Node, left_out: &str, text: &mut element::TextGatherer) {
    let mut child = node.first_child();
    while let Some(c) = child {
        if text.is_full() {
            return;
        }
        match c.node_type() {
            web_sys::Node::TEXT_NODE | web_sys::Node::CDATA_SECTION_NODE => {
                text.push(&c.node_value().unwrap_or_default());
            }
            web_sys::Node::ELEMENT_NODE
                if !c.unchecked_ref::<Element>().matches(left_out).unwrap_or(true) =>
            {
                gather_text(&c, left_out, text);
            }
            _ => {}
        }
        child = c.next_sibling();
    }
}

pub fn name_sources(el: &Element, content: Option<String>) -> NameSources {
    let document = el.owner_document();
    let text_of_id = |id: &str| readable_text(&document.as_ref()?.get_element_by_id(id)?);
    let labelled_by = el
        .get_attribute("aria-labelledby")
        .map(|ids| ids.split_whitespace().filter_map(text_of_id).collect::<Vec<_>>().join(" "));
    let label = el
        .get_attribute("id")
        .and_then(|id| {
            let selector = format!("label[for=\"{}\"]", id.replace('\\', "\\\\").replace('"', "\\\""));
            document.as_ref()?.query_selector(&selector).ok().flatten()
        })
        .or_else(|| el.closest("label").ok().flatten())
        .and_then(|label| readable_text(&label));
    NameSources {
        labelled_by,
        aria_label: el.get_attribute("aria-label"),
        label,
        alt: el.get_attribute("alt"),
        title: el.get_attribute("title"),
        placeholder: el.get_attribute("placeholder"),
        content,
    }
}

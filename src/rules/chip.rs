//! What the composer's chips and the panel's item view call a circled element, so the
//! filer can tell two links apart and see that the right element was caught: its test
//! id, else its role and accessible name (shortened), else its tag and text; on hover,
//! the source file it was anchored to (and its CSS path).

use redline_protocol::Element;

/// The most characters of a name or text a label shows before "…".
const NAME_MAX_CHARS: usize = 32;

/// An element's label and the tooltip that goes with it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChipName {
    pub label: String,
    pub tooltip: String,
}

impl ChipName {
    pub fn of(element: &Element) -> ChipName {
        ChipName { label: label(element), tooltip: tooltip(element) }
    }
}

fn label(element: &Element) -> String {
    if let Some(test_id) = non_blank(element.test_id.as_deref()) {
        return shorten(test_id);
    }
    let tag = if element.tag.is_empty() { "element".to_owned() } else { format!("<{}>", element.tag) };
    let kind = non_blank(element.role.as_deref()).map_or(tag, str::to_owned);
    match non_blank(element.name.as_deref()).or_else(|| non_blank(element.text.as_deref())) {
        Some(name) => format!("{kind} “{}”", shorten(name)),
        None => kind,
    }
}

fn tooltip(element: &Element) -> String {
    [element.source_anchor.as_deref(), element.css_path.as_deref()]
        .into_iter()
        .flatten()
        .filter(|s| !s.trim().is_empty())
        .collect::<Vec<_>>()
        .join("\n")
}

fn non_blank(text: Option<&str>) -> Option<&str> {
    text.map(str::trim).filter(|t| !t.is_empty())
}

/// `text` on one line, cut to [`NAME_MAX_CHARS`] characters with "…".
fn shorten(text: &str) -> String {
    let one_line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= NAME_MAX_CHARS {
        return one_line;
    }
    let cut: String = one_line.chars().take(NAME_MAX_CHARS - 1).collect();
    format!("{}…", cut.trim_end())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn link(name: &str) -> Element {
        Element { tag: "a".into(), role: Some("link".into()), name: Some(name.into()), ..Element::default() }
    }

    #[test]
    fn two_download_links_read_differently() {
        let mac = ChipName::of(&link("Download for macOS"));
        let windows = ChipName::of(&link("Download for Windows"));
        assert_eq!(mac.label, "link “Download for macOS”");
        assert_eq!(windows.label, "link “Download for Windows”");
    }

    #[test]
    fn a_test_id_wins() {
        let element = Element { test_id: Some("orders.export".into()), ..link("Export") };
        assert_eq!(ChipName::of(&element).label, "orders.export");
    }

    #[test]
    fn without_role_or_name_the_tag_and_text_name_it() {
        let element =
            Element { tag: "div".into(), text: Some("  Total:\n 42 € ".into()), ..Element::default() };
        assert_eq!(ChipName::of(&element).label, "<div> “Total: 42 €”");
        assert_eq!(ChipName::of(&Element { tag: "svg".into(), ..Element::default() }).label, "<svg>");
        assert_eq!(ChipName::of(&Element::default()).label, "element");
    }

    #[test]
    fn long_names_are_shortened_on_a_character_boundary() {
        let label = ChipName::of(&link(&"é".repeat(100))).label;
        assert_eq!(label, format!("link “{}…”", "é".repeat(NAME_MAX_CHARS - 1)));
    }

    #[test]
    fn the_tooltip_gives_the_source_file_then_the_path() {
        let element = Element {
            source_anchor: Some("src/routes/app.orders.tsx:42".into()),
            css_path: Some("#toolbar > a".into()),
            ..link("Download")
        };
        assert_eq!(ChipName::of(&element).tooltip, "src/routes/app.orders.tsx:42\n#toolbar > a");
        assert_eq!(ChipName::of(&link("Download")).tooltip, "");
    }
}

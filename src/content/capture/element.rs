//! What Redline records about one circled element, from what the page says about it.
//! Pure: the page adapter reads the attributes, these rules turn them into the
//! protocol's `Element` fields.

/// The longest `text` recorded, in characters.
pub const MAX_TEXT_CHARS: usize = 200;

/// Whitespace collapsed and trimmed, at most [`MAX_TEXT_CHARS`] characters (an ellipsis
/// marks a cut); `None` when nothing is left.
pub fn clean_text(raw: &str) -> Option<String> {
    let mut text = String::with_capacity(raw.len().min(MAX_TEXT_CHARS * 4));
    let mut count = 0;
    for word in raw.split_whitespace() {
        if count > 0 {
            text.push(' ');
            count += 1;
        }
        for c in word.chars() {
            if count == MAX_TEXT_CHARS {
                text.pop();
                text.push('…');
                return Some(text);
            }
            text.push(c);
            count += 1;
        }
    }
    (!text.is_empty()).then_some(text)
}

/// An element's text gathered node by node, up to what [`clean_text`] keeps: once it
/// holds more than [`MAX_TEXT_CHARS`] characters other than whitespace, more would be
/// cut anyway.
#[derive(Debug, Default)]
pub struct TextGatherer {
    text: String,
    words: usize,
}

impl TextGatherer {
    pub fn push(&mut self, text: &str) {
        self.text.push_str(text);
        self.words += text.chars().filter(|c| !c.is_whitespace()).count();
    }

    pub fn is_full(&self) -> bool {
        self.words > MAX_TEXT_CHARS
    }

    pub fn into_text(self) -> String {
        self.text
    }
}

/// A component root's test id is a kebab-case name (`order-table`); a control's is an
/// i18n message key (`orders.new.submit`).
pub fn is_component_test_id(test_id: &str) -> bool {
    !test_id.is_empty()
        && test_id.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-')
        && test_id.starts_with(|c: char| c.is_ascii_lowercase())
}

/// The ARIA role an element has without a `role` attribute, for the tags people circle.
pub fn implicit_role(tag: &str, input_type: Option<&str>, has_href: bool) -> Option<&'static str> {
    Some(match tag {
        "a" | "area" if has_href => "link",
        "button" | "summary" => "button",
        "input" => match input_type.unwrap_or("text").to_ascii_lowercase().as_str() {
            "button" | "submit" | "reset" | "image" => "button",
            "checkbox" => "checkbox",
            "radio" => "radio",
            "range" => "slider",
            "number" => "spinbutton",
            "search" => "searchbox",
            "hidden" => return None,
            _ => "textbox",
        },
        "textarea" => "textbox",
        "select" => "combobox",
        "img" => "img",
        "h1" | "h2" | "h3" | "h4" | "h5" | "h6" => "heading",
        "nav" => "navigation",
        "main" => "main",
        "header" => "banner",
        "footer" => "contentinfo",
        "aside" => "complementary",
        "form" => "form",
        "table" => "table",
        "tr" => "row",
        "td" => "cell",
        "th" => "columnheader",
        "ul" | "ol" => "list",
        "li" => "listitem",
        "dialog" => "dialog",
        "section" => "region",
        _ => return None,
    })
}

/// Roles whose accessible name comes from their content.
fn named_by_content(role: Option<&str>) -> bool {
    matches!(
        role,
        Some(
            "button"
                | "link"
                | "heading"
                | "cell"
                | "columnheader"
                | "row"
                | "listitem"
                | "tab"
                | "menuitem"
                | "option"
        )
    )
}

/// What the page says that can name an element, in the order the accessible-name
/// computation consults it (a practical subset of it).
#[derive(Debug, Default, Clone)]
pub struct NameSources {
    pub labelled_by: Option<String>,
    pub aria_label: Option<String>,
    pub label: Option<String>,
    pub alt: Option<String>,
    pub title: Option<String>,
    pub placeholder: Option<String>,
    pub content: Option<String>,
}

/// The element's accessible name, or `None` when it has none.
pub fn accessible_name(sources: &NameSources, role: Option<&str>) -> Option<String> {
    let content = named_by_content(role).then_some(&sources.content).into_iter().flatten();
    [&sources.labelled_by, &sources.aria_label, &sources.label, &sources.alt]
        .into_iter()
        .flatten()
        .chain(content)
        .chain([&sources.title, &sources.placeholder].into_iter().flatten())
        .find_map(|s| clean_text(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn text_is_collapsed_trimmed_and_capped() {
        assert_eq!(clean_text("  Create\n\t  order  ").as_deref(), Some("Create order"));
        assert_eq!(clean_text(" \n "), None);
        let long = "é".repeat(300);
        let cut = clean_text(&long).unwrap();
        assert_eq!(cut.chars().count(), MAX_TEXT_CHARS);
        assert!(cut.ends_with('…'));
        assert_eq!(clean_text(&"a".repeat(MAX_TEXT_CHARS)).unwrap().chars().count(), MAX_TEXT_CHARS);
    }

    #[test]
    fn text_is_gathered_until_clean_text_would_cut_it() {
        let mut text = TextGatherer::default();
        text.push("  Create\n  ");
        text.push("order ");
        assert!(!text.is_full());
        text.push(&"é".repeat(MAX_TEXT_CHARS - 11));
        assert!(!text.is_full(), "spaces do not count");
        text.push("x");
        assert!(text.is_full());
        let gathered = text.into_text();
        assert_eq!(clean_text(&gathered), clean_text(&(gathered.clone() + " and much more")));
    }

    #[test]
    fn component_ids_are_kebab_case_names() {
        assert!(is_component_test_id("order-table"));
        assert!(is_component_test_id("app-header2"));
        assert!(!is_component_test_id("orders.new.submit"));
        assert!(!is_component_test_id("OrderTable"));
        assert!(!is_component_test_id("-x"));
        assert!(!is_component_test_id(""));
    }

    #[test]
    fn roles_follow_the_tag() {
        assert_eq!(implicit_role("a", None, true), Some("link"));
        assert_eq!(implicit_role("a", None, false), None);
        assert_eq!(implicit_role("input", Some("SUBMIT"), false), Some("button"));
        assert_eq!(implicit_role("input", None, false), Some("textbox"));
        assert_eq!(implicit_role("input", Some("hidden"), false), None);
        assert_eq!(implicit_role("div", None, false), None);
    }

    #[test]
    fn names_prefer_labels_over_content() {
        let sources = NameSources {
            aria_label: Some("Account".into()),
            content: Some("JD".into()),
            ..NameSources::default()
        };
        assert_eq!(accessible_name(&sources, Some("button")).as_deref(), Some("Account"));
        let button = NameSources { content: Some("  Create order ".into()), ..NameSources::default() };
        assert_eq!(accessible_name(&button, Some("button")).as_deref(), Some("Create order"));
        assert_eq!(accessible_name(&button, None), None, "a div is not named by its text");
        let field = NameSources {
            label: Some("Customer".into()),
            placeholder: Some("Name".into()),
            ..NameSources::default()
        };
        assert_eq!(accessible_name(&field, Some("textbox")).as_deref(), Some("Customer"));
    }
}

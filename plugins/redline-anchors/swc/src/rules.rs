//! The rules every transform applies (`../src/rules.cjs` is the same for Babel, Vue and
//! Svelte): which elements are controls, how a component's test id is spelled, and
//! which of an element's keys names it. The shared fixtures hold the two to the same
//! output.

use std::collections::BTreeSet;

const INTERACTIVE_TAGS: [&str; 5] = ["button", "a", "input", "select", "textarea"];
const INTERACTIVE_ROLES: [&str; 19] = [
    "button",
    "checkbox",
    "combobox",
    "gridcell",
    "link",
    "listbox",
    "menuitem",
    "menuitemcheckbox",
    "menuitemradio",
    "option",
    "radio",
    "scrollbar",
    "searchbox",
    "slider",
    "spinbutton",
    "switch",
    "tab",
    "textbox",
    "treeitem",
];

/// Where a control without text says what it is; a translation call there names it.
pub const LABEL_ATTRIBUTES: [&str; 4] = ["aria-label", "title", "placeholder", "alt"];

/// A control: an interactive tag, an interactive `role`, or an element with an event handler.
pub fn is_interactive(tag: &str, role: Option<&str>, has_handler: bool) -> bool {
    INTERACTIVE_TAGS.contains(&tag) || has_handler || role.is_some_and(|r| INTERACTIVE_ROLES.contains(&r))
}

/// A component's name starts with a capital (ASCII, as `/^[A-Z]/`).
pub fn is_component_name(name: &str) -> bool {
    name.starts_with(|c: char| c.is_ascii_uppercase())
}

/// `OrderToolbar` → `order-toolbar`, `HTMLView` → `html-view`: the JS rule's three
/// replacements (a hyphen before a capital that ends a word, before the last capital of
/// an acronym followed by a word, non-alphanumerics to one hyphen), then lower case.
pub fn kebab_case(name: &str) -> String {
    let chars: Vec<char> = name.chars().collect();
    let mut words = Vec::with_capacity(chars.len() + 4);
    for (i, &c) in chars.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| chars[j]);
        if c.is_ascii_uppercase() && before.is_some_and(|b| b.is_ascii_lowercase() || b.is_ascii_digit()) {
            words.push('-');
        }
        words.push(c);
    }
    let mut split = Vec::with_capacity(words.len() + 4);
    for (i, &c) in words.iter().enumerate() {
        let before = i.checked_sub(1).map(|j| words[j]);
        let after = words.get(i + 1);
        if c.is_ascii_uppercase()
            && before.is_some_and(|b| b.is_ascii_uppercase())
            && after.is_some_and(char::is_ascii_lowercase)
        {
            split.push('-');
        }
        split.push(c);
    }
    let mut kebab = String::with_capacity(split.len());
    for c in split {
        if c.is_ascii_alphanumeric() {
            kebab.push(c.to_ascii_lowercase());
        } else if !kebab.ends_with('-') {
            kebab.push('-');
        }
    }
    kebab.trim_matches('-').to_owned()
}

/// The test id an element's text gives: the one key among its children's keys (two
/// different translations name nothing), else the first key among its label attributes'.
pub fn translation_key(child_keys: Vec<String>, label_keys: Vec<String>) -> Option<String> {
    let keys: BTreeSet<String> = child_keys.into_iter().filter(|k| !k.is_empty()).collect();
    match keys.len() {
        0 => label_keys.into_iter().find(|k| !k.is_empty()),
        1 => keys.into_iter().next(),
        _ => None,
    }
}

/// What an element has written by hand.
pub struct Written {
    pub anchor: bool,
    pub test_id: bool,
}

/// What an element gets.
#[derive(Debug, PartialEq)]
pub struct Stamps {
    pub anchor: bool,
    pub test_id: Option<String>,
}

/// An anchor if it is a control or a component's root and has none written; a test id
/// (its text's i18n key, else on a root the component's name in kebab-case) if none is
/// written.
pub fn stamps(interactive: bool, component: Option<&str>, written: Written, key: Option<String>) -> Stamps {
    Stamps {
        anchor: (interactive || component.is_some()) && !written.anchor,
        test_id: if written.test_id { None } else { key.or_else(|| component.map(kebab_case)) },
    }
}

//! The computed styles of circled elements (`redline_protocol::styles`): each element's
//! compact set is read with its parent's and with that of a default element of its tag,
//! and only sorted into changed and unchanged here, so the page sends values, never the
//! parent's or the default's. The default elements sit in a hidden box inside our
//! overlay's closed shadow root, where the page's style sheets do not apply and its
//! scripts and mutation observers do not reach.

use redline_protocol::ElementStyles;
use redline_protocol::styles::STYLE_PROPERTIES;
use web_sys::{Document, Element, Node, Window};

use super::dom::parent_element;

/// Reads the styles of one capture's elements; removes its hidden box when dropped.
pub struct StyleReader {
    window: Window,
    document: Document,
    defaults_box: Element,
}

impl StyleReader {
    /// A reader whose default elements live in `root`, a shadow root of ours.
    pub fn new(window: &Window, document: &Document, root: &Node) -> Option<StyleReader> {
        let defaults_box = document.create_element("div").ok()?;
        defaults_box.set_attribute("style", "display: none").ok()?;
        root.append_child(&defaults_box).ok()?;
        Some(StyleReader { window: window.clone(), document: document.clone(), defaults_box })
    }

    /// The compact sets of `elements`, each sorted against its parent and its tag's
    /// default. The page is read first and the default elements made after, all at once:
    /// a default element added to the document makes the next read of a used size lay
    /// the page out again, which once per element cost milliseconds on a large page.
    /// Where `elements[i]` is `None` (no element of this page), so are its styles.
    pub fn read(&self, elements: &[Option<Element>]) -> Vec<Option<ElementStyles>> {
        // Plain loops: each `collect` of its own iterator type is code of its own, and
        // this code is loaded into every page.
        let mut page = Vec::with_capacity(elements.len());
        for element in elements {
            let own = element.as_ref().and_then(|e| values(&self.window, e));
            let parent = element.as_ref().and_then(parent_element).and_then(|p| values(&self.window, &p));
            page.push((own, parent));
        }
        let mut probes = Vec::with_capacity(elements.len());
        for (element, (own, _)) in elements.iter().zip(&page) {
            let font_size = own.as_ref().and_then(|own| own.get(FONT_SIZE));
            let tag = element.as_ref().map(Element::local_name);
            probes.push(font_size.zip(tag).and_then(|(size, tag)| self.default_element(&tag, size)));
        }
        let mut styles = Vec::with_capacity(elements.len());
        for (probe, (own, parent)) in probes.iter().zip(&page) {
            let default = probe.as_ref().and_then(|p| values(&self.window, p));
            styles.push(match (own, default) {
                (Some(own), Some(default)) => Some(ElementStyles::classify(own, parent.as_deref(), &default)),
                _ => None,
            });
        }
        for probe in probes.iter().flatten() {
            probe.remove();
        }
        styles
    }

    /// A default element of `tag` at `font_size` (em-sized margins follow it), in the
    /// hidden box.
    fn default_element(&self, tag: &str, font_size: &str) -> Option<Element> {
        // Custom elements would run the page's constructors, and frames and plug-ins
        // would load: all of them default like a `span` for this set.
        let plain = tag.contains('-') || matches!(tag, "iframe" | "frame" | "object" | "embed");
        let probe = self.document.create_element(if plain { "span" } else { tag }).ok()?;
        probe.set_attribute("style", &["font-size: ", font_size].concat()).ok()?;
        self.defaults_box.append_child(&probe).ok()?;
        Some(probe)
    }
}

/// Where `font-size` is in [`STYLE_PROPERTIES`].
const FONT_SIZE: usize = 1;

impl Drop for StyleReader {
    fn drop(&mut self) {
        self.defaults_box.remove();
    }
}

/// The compact set's computed values of `element`, in [`STYLE_PROPERTIES`]' order, the
/// URLs of `url(…)` values kept as a page's address is (`redline_protocol::kept_url`:
/// signed image links carry their tokens in the query string).
fn values(window: &Window, element: &Element) -> Option<Vec<String>> {
    let style = window.get_computed_style(element).ok()??;
    let value = |name: &str| {
        let value = style.get_property_value(name).unwrap_or_default();
        match redline_protocol::with_kept_urls(&value) {
            std::borrow::Cow::Owned(kept) => kept,
            std::borrow::Cow::Borrowed(_) => value,
        }
    };
    Some(STYLE_PROPERTIES.iter().map(|(name, _)| value(name)).collect())
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;
    use web_sys::{ShadowRootInit, ShadowRootMode};

    wasm_bindgen_test_configure!(run_in_browser);

    fn value<'a>(half: &'a redline_protocol::StyleValues, name: &str) -> Option<&'a str> {
        half.get(name)
    }

    #[wasm_bindgen_test]
    fn an_element_is_compared_with_its_parent_and_its_tags_default() {
        let window = web_sys::window().unwrap();
        let document = window.document().unwrap();
        let body = document.body().unwrap();
        let page = document.create_element("div").unwrap();
        page.set_inner_html(
            r#"<div style="font-size: 20px; color: rgb(0, 0, 255)"><p style="color: rgb(255, 0, 0); padding: 4px; background-image: url(&quot;https://u:pw@x.example/a.png?sig=1&quot;)">x</p><span>y</span></div>"#,
        );
        body.append_child(&page).unwrap();
        let host = document.create_element("div").unwrap();
        body.append_child(&host).unwrap();
        let root = host.attach_shadow(&ShadowRootInit::new(ShadowRootMode::Closed)).unwrap();
        let reader = StyleReader::new(&window, &document, &root).unwrap();

        let elements = [page.query_selector("p").unwrap(), page.query_selector("span").unwrap()];
        let [p, span] = <[_; 2]>::try_from(reader.read(&elements)).unwrap().map(Option::unwrap);
        assert_eq!(value(&p.changed, "color"), Some("rgb(255, 0, 0)"));
        assert_eq!(value(&p.changed, "padding"), Some("4px"));
        assert_eq!(
            value(&p.changed, "background-image"),
            Some(r#"url("https://x.example/a.png")"#),
            "no credentials or query string"
        );
        assert_eq!(value(&p.unchanged, "font-size"), Some("20px"), "inherited from the parent");
        assert_eq!(value(&p.unchanged, "margin"), Some("20px 0px"), "a paragraph's default, 1em of its font");
        assert_eq!(value(&p.unchanged, "display"), Some("block"));
        assert_eq!(p.changed.len() + p.unchanged.len(), STYLE_PROPERTIES.len());
        assert_eq!(STYLE_PROPERTIES[FONT_SIZE].0, "font-size");

        assert_eq!(value(&span.unchanged, "color"), Some("rgb(0, 0, 255)"));
        assert_eq!(value(&span.unchanged, "width"), Some("auto"), "an inline box has no width of its own");

        drop(reader);
        assert_eq!(root.child_nodes().length(), 0, "the default elements' box is gone");
        page.remove();
        host.remove();
    }
}

//! CSS paths in the page: [`selector::Dom`] for `web_sys::Element`. Counting is the
//! browser's own `querySelectorAll`, on the element's root (document or shadow root) or
//! on an ancestor for scoped steps, so what we verify is what `resolve_css_path` will see.
//! Roots are told apart by node type, not `instanceof`: the elements of a frame belong to
//! that frame's window, whose `Document` and `ShadowRoot` are not this window's.

use js_sys::Map;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Document, Element, Node, NodeList, Performance, ShadowRoot, ShadowRootMode};

use super::selector::{self, Dom, NodeFacts, Scope, SelectorCache};

/// The CSS path of `element`, unique in its document, with one per-root path per open
/// shadow boundary joined by ` >>> `. `None` for an element that is not in a document
/// or sits inside a closed shadow root.
pub fn css_path(element: &Element) -> Option<String> {
    CssPaths::new().css_path(element)
}

/// The element `path` names in `document`, following ` |> ` into the frames this page
/// may read and ` >>> ` into open shadow roots (`redline_protocol::element_path`).
pub fn resolve_css_path(document: &Document, path: &str) -> Option<Element> {
    let (document, last) = path_document(document, path).ok()?;
    resolve_in_document(&document, last)
}

/// Why a path could not be followed to the document it ends in.
pub enum PathStop {
    /// It names no element here (the page changed, or another page).
    Missing,
    /// It enters `frame`, a frame this page may not read; `rest` is the path inside it.
    ClosedFrame { frame: Element, rest: String },
}

/// The document of the frame `path` ends in, and the part of `path` inside it.
pub fn path_document<'a>(document: &Document, path: &'a str) -> Result<(Document, &'a str), PathStop> {
    let parts = redline_protocol::element_path::frame_parts(path);
    let (last, frames) = parts.split_last().ok_or(PathStop::Missing)?;
    let mut document = document.clone();
    for (i, part) in frames.iter().enumerate() {
        let frame = resolve_in_document(&document, part).ok_or(PathStop::Missing)?;
        document = match super::frame_dom::frame_document(&frame) {
            Some(inside) => inside,
            None => {
                let rest = redline_protocol::element_path::inside_frames(path, i + 1).to_owned();
                return Err(PathStop::ClosedFrame { frame, rest });
            }
        };
    }
    Ok((document, *last))
}

/// The element a path without frames names in `document`.
fn resolve_in_document(document: &Document, path: &str) -> Option<Element> {
    let segments = selector::shadow_parts(path);
    let (last, hosts) = segments.split_last()?;
    let mut root: Option<ShadowRoot> = None;
    for segment in hosts {
        let host = query_selector(document, root.as_ref(), segment)?;
        root = Some(host.shadow_root()?);
    }
    query_selector(document, root.as_ref(), last)
}

fn query_selector(document: &Document, root: Option<&ShadowRoot>, selector: &str) -> Option<Element> {
    match root {
        Some(root) => root.query_selector(selector).ok()?,
        None => document.query_selector(selector).ok()?,
    }
}

/// CSS paths for the elements of one capture: ancestors and whole-tree counts are
/// worked out once for all of them. Build one per capture; the page may change after.
pub struct CssPaths {
    dom: PageDom,
    cache: SelectorCache<Element>,
}

impl Default for CssPaths {
    fn default() -> Self {
        Self::new()
    }
}

impl CssPaths {
    pub fn new() -> CssPaths {
        let performance = web_sys::window().and_then(|w| w.performance());
        CssPaths { dom: PageDom { keys: Map::new(), performance }, cache: SelectorCache::new() }
    }

    /// See [`css_path`].
    pub fn css_path(&mut self, element: &Element) -> Option<String> {
        if !reachable_from_document(element) {
            return None;
        }
        self.cache.css_path(&mut self.dom, element)
    }
}

/// Whether the element is in a document, through open shadow roots only.
fn reachable_from_document(element: &Element) -> bool {
    let mut root = element.get_root_node();
    loop {
        if root.node_type() == Node::DOCUMENT_NODE {
            return true;
        }
        let Some(shadow) = as_shadow_root(&root) else { return false };
        if shadow.mode() != ShadowRootMode::Open {
            return false;
        }
        root = shadow.host().get_root_node();
    }
}

/// The page's DOM for one batch. Keys come from a JS `Map` keyed by the element itself,
/// which needs nothing written into the page.
struct PageDom {
    keys: Map,
    performance: Option<Performance>,
}

impl Dom for PageDom {
    type Node = Element;

    fn key(&mut self, node: &Element) -> usize {
        if let Some(key) = self.keys.get(node).as_f64() {
            return key as usize;
        }
        let key = self.keys.size();
        self.keys.set(node, &JsValue::from(key));
        key as usize
    }

    fn parent(&self, node: &Element) -> Option<Element> {
        node.parent_element()
    }

    fn tree_host(&self, node: &Element) -> Option<Element> {
        as_shadow_root(&node.get_root_node()).map(ShadowRoot::host)
    }

    fn facts(&self, node: &Element) -> NodeFacts {
        let attributes = node.attributes();
        let attributes = (0..attributes.length())
            .filter_map(|i| attributes.item(i))
            .filter_map(|attribute| {
                let name = attribute.name();
                selector::may_use_attribute(&name).then(|| (name, attribute.value()))
            })
            .collect();
        NodeFacts { tag: node.local_name(), attributes }
    }

    fn index_of_type(&self, node: &Element) -> u32 {
        let tag = node.local_name();
        let mut index = 1;
        let mut sibling = node.previous_element_sibling();
        while let Some(s) = sibling {
            if s.local_name() == tag {
                index += 1;
            }
            sibling = s.previous_element_sibling();
        }
        index
    }

    fn count(&mut self, scope: Scope<'_, Element>, selector: &str) -> usize {
        let matches = match scope {
            Scope::Subtree(ancestor) => ancestor.query_selector_all(selector).ok(),
            Scope::Children(parent) => parent.query_selector_all(&format!(":scope > {selector}")).ok(),
            Scope::ShadowTop(node) => query_root(node, &format!(":host > {selector}")),
        };
        matches.map_or(0, |list| list.length() as usize)
    }

    fn count_in_root(&mut self, node: &Element, selector: &str) -> (usize, bool) {
        let Some(matches) = query_root(node, selector) else { return (0, false) };
        let first_is_node = matches.get(0).is_some_and(|first| first == *node.unchecked_ref::<Node>());
        (matches.length() as usize, first_is_node)
    }

    fn matches_only(&mut self, node: &Element, selector: &str) -> bool {
        self.count_in_root(node, selector) == (1, true)
    }

    fn now_ms(&self) -> f64 {
        self.performance.as_ref().map_or_else(js_sys::Date::now, Performance::now)
    }
}

/// `querySelectorAll` on the document or shadow root holding `node`.
fn query_root(node: &Element, selector: &str) -> Option<NodeList> {
    let root = node.get_root_node();
    if root.node_type() == Node::DOCUMENT_NODE {
        return root.unchecked_ref::<Document>().query_selector_all(selector).ok();
    }
    as_shadow_root(&root)?.query_selector_all(selector).ok()
}

/// The node as a shadow root, if it is one (of any window): a document fragment with a host.
fn as_shadow_root(node: &Node) -> Option<&ShadowRoot> {
    let is_shadow = node.node_type() == Node::DOCUMENT_FRAGMENT_NODE
        && js_sys::Reflect::has(node, &JsValue::from_str("host")).unwrap_or(false);
    is_shadow.then(|| node.unchecked_ref::<ShadowRoot>())
}

/// For `cargo xtask bench` only (feature `selector-bench`, never in `extension/`): the
/// paths of `elements`, all in one batch as a capture does, or each on its own.
#[cfg(feature = "selector-bench")]
#[wasm_bindgen::prelude::wasm_bindgen(js_name = benchCssPaths)]
pub fn bench_css_paths(elements: js_sys::Array, one_batch: bool) -> js_sys::Array {
    let mut batch = CssPaths::new();
    elements
        .iter()
        .map(|element| {
            let element: Element = element.unchecked_into();
            let path = if one_batch { batch.css_path(&element) } else { css_path(&element) };
            path.map_or(JsValue::NULL, JsValue::from)
        })
        .collect()
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;
    use web_sys::{DomParser, ShadowRootInit, SupportedType};

    wasm_bindgen_test_configure!(run_in_browser);

    /// The pages @medv/finder is measured on (`tests/fixtures/pages/`).
    const FIXTURE_PAGES: [(&str, &str); 3] = [
        ("github.com", include_str!("../../../tests/fixtures/pages/github.com.html")),
        ("stripe.com", include_str!("../../../tests/fixtures/pages/stripe.com.html")),
        ("tailwindcss", include_str!("../../../tests/fixtures/pages/tailwindcss.html")),
    ];

    fn document() -> Document {
        web_sys::window().unwrap().document().unwrap()
    }

    /// Parsed, not loaded: no script runs and nothing is fetched.
    fn parse(html: &str) -> Document {
        DomParser::new().unwrap().parse_from_string(html, SupportedType::TextHtml).unwrap()
    }

    fn all_elements(document: &Document) -> Vec<Element> {
        let list = document.query_selector_all("*").unwrap();
        (0..list.length()).map(|i| list.get(i).unwrap().unchecked_into()).collect()
    }

    fn assert_finds_only(document: &Document, path: &str, element: &Element) {
        let matches = document.query_selector_all(path).unwrap();
        assert_eq!(matches.length(), 1, "{path} matches {} elements", matches.length());
        assert_eq!(
            matches.get(0).unwrap(),
            *element.unchecked_ref::<Node>(),
            "{path} matches another element"
        );
    }

    #[wasm_bindgen_test]
    fn every_element_of_the_fixture_pages_gets_a_path_to_exactly_itself() {
        for (page, html) in FIXTURE_PAGES {
            let document = parse(html);
            let elements = all_elements(&document);
            assert!(elements.len() > 400, "{page}: {} elements", elements.len());
            let mut batch = CssPaths::new();
            for element in &elements {
                let alone = css_path(element).unwrap_or_else(|| panic!("{page}: no path"));
                assert_finds_only(&document, &alone, element);
                let batched = batch.css_path(element).unwrap_or_else(|| panic!("{page}: no path"));
                assert_finds_only(&document, &batched, element);
            }
        }
    }

    #[wasm_bindgen_test]
    fn test_ids_shared_or_odd_still_give_paths_to_exactly_one_element() {
        // Repeated test ids, and ids with quotes, spaces and brackets in them.
        let document = parse(
            r#"<main data-testid="order-list">
                 <div data-testid="order-row"><button data-testid="orders.open">Open</button></div>
                 <div data-testid="order-row"><button data-testid="orders.open">Open</button></div>
                 <p data-testid='say "hi"'>a</p><p data-testid="a b">b</p><p data-testid="x]y">c</p>
                 <span data-test="t1" data-cy="c1">d</span><span data-cy="c1">e</span>
               </main>"#,
        );
        let mut batch = CssPaths::new();
        for element in all_elements(&document) {
            let path = batch.css_path(&element).expect("a path");
            assert_finds_only(&document, &path, &element);
        }
    }

    fn attach_open_shadow(host: &Element, html: &str) -> ShadowRoot {
        let root = host.attach_shadow(&ShadowRootInit::new(ShadowRootMode::Open)).unwrap();
        root.set_inner_html(html);
        root
    }

    #[wasm_bindgen_test]
    fn paths_cross_nested_open_shadow_roots() {
        let document = document();
        let outer = document.create_element("section").unwrap();
        document.body().unwrap().append_child(&outer).unwrap();
        let outer_root = attach_open_shadow(&outer, "<div><div class=\"slot\"></div></div><div></div>");
        let inner_host = outer_root.query_selector(".slot").unwrap().unwrap();
        let inner_root = attach_open_shadow(
            &inner_host,
            "<button class=\"save\">1</button><button class=\"save\">2</button>",
        );
        let second =
            inner_root.query_selector_all("button").unwrap().get(1).unwrap().unchecked_into::<Element>();

        let path = css_path(&second).unwrap();
        assert_eq!(selector::shadow_parts(&path).len(), 3, "{path}");
        assert_eq!(resolve_css_path(&document, &path), Some(second.clone()), "{path}");
        let host_path = css_path(&inner_host).unwrap();
        assert_eq!(resolve_css_path(&document, &host_path), Some(inner_host), "{host_path}");
        outer.remove();
    }

    #[wasm_bindgen_test]
    fn elements_in_closed_shadow_roots_or_out_of_the_document_get_no_path() {
        let document = document();
        let host = document.create_element("div").unwrap();
        document.body().unwrap().append_child(&host).unwrap();
        let closed = host.attach_shadow(&ShadowRootInit::new(ShadowRootMode::Closed)).unwrap();
        closed.set_inner_html("<p>hidden</p>");
        let hidden = closed.query_selector("p").unwrap().unwrap();
        assert_eq!(css_path(&hidden), None);
        assert_eq!(css_path(&document.create_element("p").unwrap()), None);
        host.remove();
    }

    #[wasm_bindgen_test]
    fn odd_ids_and_classes_are_escaped_like_css_escape() {
        let odd = ["a:b", "1abc", "x y", "ünï✓", "-2x", "a.b#c", "[x]", "-", "\u{1}a", "日本語"];
        for token in odd {
            let mut ours = String::new();
            selector::escape_ident(token, &mut ours);
            assert_eq!(ours, web_sys::css::escape(token), "{token:?}");
        }
        let document = document();
        let container = document.create_element("div").unwrap();
        document.body().unwrap().append_child(&container).unwrap();
        for token in odd {
            for attribute in ["id", "class"] {
                let element = document.create_element("span").unwrap();
                element.set_attribute(attribute, token).unwrap();
                container.append_child(&element).unwrap();
                let path = css_path(&element).unwrap();
                assert_finds_only(&document, &path, &element);
            }
        }
        let by_id = container.query_selector_all("span").unwrap().get(0).unwrap();
        assert_eq!(css_path(by_id.unchecked_ref()).as_deref(), Some("#a\\:b"));
        container.remove();
    }
}

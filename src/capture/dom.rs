//! The page adapter for capture: finds the elements under the lasso and reads what the
//! protocol records about each. Runs in the content module, inside the page.

use js_sys::Map;
use redline_protocol::{Element as Circled, Point, Rect};
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Document, Element, Window};

use super::element::{self, NameSources};
use super::geometry::Polygon;
use super::pick::{self, Candidate};
use super::selector_dom::CssPaths;

/// About how many points of the page to sample inside the lasso. The walk finds what
/// lies within the lasso's bounds; the samples catch content drawn outside its parent's
/// box (positioned or overflowing), so a coarse grid suffices.
const SAMPLE_BUDGET: usize = 64;

/// The circled elements of `document` under `polygon`, skipping `ignore` (our overlay).
pub fn circled_elements(document: &Document, polygon: &Polygon, ignore: Option<&Element>) -> Vec<Circled> {
    let Some(bounds) = polygon.bounds() else { return Vec::new() };
    let mut found = Found::default();
    if let Some(body) = document.body() {
        found.walk(&body, None, bounds, ignore);
    }
    // Our overlay covers the page; made transparent to hit testing while sampling, the
    // topmost page element at each point is what the person saw there.
    let overlay_style = ignore.and_then(|e| e.dyn_ref::<web_sys::HtmlElement>()).map(|e| e.style());
    if let Some(style) = &overlay_style {
        let _ = style.set_property("pointer-events", "none");
    }
    for sample in polygon.grid_inside(polygon.grid_step(SAMPLE_BUDGET)) {
        if let Some(hit) = document.element_from_point(sample.x as f32, sample.y as f32) {
            found.add_with_ancestors(hit, ignore);
        }
    }
    if let Some(style) = &overlay_style {
        let _ = style.remove_property("pointer-events");
    }
    let window = web_sys::window();
    // One cache for the whole capture: circled elements share ancestors and their paths.
    let mut paths = CssPaths::new();
    pick::circled(polygon, &found.candidates)
        .into_iter()
        .map(|i| &found.elements[i])
        .filter(|e| window.as_ref().is_none_or(|w| is_visible(w, e)))
        .map(|e| describe(e, &mut paths))
        .collect()
}

/// The candidates found so far, with the page elements they stand for.
#[derive(Default)]
struct Found {
    elements: Vec<Element>,
    candidates: Vec<Candidate>,
    index: Option<Map>,
}

impl Found {
    fn index(&mut self) -> &Map {
        self.index.get_or_insert_with(Map::new)
    }

    fn position(&mut self, element: &Element) -> Option<usize> {
        self.index().get(element).as_f64().map(|i| i as usize)
    }

    fn push(&mut self, element: Element, rect: Rect, parent: Option<usize>) -> usize {
        let i = self.elements.len();
        self.index().set(&element, &JsValue::from(i as f64));
        let has_test_id = element.has_attribute("data-testid");
        self.candidates.push(Candidate { rect, parent, has_test_id });
        self.elements.push(element);
        i
    }

    /// Depth-first through the elements whose box meets `bounds` (and into open shadow
    /// roots); subtrees outside are not entered, which keeps big pages cheap. Content
    /// that overflows its parent is caught by the point samples instead.
    fn walk(&mut self, element: &Element, parent: Option<usize>, bounds: Rect, ignore: Option<&Element>) {
        if ignore.is_some_and(|i| i == element) {
            return;
        }
        let rect = rect_of(element);
        if !intersects(rect, bounds) {
            return;
        }
        let me = Some(self.push(element.clone(), rect, parent));
        let mut child = element.first_element_child();
        while let Some(c) = child {
            self.walk(&c, me, bounds, ignore);
            child = c.next_element_sibling();
        }
        if let Some(shadow) = element.shadow_root() {
            let mut child = shadow.first_element_child();
            while let Some(c) = child {
                self.walk(&c, me, bounds, ignore);
                child = c.next_element_sibling();
            }
        }
    }

    /// A sampled element the walk missed, with the ancestors that lead to it.
    fn add_with_ancestors(&mut self, element: Element, ignore: Option<&Element>) {
        if self.position(&element).is_some() || ignore.is_some_and(|i| *i == element) {
            return;
        }
        let mut chain = vec![element];
        let mut parent_index = None;
        while let Some(parent) = parent_element(chain.last().expect("never empty")) {
            if let Some(i) = self.position(&parent) {
                parent_index = Some(i);
                break;
            }
            chain.push(parent);
        }
        for element in chain.into_iter().rev() {
            let rect = rect_of(&element);
            parent_index = Some(self.push(element, rect, parent_index));
        }
    }
}

/// The parent element, stepping out of a shadow root to its host.
fn parent_element(element: &Element) -> Option<Element> {
    element.parent_element().or_else(|| {
        let root = element.get_root_node();
        root.dyn_into::<web_sys::ShadowRoot>().ok().map(|shadow| shadow.host())
    })
}

fn rect_of(element: &Element) -> Rect {
    let r = element.get_bounding_client_rect();
    Rect { x: r.x(), y: r.y(), width: r.width(), height: r.height() }
}

fn intersects(a: Rect, b: Rect) -> bool {
    a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
}

fn is_visible(window: &Window, element: &Element) -> bool {
    let Ok(Some(style)) = window.get_computed_style(element) else { return true };
    let value = |name: &str| style.get_property_value(name).unwrap_or_default();
    value("visibility") != "hidden" && value("display") != "none" && value("opacity") != "0"
}

/// The nearest value of `attribute` on `element` or its ancestors (across shadow roots).
fn nearest_attribute(element: &Element, attribute: &str, accept: impl Fn(&str) -> bool) -> Option<String> {
    let mut current = Some(element.clone());
    while let Some(e) = current {
        if let Some(value) = e.get_attribute(attribute).filter(|v| accept(v)) {
            return Some(value);
        }
        current = parent_element(&e);
    }
    None
}

/// Everything the protocol's Element records about one circled element.
fn describe(el: &Element, paths: &mut CssPaths) -> Circled {
    let tag = el.local_name();
    let role = el.get_attribute("role").or_else(|| {
        element::implicit_role(&tag, el.get_attribute("type").as_deref(), el.has_attribute("href"))
            .map(str::to_owned)
    });
    let content = el.text_content();
    let name = element::accessible_name(&name_sources(el, content.clone()), role.as_deref());
    Circled {
        test_id: nearest_attribute(el, "data-testid", |_| true),
        source_anchor: nearest_attribute(el, "data-fabric-src", |_| true),
        css_path: paths.css_path(el),
        text: content.as_deref().and_then(element::clean_text),
        rect: Some(rect_of(el)),
        component_test_id: parent_element(el)
            .and_then(|p| nearest_attribute(&p, "data-testid", element::is_component_test_id)),
        role,
        name,
        tag,
    }
}

fn name_sources(el: &Element, content: Option<String>) -> NameSources {
    let document = el.owner_document();
    let text_of_id = |id: &str| document.as_ref()?.get_element_by_id(id)?.text_content();
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
        .and_then(|label| label.text_content());
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

/// Where the filer was and what they saw: the context filed with each item.
pub struct PageContext {
    pub route: String,
    pub locale: Option<String>,
    pub viewport: redline_protocol::Viewport,
    pub device_pixel_ratio: f64,
    pub scroll: Point,
    pub git_sha: Option<String>,
}

impl PageContext {
    pub fn read(window: &Window, document: &Document) -> PageContext {
        let number = |v: Result<JsValue, JsValue>| v.ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
        let location = window.location();
        let route =
            format!("{}{}", location.pathname().unwrap_or_default(), location.search().unwrap_or_default());
        let lang =
            document.document_element().and_then(|e| e.get_attribute("lang")).filter(|l| !l.is_empty());
        let locale = lang.or_else(|| window.navigator().language());
        let git_sha = document
            .query_selector("meta[name=\"fabric-git-sha\"]")
            .ok()
            .flatten()
            .and_then(|m| m.get_attribute("content"))
            .map(|s| s.trim().to_owned())
            .filter(|s| !s.is_empty());
        PageContext {
            route,
            locale,
            viewport: redline_protocol::Viewport {
                width: number(window.inner_width()),
                height: number(window.inner_height()),
            },
            device_pixel_ratio: window.device_pixel_ratio(),
            scroll: Point { x: window.scroll_x().unwrap_or(0.0), y: window.scroll_y().unwrap_or(0.0) },
            git_sha,
        }
    }
}

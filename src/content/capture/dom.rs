//! The page adapter for capture: finds the elements under the lasso and reads what the
//! protocol records about each. Runs in the content module, inside the page.

use js_sys::Map;
use redline_protocol::{Element as Circled, Point, Rect};
use wasm_bindgen::prelude::wasm_bindgen;
use wasm_bindgen::{JsCast, JsValue};
use web_sys::{Document, Element, Performance, Window};

use super::element;
use super::frame_dom::{self, frame_document};
use super::frames::FrameView;
use super::geometry::{Polygon, SAMPLE_BUDGET};
use super::pick::{self, Candidate};
use super::selector_dom::CssPaths;
use super::stroke::{self, Stroke, Task, Tree};
use super::text_dom::{name_sources, readable_text};

/// Only the first elements of a capture carry styles: an agent reads a few, and a
/// circle around a whole page would otherwise send (and spend release time on) hundreds.
pub const STYLED_ELEMENTS_MAX: usize = 20;

#[wasm_bindgen]
extern "C" {
    /// An element, for `checkVisibility(options)`, which web-sys does not bind yet.
    #[wasm_bindgen(extends = Element)]
    type Visible;
    #[wasm_bindgen(method, js_name = checkVisibility)]
    fn check_visibility(this: &Visible, options: &JsValue) -> bool;
}

/// The page's elements as the walk sees them, without our overlay, and into the frames
/// this page may read.
struct PageTree {
    ignore: Option<Element>,
    frames: Frames,
}

/// The frames of this page's origin a capture has entered, each with where it sits, so
/// that boxes inside them are filed in the top viewport and their paths name the frame.
struct Frames {
    top: Document,
    entered: Vec<Entered>,
}

struct Entered {
    document: Document,
    frame: Element,
    view: FrameView,
}

impl Frames {
    fn of(&self, element: &Element) -> Option<&Entered> {
        if self.entered.is_empty() {
            return None;
        }
        let document = element.owner_document()?;
        self.entered.iter().find(|e| e.document == document)
    }

    /// The document inside `frame` and where it sits, when `frame` is a frame this page
    /// may read; from then on its elements are part of the capture.
    fn enter(&mut self, frame: &Element) -> Option<(Document, FrameView)> {
        let document = frame_document(frame)?;
        if let Some(known) = self.entered.iter().find(|e| e.document == document) {
            return Some((document, known.view));
        }
        let view = frame_dom::view_inside(frame, &self.top);
        self.entered.push(Entered { document: document.clone(), frame: frame.clone(), view });
        Some((document, view))
    }

    /// The element's box in the top viewport.
    fn rect(&self, element: &Element) -> Rect {
        let rect = rect_of(element);
        self.of(element).map_or(rect, |frame| frame.view.to_top(rect))
    }

    /// The parent element, stepping out of shadow roots and out of an entered frame to
    /// its frame element.
    fn parent(&self, element: &Element) -> Option<Element> {
        parent_element(element).or_else(|| {
            let frame = self.of(element)?;
            (frame.document.document_element().as_ref() == Some(element)).then(|| frame.frame.clone())
        })
    }

    /// The element's CSS path from the top document, through the frames it is in.
    fn css_path(&self, element: &Element, paths: &mut CssPaths) -> Option<String> {
        let own = paths.css_path(element)?;
        match self.of(element) {
            Some(frame) => {
                let frame = frame.frame.clone();
                Some(redline_protocol::element_path::in_frame(&self.css_path(&frame, paths)?, &own))
            }
            None => Some(own),
        }
    }

    /// The topmost element at `point` (top viewport) in `document`, and inside the frames
    /// of this page's origin it finds there.
    fn hit(&mut self, document: &Document, point: Point) -> Option<Element> {
        let mut hit = document.element_from_point(point.x as f32, point.y as f32)?;
        self.hit_inside(&mut hit, point);
        Some(hit)
    }

    /// From a frame element hit at `point`, the topmost element inside it (repeatedly).
    fn hit_inside(&mut self, hit: &mut Element, point: Point) {
        while let Some((document, view)) = self.enter(hit) {
            let at = view.into_frame(point);
            match document.element_from_point(at.x as f32, at.y as f32) {
                Some(inner) => *hit = inner,
                None => return,
            }
        }
    }
}

impl PageTree {
    fn push_children(&self, first: Option<Element>, into: &mut Vec<Element>) {
        let mut child = first;
        while let Some(c) = child {
            child = c.next_element_sibling();
            if self.ignore.as_ref() != Some(&c) {
                into.push(c);
            }
        }
    }
}

impl Tree for PageTree {
    type Node = Element;

    fn rect(&mut self, node: &Element) -> Rect {
        self.frames.rect(node)
    }

    fn children(&mut self, node: &Element) -> Vec<Element> {
        let mut children = Vec::new();
        if let Some((document, _)) = self.frames.enter(node) {
            children.extend(document.document_element());
            return children;
        }
        self.push_children(node.first_element_child(), &mut children);
        if let Some(shadow) = node.shadow_root() {
            self.push_children(shadow.first_element_child(), &mut children);
        }
        children
    }

    fn has_test_id(&mut self, node: &Element) -> bool {
        node.has_attribute("data-testid")
    }
}

/// One capture, begun when the stroke begins: the walk over the stroke's bounds so far,
/// the descriptions of what the stroke so far circles, and the CSS paths' cache. Valid
/// while the page neither scrolls, resizes nor changes; the caller starts a new one
/// when it does. A CSS path made during the stroke was verified unique when it was made,
/// and our paths use only tags, attributes and positions among siblings, so with the
/// DOM unchanged since it is still unique at release.
pub struct Capture {
    document: Document,
    stroke: Stroke<Element>,
    /// What the page showed at the grid points sampled during the stroke, with the box
    /// it had then (a few hundred at most, so a list).
    samples: Vec<Sample>,
    tree: PageTree,
    /// By the walk's entry.
    descriptions: Vec<Option<Circled>>,
    paths: CssPaths,
}

impl Capture {
    /// A capture of `document`'s body, skipping `ignore` (our overlay).
    pub fn new(document: &Document, ignore: Option<&Element>) -> Option<Capture> {
        Some(Capture {
            document: document.clone(),
            stroke: Stroke::new(document.body()?.unchecked_into()),
            samples: Vec::new(),
            tree: PageTree {
                ignore: ignore.cloned(),
                frames: Frames { top: document.clone(), entered: Vec::new() },
            },
            descriptions: Vec::new(),
            paths: CssPaths::new(),
        })
    }

    /// More of the stroke, viewport CSS px.
    pub fn extend(&mut self, points: &[Point]) {
        self.stroke.extend(points);
    }

    /// Works on the stroke so far until `now()` reaches `deadline`, one step at a time (a
    /// box, a sample, the coverage rule's guess or one element's description: a few
    /// milliseconds at most, so a slice may run over by that). `true` while work is left.
    pub fn work_until(&mut self, now: impl Fn() -> f64, deadline: f64) -> bool {
        loop {
            let task = self.stroke.next_task();
            if task == Task::Idle {
                return false;
            }
            if now() >= deadline {
                return true;
            }
            match task {
                Task::Walk => {
                    self.stroke.walk.step(&mut self.tree);
                }
                Task::Describe(entry) => {
                    let element = self.stroke.walk.node(entry).clone();
                    let description = describe(&element, &mut self.paths, &self.tree.frames);
                    if self.descriptions.len() <= entry {
                        self.descriptions.resize_with(entry + 1, || None);
                    }
                    self.descriptions[entry] = Some(description);
                    self.stroke.described();
                }
                Task::Sample(point) => {
                    let hit = topmost_below(&self.document, point, self.tree.ignore.as_ref());
                    let hit = hit.map(|mut element| {
                        self.tree.frames.hit_inside(&mut element, point);
                        let rect = self.tree.frames.rect(&element);
                        (element, rect)
                    });
                    self.samples.push((stroke::grid_key(point), hit));
                    self.stroke.sampled();
                }
                Task::Pick => self.stroke.pick(),
                Task::Idle => unreachable!("an idle stroke returned above"),
            }
        }
    }

    /// The circled elements under `polygon`: the rest of the walk, the point samples,
    /// the coverage rule, and a description of each circled element not described yet.
    /// Each element's box is read again now, so what is filed is the page at release;
    /// `Err` when a box moved since the stroke read it (the layout changed without a
    /// DOM change, an animation say), and the capture must start over.
    fn finish(mut self, polygon: &Polygon) -> Result<Circle, Stale> {
        let Some(bounds) = polygon.bounds() else { return Ok(Circle::default()) };
        let mut phases = Phases::start();
        let walk = &mut self.stroke.walk;
        walk.finish(&mut self.tree, bounds);
        let mut found = Found::default();
        for (entry, candidate) in walk.candidates(bounds) {
            found.elements.push(walk.node(entry).clone());
            found.entries.push(Some(entry));
            found.candidates.push(candidate);
        }
        phases.end("redline:capture:walk");
        found.sample(&self.document, polygon, &mut self.tree, &self.samples)?;
        phases.end("redline:capture:samples");
        found.mark_opaque(bounds);
        found.mark_page_roots(&self.tree.frames);
        let picked = pick::circled(polygon, &found.candidates);
        phases.end("redline:capture:pick");
        let visible = js_sys::Object::new();
        for option in ["opacityProperty", "visibilityProperty"] {
            let _ = js_sys::Reflect::set(&visible, &option.into(), &JsValue::TRUE);
        }
        let mut circled = Circle {
            elements: Vec::with_capacity(picked.len()),
            closed_frames: Vec::new(),
            styled: Vec::new(),
        };
        for i in picked {
            let element = &found.elements[i];
            // One style lookup in the browser, with no strings brought back, and it also
            // sees a hidden or transparent ancestor.
            if !element.unchecked_ref::<Visible>().check_visibility(&visible) {
                continue;
            }
            let rect = self.tree.frames.rect(element);
            if rect != found.candidates[i].rect {
                return Err(Stale);
            }
            let described = found.entries[i].and_then(|e| self.descriptions.get_mut(e)?.take());
            let described =
                described.unwrap_or_else(|| describe(element, &mut self.paths, &self.tree.frames));
            if circled.elements.len() < STYLED_ELEMENTS_MAX {
                circled.styled.push(element.clone());
            }
            if frame_dom::is_closed_frame(element) {
                let view = frame_dom::view_inside(element, &self.document);
                circled.closed_frames.push(ClosedFrame {
                    index: circled.elements.len(),
                    frame: element.clone(),
                    view,
                });
            }
            // The box as it is at release, whenever the rest was read.
            circled.elements.push(Circled { rect: Some(rect), ..described });
        }
        phases.end("redline:capture:describe");
        Ok(circled)
    }
}

/// What one release circled in a document: the elements, and which of them are frames
/// of an origin this page may not read (captured as the frame element, for now).
#[derive(Default)]
pub struct Circle {
    pub elements: Vec<Circled>,
    pub closed_frames: Vec<ClosedFrame>,
    /// The first few circled elements themselves (`elements[i]` is `styled[i]`), whose
    /// computed styles are read once the capture has been handed over
    /// ([`STYLED_ELEMENTS_MAX`], read by `styles_dom`).
    pub styled: Vec<Element>,
}

/// A circled frame this page may not read inside: `elements[index]`, and where it sits.
pub struct ClosedFrame {
    pub index: usize,
    pub frame: Element,
    pub view: FrameView,
}

/// A grid point sampled during the stroke (as whole pixels), and the element found there
/// with its box then.
type Sample = ((i32, i32), Option<(Element, Rect)>);

/// The page's boxes moved under a capture's cache.
struct Stale;

/// The circled elements of `document` under `polygon`, skipping `ignore` (our overlay),
/// with whatever `prepared` already read during the stroke.
pub fn circled_elements(
    document: &Document,
    polygon: &Polygon,
    ignore: Option<&Element>,
    prepared: Option<Capture>,
) -> Circle {
    let fresh = || Capture::new(document, ignore);
    let Some(capture) = prepared.or_else(fresh) else { return Circle::default() };
    match capture.finish(polygon) {
        Ok(circled) => circled,
        // Read again at once: every box of a fresh capture is read in this one task, so
        // it cannot be stale.
        Err(Stale) => fresh().and_then(|c| c.finish(polygon).ok()).unwrap_or_default(),
    }
}

#[wasm_bindgen]
extern "C" {
    /// The page's performance timeline, for `measure(name, {start, end})`, which web-sys
    /// binds only behind its unstable APIs.
    #[wasm_bindgen(extends = Performance)]
    type Timeline;
    #[wasm_bindgen(method, catch, js_name = measure)]
    fn measure_between(this: &Timeline, name: &str, options: &JsValue) -> Result<JsValue, JsValue>;
}

/// Records a User Timing measure from `start` to `end` (`performance.now()` times),
/// with `detail` as an object of numbers when there is any.
pub fn measure(performance: &Performance, name: &str, start: f64, end: f64, detail: &[(&str, f64)]) {
    let options = js_sys::Object::new();
    let _ = js_sys::Reflect::set(&options, &"start".into(), &start.into());
    let _ = js_sys::Reflect::set(&options, &"end".into(), &end.into());
    if !detail.is_empty() {
        let object = js_sys::Object::new();
        for (key, value) in detail {
            let _ = js_sys::Reflect::set(&object, &(*key).into(), &(*value).into());
        }
        let _ = js_sys::Reflect::set(&options, &"detail".into(), &object);
    }
    let _ = performance.unchecked_ref::<Timeline>().measure_between(name, &options);
}

/// The phases of a release as User Timing measures (`redline:capture:walk`, …), so
/// where its time goes can be seen on any page (tests/bench/capture.mjs reports them).
struct Phases {
    performance: Option<Performance>,
    started: f64,
}

impl Phases {
    fn start() -> Phases {
        let performance = web_sys::window().and_then(|w| w.performance());
        let started = performance.as_ref().map_or(0.0, Performance::now);
        Phases { performance, started }
    }

    fn end(&mut self, name: &str) {
        if let Some(performance) = &self.performance {
            let now = performance.now();
            measure(performance, name, self.started, now, &[]);
            self.started = now;
        }
    }
}

/// The candidates found for one release: the walk's, then those the samples add.
#[derive(Default)]
struct Found {
    elements: Vec<Element>,
    candidates: Vec<Candidate>,
    /// The walk's entry behind each candidate; `None` for those the samples found.
    entries: Vec<Option<usize>>,
    /// Element → candidate index, built when the samples first need it.
    index: Option<Map>,
}

impl Found {
    fn index(&mut self) -> &Map {
        self.index.get_or_insert_with(|| {
            let index = Map::new();
            for (i, element) in self.elements.iter().enumerate() {
                index.set(element, &JsValue::from(i as f64));
            }
            index
        })
    }

    fn position(&mut self, element: &Element) -> Option<usize> {
        self.index().get(element).as_f64().map(|i| i as usize)
    }

    fn push(&mut self, element: Element, rect: Rect, parent: Option<usize>) -> usize {
        let i = self.elements.len();
        self.index().set(&element, &JsValue::from(i as f64));
        let has_test_id = element.has_attribute("data-testid");
        self.candidates.push(Candidate { rect, parent, has_test_id, opaque: false, page_root: false });
        self.entries.push(None);
        self.elements.push(element);
        i
    }

    /// The topmost page element at points inside the outline, with the ancestors that
    /// lead to it: content drawn outside its parent's box, which the walk does not enter.
    /// Points the stroke sampled already are taken from `sampled`, unless the element
    /// found there has moved since (`Err`: the capture must start over).
    fn sample(
        &mut self,
        document: &Document,
        polygon: &Polygon,
        tree: &mut PageTree,
        sampled: &[Sample],
    ) -> Result<(), Stale> {
        let ignore = tree.ignore.as_ref();
        // Our overlay covers the page; made transparent to hit testing while sampling,
        // the topmost page element at each point is what the person saw there. (During
        // the stroke the overlay must stay as it is, so the stroke asks for the list of
        // elements at a point instead, which costs more per point.)
        let overlay_style = ignore.and_then(|e| e.dyn_ref::<web_sys::HtmlElement>()).map(|e| e.style());
        let mut transparent = false;
        for point in polygon.grid_inside(polygon.grid_step(SAMPLE_BUDGET)) {
            let key = stroke::grid_key(point);
            let hit = match sampled.iter().find(|(at, _)| *at == key) {
                Some((_, Some((hit, rect)))) if tree.frames.rect(hit) != *rect => {
                    make_opaque(overlay_style.as_ref().filter(|_| transparent));
                    return Err(Stale);
                }
                Some((_, hit)) => hit.as_ref().map(|(hit, _)| hit.clone()),
                None => {
                    if let Some(style) = overlay_style.as_ref().filter(|_| !transparent) {
                        let _ = style.set_property("pointer-events", "none");
                        transparent = true;
                    }
                    tree.frames.hit(document, point)
                }
            };
            if let Some(hit) = hit {
                self.add_with_ancestors(hit, ignore, &tree.frames);
            }
        }
        make_opaque(overlay_style.as_ref().filter(|_| transparent));
        Ok(())
    }

    /// A sampled element the walk missed, with the ancestors that lead to it.
    fn add_with_ancestors(&mut self, element: Element, ignore: Option<&Element>, frames: &Frames) {
        if self.position(&element).is_some() || ignore.is_some_and(|i| *i == element) {
            return;
        }
        let mut chain = vec![element];
        let mut parent_index = None;
        while let Some(parent) = frames.parent(chain.last().expect("never empty")) {
            if let Some(i) = self.position(&parent) {
                parent_index = Some(i);
                break;
            }
            chain.push(parent);
        }
        for element in chain.into_iter().rev() {
            let rect = frames.rect(&element);
            parent_index = Some(self.push(element, rect, parent_index));
        }
    }
}

impl Found {
    /// Marks the candidates Redline cannot read inside (see `pick::circled`). Only those
    /// whose box holds the middle of `bounds` can count for it, so only they are asked.
    fn mark_opaque(&mut self, bounds: Rect) {
        let (x, y) = (bounds.x + bounds.width / 2.0, bounds.y + bounds.height / 2.0);
        for (candidate, element) in self.candidates.iter_mut().zip(&self.elements) {
            let r = candidate.rect;
            if x >= r.x && x <= r.x + r.width && y >= r.y && y <= r.y + r.height {
                candidate.opaque = frame_dom::is_closed_frame(element)
                    || element.shadow_root().is_none()
                        && crate::browser::chrome::has_closed_shadow_root(element);
            }
        }
    }
}

impl Found {
    /// Marks the `html` and `body` of the page and of the frames entered (see
    /// `pick::circled`): looked up by element, as there are at most a few of them.
    fn mark_page_roots(&mut self, frames: &Frames) {
        let documents = std::iter::once(&frames.top).chain(frames.entered.iter().map(|e| &e.document));
        for document in documents {
            let body = document.body().map(JsCast::unchecked_into::<Element>);
            for root in document.document_element().into_iter().chain(body) {
                if let Some(i) = self.position(&root) {
                    self.candidates[i].page_root = true;
                }
            }
        }
    }
}

/// Our overlay takes the pointer again (`style` is its style, if it was made transparent).
fn make_opaque(style: Option<&web_sys::CssStyleDeclaration>) {
    if let Some(style) = style {
        let _ = style.remove_property("pointer-events");
    }
}

/// The topmost page element at `point` under our overlay (`ignore`), which stays where it
/// is: the stroke is still being drawn on it.
fn topmost_below(document: &Document, point: Point, ignore: Option<&Element>) -> Option<Element> {
    document
        .elements_from_point(point.x as f32, point.y as f32)
        .iter()
        .map(JsCast::unchecked_into::<Element>)
        .find(|e| ignore != Some(e))
}

/// The parent element, stepping out of a shadow root to its host. (A shadow root is told
/// by its node type: one inside a frame is not this window's `ShadowRoot`.)
pub(super) fn parent_element(element: &Element) -> Option<Element> {
    element.parent_element().or_else(|| {
        let root = element.get_root_node();
        (root.node_type() == web_sys::Node::DOCUMENT_FRAGMENT_NODE)
            .then(|| root.unchecked_into::<web_sys::ShadowRoot>().host())
    })
}

fn rect_of(element: &Element) -> Rect {
    let r = element.get_bounding_client_rect();
    Rect { x: r.x(), y: r.y(), width: r.width(), height: r.height() }
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

/// Everything the protocol's Element records about one circled element but its box,
/// which the caller reads at release.
fn describe(el: &Element, paths: &mut CssPaths, frames: &Frames) -> Circled {
    let tag = el.local_name();
    let role = el.get_attribute("role").or_else(|| {
        element::implicit_role(&tag, el.get_attribute("type").as_deref(), el.has_attribute("href"))
            .map(str::to_owned)
    });
    let content = readable_text(el);
    let name = element::accessible_name(&name_sources(el, content.clone()), role.as_deref());
    Circled {
        test_id: nearest_attribute(el, "data-testid", |_| true),
        source_anchor: nearest_attribute(el, "data-fabric-src", |_| true),
        css_path: frames.css_path(el, paths),
        text: content.as_deref().and_then(element::clean_text),
        rect: None,
        component_test_id: parent_element(el)
            .and_then(|p| nearest_attribute(&p, "data-testid", element::is_component_test_id)),
        role,
        name,
        tag,
        styles: None,
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
        let location = window.location();
        // The path only: query strings and fragments often carry tokens and addresses.
        let route = location.pathname().unwrap_or_default();
        let lang =
            document.document_element().and_then(|e| e.get_attribute("lang")).filter(|l| !l.is_empty());
        let locale = lang.or_else(|| window.navigator().language());
        let git_sha = git_sha(document);
        PageContext {
            route,
            locale,
            viewport: viewport(window),
            device_pixel_ratio: window.device_pixel_ratio(),
            scroll: Point { x: window.scroll_x().unwrap_or(0.0), y: window.scroll_y().unwrap_or(0.0) },
            git_sha,
        }
    }
}

/// The build the page states (`<meta name="fabric-git-sha">`), trimmed; `None` when it
/// states none.
pub fn git_sha(document: &Document) -> Option<String> {
    document
        .query_selector("meta[name=\"fabric-git-sha\"]")
        .ok()
        .flatten()
        .and_then(|m| m.get_attribute("content"))
        .map(|s| s.trim().to_owned())
        .filter(|s| !s.is_empty())
}

/// The window's viewport, CSS px.
pub fn viewport(window: &Window) -> redline_protocol::Viewport {
    let number = |v: Result<JsValue, JsValue>| v.ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    redline_protocol::Viewport { width: number(window.inner_width()), height: number(window.inner_height()) }
}

#[cfg(all(test, target_arch = "wasm32"))]
mod tests {
    use super::*;
    use wasm_bindgen_test::*;

    wasm_bindgen_test_configure!(run_in_browser);

    fn document() -> Document {
        web_sys::window().unwrap().document().unwrap()
    }

    /// A grid of 60 cards of 100×60 px (10 a row) first in the page, each with a test
    /// id, a title and a button. In the flow, so the walk reaches it.
    fn cards() -> Element {
        let document = document();
        let grid = document.create_element("section").unwrap();
        grid.set_attribute("style", &grid_style(0)).unwrap();
        let mut html = String::new();
        for i in 0..60 {
            html.push_str(&format!(
                "<article data-testid=\"card-{i}\" style=\"width: 100px; height: 60px; margin: 0\">\
                 <h3 style=\"margin: 0; font-size: 10px\">Card {i}</h3><button>Open</button></article>"
            ));
        }
        grid.set_inner_html(&html);
        document.body().unwrap().prepend_with_node_1(&grid).unwrap();
        grid
    }

    /// The grid's style, `top` px down the page.
    fn grid_style(top: u32) -> String {
        format!("margin: {top}px 0 0; width: 1000px; display: flex; flex-wrap: wrap;")
    }

    /// An ellipse around (`cx`, `cy`), as a hand would draw it.
    fn ellipse(cx: f64, cy: f64, rx: f64, ry: f64) -> Vec<Point> {
        (0..48)
            .map(|i| {
                let a = i as f64 / 48.0 * std::f64::consts::TAU;
                Point { x: cx + rx * a.cos(), y: cy + ry * a.sin() }
            })
            .collect()
    }

    /// The capture read a quarter of the stroke at a time, as the stroke arrives.
    fn prepared(stroke: &[Point]) -> Capture {
        let mut capture = Capture::new(&document(), None).unwrap();
        for part in stroke.chunks(12) {
            capture.extend(part);
            capture.work_until(|| 0.0, f64::INFINITY);
        }
        capture
    }

    fn test_ids(circled: &[Circled]) -> Vec<String> {
        circled.iter().map(|c| c.test_id.clone().unwrap_or_default()).collect()
    }

    #[wasm_bindgen_test]
    fn text_and_names_leave_out_private_fields_scripts_and_styles() {
        let document = document();
        let page = document.create_element("section").unwrap();
        page.set_inner_html(
            r#"<div id="card">Order <span data-private>Alice Smith</span><script>var token = "s3cret"</script>
                 <style>.x { color: red }</style>total <b>12 €</b><select autocomplete="cc-exp"><option>12/29</option></select></div>
               <button id="pay">Pay <span data-private>4242</span></button>
               <label for="field">Card <span data-private>4242</span></label><input id="field">
               <div id="private" data-private>Alice <b id="inside">Smith</b></div>"#,
        );
        document.body().unwrap().append_child(&page).unwrap();
        let frames = Frames { top: document.clone(), entered: Vec::new() };
        let described =
            |id: &str| describe(&document.get_element_by_id(id).unwrap(), &mut CssPaths::new(), &frames);

        assert_eq!(described("card").text.as_deref(), Some("Order total 12 €"));
        let pay = described("pay");
        assert_eq!((pay.text.as_deref(), pay.name.as_deref()), (Some("Pay"), Some("Pay")));
        assert_eq!(described("field").name.as_deref(), Some("Card"));
        for id in ["private", "inside"] {
            let private = described(id);
            assert_eq!((private.text, private.name), (None, None), "{id}");
        }
        page.remove();
    }

    #[wasm_bindgen_test]
    fn reading_during_the_stroke_files_what_reading_at_release_does() {
        let grid = cards();
        let stroke = ellipse(350.0, 150.0, 260.0, 130.0);
        let polygon = Polygon::new(stroke.clone());
        let at_release = circled_elements(&document(), &polygon, None, None).elements;
        let ahead = circled_elements(&document(), &polygon, None, Some(prepared(&stroke))).elements;
        assert!(at_release.len() >= 8, "{:?}", test_ids(&at_release));
        assert_eq!(ahead, at_release);
        grid.remove();
    }

    #[wasm_bindgen_test]
    async fn a_circle_inside_nested_frames_of_this_origin_files_the_element_with_a_path_through_both() {
        // A frame at (40, 30) with a 3 px border, holding one at (50, 60) with none, holding
        // the button: its box in the top viewport is offset by both frames' corners.
        let document = document();
        let outer = document.create_element("iframe").unwrap();
        outer
            .set_attribute(
                "style",
                "position: fixed; left: 40px; top: 30px; width: 500px; height: 300px; border: 3px solid;",
            )
            .unwrap();
        outer
            .set_attribute(
                "srcdoc",
                "<body style='margin: 0'><iframe title='inner' style='position: absolute; left: 50px; top: 60px; \
                 width: 300px; height: 150px; border: 0' srcdoc='<body style=\"margin: 0\"><button \
                 style=\"margin: 20px; width: 90px; height: 30px\">Pay</button>'></iframe>",
            )
            .unwrap();
        let loaded = js_sys::Promise::new(&mut |resolve, _| {
            outer.add_event_listener_with_callback("load", &resolve).unwrap();
        });
        document.body().unwrap().append_child(&outer).unwrap();
        wasm_bindgen_futures::JsFuture::from(loaded).await.unwrap();

        // The button sits at 40 + 3 + 50 + 20 = 113, 30 + 3 + 60 + 20 = 113.
        let polygon = Polygon::new(ellipse(158.0, 128.0, 80.0, 35.0));
        let circled = circled_elements(&document, &polygon, None, None);
        assert!(circled.closed_frames.is_empty());
        let tags: Vec<&str> = circled.elements.iter().map(|e| e.tag.as_str()).collect();
        assert_eq!(tags, ["button"]);
        let button = &circled.elements[0];
        assert_eq!(button.rect, Some(Rect { x: 113.0, y: 113.0, width: 90.0, height: 30.0 }));
        let path = button.css_path.clone().unwrap();
        assert_eq!(redline_protocol::element_path::frame_parts(&path).len(), 3, "{path}");
        let found = super::super::selector_dom::resolve_css_path(&document, &path).expect(&path);
        assert_eq!(found.text_content().as_deref(), Some("Pay"));
        outer.remove();
    }

    #[wasm_bindgen_test]
    fn boxes_that_moved_after_the_stroke_read_them_are_read_again() {
        let grid = cards();
        let stroke = ellipse(350.0, 150.0, 260.0, 130.0);
        let polygon = Polygon::new(stroke.clone());
        let capture = prepared(&stroke);
        // Two rows down: other cards are under the lasso now.
        grid.set_attribute("style", &grid_style(120)).unwrap();
        let ahead = circled_elements(&document(), &polygon, None, Some(capture)).elements;
        assert_eq!(ahead, circled_elements(&document(), &polygon, None, None).elements);
        assert!(ahead.iter().all(|c| c.rect.is_some_and(|r| r.y >= 120.0)), "{:?}", test_ids(&ahead));
        grid.remove();
    }
}

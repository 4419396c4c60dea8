//! CSS paths that find a circled element again: the pure core. The page adapter
//! (`selector_dom.rs`) describes nodes and answers "how many elements match this
//! selector here?"; everything else — which tokens are worth using, escaping, ranking
//! and the search — is decided here and tested natively against a fake DOM.
//!
//! The search: from the target, walk up to the nearest *anchor*, an element with a
//! compound (test id, id, class, attribute, tag, or a pair) unique in the whole tree.
//! Below it, each element's best path is the cheapest of `best(ancestor) c`, with `c`
//! unique in that ancestor's subtree, `best(parent) > c`, with `c` unique among the
//! parent's children, and last `best(parent) > tag:nth-of-type(k)`. Such a path is
//! unique by construction, so descendants reuse it (the [`SelectorCache`]) and the
//! scoped queries only look at a subtree. The target's path is then verified and cut to
//! its shortest unique tail. Positional steps cost more than any plausible alternative,
//! so they appear only where nothing else is unique.

use std::collections::HashMap;

/// Attributes set for tests; they name an element on purpose, so they are preferred
/// over everything else and taken as they are.
pub const TEST_ID_ATTRIBUTES: [&str; 3] = ["data-testid", "data-test", "data-cy"];
pub use redline_protocol::element_path::{SHADOW_SEPARATOR, shadow_parts};

/// Attributes other than test ids, ids and classes that describe what an element is.
const DESCRIPTIVE_ATTRIBUTES: [&str; 12] = [
    "name",
    "role",
    "type",
    "for",
    "aria-label",
    "placeholder",
    "alt",
    "title",
    "href",
    "rel",
    "property",
    "itemprop",
];
/// Longer tokens cost more to send than they help to read.
const MAX_TOKEN_LEN: usize = 40;
const MAX_VALUE_LEN: usize = 60;
const MAX_TEST_ID_LEN: usize = 100;

/// Ranking: a step's cost is its length plus its kind's penalty, so "test ids first,
/// then ids, classes, attributes and tags" holds for steps of similar length, and one
/// positional step outweighs any plausible non-positional path.
const TEST_ID_PENALTY: u32 = 0;
const ID_PENALTY: u32 = 30;
const CLASS_PENALTY: u32 = 35;
const ATTRIBUTE_PENALTY: u32 = 40;
const TAG_PENALTY: u32 = 40;
const POSITIONAL_PENALTY: u32 = 1000;
/// Compounds tried per element, cheapest first.
const MAX_CANDIDATES: usize = 10;

/// The search stops widening after this many queries or milliseconds for one element,
/// or once a whole batch has spent `MAX_BATCH_MILLIS` searching, and falls back to the best
/// unique path found (ultimately positional steps, which need no query).
const MAX_QUERIES: u32 = 200;
const MAX_MILLIS: f64 = 10.0;
const MAX_BATCH_MILLIS: f64 = 1000.0;

/// What the search needs to know about an element.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct NodeFacts {
    /// The local name, as the page spells it (`div`, `linearGradient`, `my-widget`).
    pub tag: String,
    /// The attributes [`may_use_attribute`] accepts (others are ignored), `id` and
    /// `class` included.
    pub attributes: Vec<(String, String)>,
}

/// Where a selector is counted.
#[derive(Debug)]
pub enum Scope<'a, N> {
    /// The descendants of this element.
    Subtree(&'a N),
    /// The children of this element.
    Children(&'a N),
    /// The top-level elements of the shadow root that holds this node (`:host > …`).
    ShadowTop(&'a N),
}

impl<N> Clone for Scope<'_, N> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<N> Copy for Scope<'_, N> {}

/// A DOM as the search sees it. Implemented for `web_sys::Element` in the page and by a
/// fake DOM in the tests.
pub trait Dom {
    type Node: Clone;
    /// A small number naming `node` for the lifetime of one cache; equal nodes, equal keys.
    fn key(&mut self, node: &Self::Node) -> usize;
    /// The parent element in the same tree; `None` at the top of a document or shadow root.
    fn parent(&self, node: &Self::Node) -> Option<Self::Node>;
    /// The host of the shadow root holding `node`; `None` in a document.
    fn tree_host(&self, node: &Self::Node) -> Option<Self::Node>;
    fn facts(&self, node: &Self::Node) -> NodeFacts;
    /// 1-based position among the siblings with the same tag (`:nth-of-type`).
    fn index_of_type(&self, node: &Self::Node) -> u32;
    /// How many elements match `selector` in `scope`; 0 when the selector is invalid.
    fn count(&mut self, scope: Scope<'_, Self::Node>, selector: &str) -> usize;
    /// How many elements match `selector` in the whole tree holding `node`, and whether
    /// `node` is the first of them.
    fn count_in_root(&mut self, node: &Self::Node, selector: &str) -> (usize, bool);
    /// Whether `selector`, run on the tree holding `node`, matches `node` and nothing else.
    fn matches_only(&mut self, node: &Self::Node, selector: &str) -> bool;
    /// A monotonic clock, for the time budget.
    fn now_ms(&self) -> f64;
}

// ---------------------------------------------------------------------------------
// Escaping

/// Appends `ident` escaped as a CSS identifier, exactly as `CSS.escape` does.
pub fn escape_ident(ident: &str, out: &mut String) {
    let starts_with_hyphen = ident.starts_with('-');
    for (i, c) in ident.chars().enumerate() {
        match c {
            '\0' => out.push('\u{FFFD}'),
            '\u{1}'..='\u{1f}' | '\u{7f}' => escape_code_point(c, out),
            '0'..='9' if i == 0 || (i == 1 && starts_with_hyphen) => escape_code_point(c, out),
            '-' if i == 0 && ident.len() == 1 => out.push_str("\\-"),
            '-' | '_' | '0'..='9' | 'a'..='z' | 'A'..='Z' => out.push(c),
            c if c >= '\u{80}' => out.push(c),
            c => {
                out.push('\\');
                out.push(c);
            }
        }
    }
}

/// Appends `value` as a double-quoted CSS string (CSSOM "serialize a string").
pub fn serialize_string(value: &str, out: &mut String) {
    out.push('"');
    for c in value.chars() {
        match c {
            '\0' => out.push('\u{FFFD}'),
            '\u{1}'..='\u{1f}' | '\u{7f}' => escape_code_point(c, out),
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

fn escape_code_point(c: char, out: &mut String) {
    use std::fmt::Write;
    let _ = write!(out, "\\{:x} ", c as u32);
}

// ---------------------------------------------------------------------------------
// Which tokens are worth using

/// Whether a class or id looks machine-made (a CSS-in-JS hash, a CSS-modules suffix, a
/// framework counter): such tokens change with the next build, so a path must not use them.
pub fn looks_generated(token: &str) -> bool {
    if token.is_empty() || token.len() > MAX_TOKEN_LEN || has_generated_prefix(token) {
        return true;
    }
    token.split(|c: char| !c.is_ascii_alphanumeric()).any(segment_looks_generated)
}

/// Prefixes of CSS-in-JS libraries and framework bookkeeping (`css-1x2y3z`, `sc-bdVaJa`,
/// `jsx-2231823`, `svelte-xyz`, `ng-tns-c1-2`, `ember123`).
fn has_generated_prefix(token: &str) -> bool {
    const ALWAYS: [&str; 6] = ["sc-", "svelte-", "ng-tns-", "_ngcontent", "_nghost", "emotion-"];
    let followed_by_digits = |prefix: &str| {
        token.strip_prefix(prefix).is_some_and(|rest| rest.chars().next().is_some_and(|c| c.is_ascii_digit()))
    };
    let followed_by_mixed = |prefix: &str| {
        token.strip_prefix(prefix).is_some_and(|rest| {
            let head = rest.split('-').next().unwrap_or("");
            head.bytes().any(|b| b.is_ascii_digit())
        })
    };
    ALWAYS.iter().any(|p| token.starts_with(p))
        || ["jsx-", "jss", "ember", "css-"].iter().any(|p| followed_by_digits(p))
        || followed_by_mixed("css-")
}

/// One alphanumeric run of a token: hashes mix letters and digits, run digits long,
/// look like hex, flip case every letter or two, or pile up consonants.
fn segment_looks_generated(segment: &str) -> bool {
    let digits = segment.bytes().filter(u8::is_ascii_digit).count();
    let letters = segment.len() - digits;
    if digits > 0 && letters == 0 {
        return digits >= 4;
    }
    if digits > 0 {
        let has_upper = segment.bytes().any(|b| b.is_ascii_uppercase());
        let has_lower = segment.bytes().any(|b| b.is_ascii_lowercase());
        let is_hex = segment.len() >= 6 && segment.bytes().all(|b| b.is_ascii_hexdigit());
        return (has_upper && has_lower)
            || letter_digit_switches(segment) >= 3
            || longest_run(segment, |b| b.is_ascii_digit()) >= 4
            || is_hex;
    }
    camel_case_is_choppy(segment) || camel_words(segment).any(|word| longest_run(word, |b| !is_vowel(b)) >= 5)
}

/// `productsGroupPrimary` → `products`, `Group`, `Primary`.
fn camel_words(segment: &str) -> impl Iterator<Item = &str> {
    let bytes = segment.as_bytes();
    let mut start = 0;
    (1..=bytes.len()).filter_map(move |end| {
        let boundary =
            end == bytes.len() || (bytes[end].is_ascii_uppercase() && bytes[end - 1].is_ascii_lowercase());
        boundary.then(|| {
            let word = &segment[start..end];
            start = end;
            word
        })
    })
}

fn letter_digit_switches(segment: &str) -> usize {
    segment.as_bytes().windows(2).filter(|w| w[0].is_ascii_digit() != w[1].is_ascii_digit()).count()
}

fn longest_run(segment: &str, pred: impl Fn(u8) -> bool) -> usize {
    let (mut longest, mut run) = (0, 0);
    for b in segment.bytes() {
        run = if pred(b) { run + 1 } else { 0 };
        longest = longest.max(run);
    }
    longest
}

fn is_vowel(b: u8) -> bool {
    matches!(b.to_ascii_lowercase(), b'a' | b'e' | b'i' | b'o' | b'u' | b'y')
}

/// `bdVaJa`, `kKqmGb`: case flips with at most two letters between them. Real camel case
/// (`primaryButton`, `HTMLElement`) has longer words.
fn camel_case_is_choppy(segment: &str) -> bool {
    let (words, short) = camel_words(segment)
        .fold((0, 0), |(words, short), word| (words + 1, short + usize::from(word.len() <= 2)));
    words >= 3 && short >= 2
}

/// Whether an attribute value reads like words (a label, a name, a path), not data.
fn is_descriptive_value(value: &str) -> bool {
    !value.trim().is_empty()
        && value.len() <= MAX_VALUE_LEN
        && !value.chars().any(char::is_control)
        && !value.split(|c: char| !c.is_ascii_alphanumeric()).any(segment_looks_generated)
}

/// Whether a path may use the attribute `name`: the page adapter reads only these
/// values (an SVG path's `d` or a `style` can be kilobytes).
pub fn may_use_attribute(name: &str) -> bool {
    TEST_ID_ATTRIBUTES.contains(&name) || name == "id" || name == "class" || is_descriptive_attribute(name)
}

fn is_descriptive_attribute(name: &str) -> bool {
    DESCRIPTIVE_ATTRIBUTES.contains(&name)
        || name.strip_prefix("data-").is_some_and(|rest| !rest.is_empty() && !looks_generated(rest))
}

// ---------------------------------------------------------------------------------
// Candidates

/// One compound selector for an element, with its ranking cost.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Compound {
    pub text: String,
    pub cost: u32,
}

impl Compound {
    fn new(text: String, penalty: u32) -> Compound {
        let cost = text.len() as u32 + penalty;
        Compound { text, cost }
    }
}

fn attribute_selector(name: &str, value: &str) -> String {
    let mut text = String::with_capacity(name.len() + value.len() + 4);
    text.push('[');
    escape_ident(name, &mut text);
    text.push('=');
    serialize_string(value, &mut text);
    text.push(']');
    text
}

fn prefixed_ident(prefix: char, ident: &str) -> String {
    let mut text = String::with_capacity(ident.len() + 1);
    text.push(prefix);
    escape_ident(ident, &mut text);
    text
}

/// The element's own compound selectors, cheapest first: each usable test id, id,
/// class and descriptive attribute alone, the tag, and a few pairs of them.
pub fn candidates(facts: &NodeFacts) -> Vec<Compound> {
    let mut singles = Vec::new();
    for (name, value) in &facts.attributes {
        let name = name.as_str();
        if TEST_ID_ATTRIBUTES.contains(&name) {
            if !value.is_empty() && value.len() <= MAX_TEST_ID_LEN {
                singles.push(Compound::new(attribute_selector(name, value), TEST_ID_PENALTY));
            }
        } else if name == "id" {
            if !looks_generated(value) {
                singles.push(Compound::new(prefixed_ident('#', value), ID_PENALTY));
            }
        } else if name == "class" {
            for class in value.split_ascii_whitespace().filter(|c| !looks_generated(c)) {
                let class = Compound::new(prefixed_ident('.', class), CLASS_PENALTY);
                if !singles.contains(&class) {
                    singles.push(class);
                }
            }
        } else if is_descriptive_attribute(name) && is_descriptive_value(value) {
            singles.push(Compound::new(attribute_selector(name, value), ATTRIBUTE_PENALTY));
        }
    }
    singles.sort_by_key(|c| c.cost);
    let mut tag = String::new();
    escape_ident(&facts.tag, &mut tag);

    let mut all = Vec::with_capacity(singles.len() * 2 + 1);
    // A tag narrows a class or attribute (`button.primary`); two classes narrow each other.
    for single in singles.iter().take(3) {
        if !single.text.starts_with('#') {
            all.push(Compound::new(
                format!("{tag}{}", single.text),
                single.cost - single.text.len() as u32 + TAG_PENALTY,
            ));
        }
    }
    let classes: Vec<&Compound> = singles.iter().filter(|c| c.text.starts_with('.')).take(3).collect();
    for (i, a) in classes.iter().enumerate() {
        for b in &classes[i + 1..] {
            all.push(Compound { text: format!("{}{}", a.text, b.text), cost: a.cost + b.cost });
        }
    }
    all.push(Compound::new(tag, TAG_PENALTY));
    all.extend(singles);
    all.sort_by_key(|c| c.cost);
    all.truncate(MAX_CANDIDATES);
    all
}

// ---------------------------------------------------------------------------------
// The search

/// One node's best path within its tree.
struct Entry<N> {
    node: N,
    /// The parent's key; `None` at the top of the tree and for anchors (elements whose
    /// own compound is unique in the tree), above which the search never looks.
    parent: Option<usize>,
    /// Which tree holds the node: [`DOCUMENT`] or 1 + the key of the shadow root's host.
    root: usize,
    path: String,
    cost: u32,
    /// Whether the whole-tree query that chose `path` saw it match this node alone:
    /// exactly what verifying the path would ask again.
    seen_alone: bool,
}

const DOCUMENT: usize = 0;

/// An element on the way up from a target, waiting for its ancestors' paths.
struct Pending<N> {
    key: usize,
    node: N,
    tag: String,
    candidates: Vec<Compound>,
}

/// Paths found so far in one batch (one capture), so elements that share ancestors —
/// nearly all of them — pay for each ancestor once, and the counts of whole-tree
/// queries are asked once per tree.
pub struct SelectorCache<N> {
    entries: Vec<Option<Entry<N>>>,
    root_counts: HashMap<usize, HashMap<String, RootCount>>,
    /// The full path of each shadow root's host followed by [`SHADOW_SEPARATOR`].
    root_prefixes: HashMap<usize, String>,
    /// Time spent finding this batch's paths so far. Counted, not read off the clock
    /// since the first path, because a batch may be spread over a whole lasso stroke.
    spent_ms: f64,
}

impl<N: Clone> Default for SelectorCache<N> {
    fn default() -> Self {
        SelectorCache {
            entries: Vec::new(),
            root_counts: HashMap::new(),
            root_prefixes: HashMap::new(),
            spent_ms: 0.0,
        }
    }
}

/// What a whole-tree query found.
#[derive(Clone, Copy)]
struct RootCount {
    count: usize,
    /// The key of the one match, when it was the element the query was made for.
    only: Option<usize>,
}

/// The queries and time one element may spend.
struct Budget {
    deadline_ms: f64,
    queries: u32,
}

impl Budget {
    fn exhausted<D: Dom>(&self, dom: &D) -> bool {
        self.queries >= MAX_QUERIES || dom.now_ms() >= self.deadline_ms
    }
}

impl<N: Clone> SelectorCache<N> {
    pub fn new() -> Self {
        Self::default()
    }

    /// The shortest unique path to `target` found within the budget, one per-tree path
    /// per shadow boundary, each verified to match only its element.
    pub fn css_path<D: Dom<Node = N>>(&mut self, dom: &mut D, target: &N) -> Option<String> {
        let started = dom.now_ms();
        let path = self.search(dom, target, started);
        self.spent_ms += dom.now_ms() - started;
        path
    }

    fn search<D: Dom<Node = N>>(&mut self, dom: &mut D, target: &N, now: f64) -> Option<String> {
        let batch_left = (MAX_BATCH_MILLIS - self.spent_ms).max(0.0);
        let mut budget = Budget { deadline_ms: now + batch_left.min(MAX_MILLIS), queries: 0 };
        let key = self.resolve(dom, target, &mut budget)?;
        let entry = self.entry(key);
        let root = entry.root;
        let inner =
            if entry.seen_alone { entry.path.clone() } else { verified(dom, target, entry.path.clone())? };
        let inner = shortest_unique_suffix(dom, target, inner);
        let prefix = self.root_prefixes.get(&root).map_or("", String::as_str);
        Some(format!("{prefix}{inner}"))
    }

    fn entry(&self, key: usize) -> &Entry<N> {
        self.entries[key].as_ref().expect("resolved entries exist")
    }

    /// Makes sure `target` has an entry; returns its key. Walks up only as far as needed:
    /// to an ancestor with an entry, or to the nearest element (maybe the target itself)
    /// with a compound unique in the whole tree — an anchor, whose own ancestors are
    /// never looked at. Then works out each element below the anchor, top down.
    fn resolve<D: Dom<Node = N>>(&mut self, dom: &mut D, target: &N, budget: &mut Budget) -> Option<usize> {
        let target_key = dom.key(target);
        if self.has_entry(target_key) {
            return Some(target_key);
        }
        let root = self.resolve_root(dom, target, budget)?;
        let mut chain = Vec::new();
        let (mut node, mut key) = (target.clone(), target_key);
        let mut parent_key = loop {
            let facts = dom.facts(&node);
            let candidates = candidates(&facts);
            if let Some((anchor, seen_alone)) =
                self.unique_in_root(dom, &node, key, root, &candidates, budget)
            {
                let (path, cost) = (anchor.text.clone(), anchor.cost);
                self.store(key, Entry { node, parent: None, root, path, cost, seen_alone });
                break Some(key);
            }
            let parent = dom.parent(&node);
            chain.push(Pending { key, node, tag: facts.tag, candidates });
            let Some(parent) = parent else { break None };
            key = dom.key(&parent);
            if self.has_entry(key) {
                break Some(key);
            }
            node = parent;
        };
        while let Some(pending) = chain.pop() {
            let (path, cost) = self.best_path(dom, &pending, parent_key, root, budget);
            let key = pending.key;
            let seen_alone = false;
            self.store(key, Entry { node: pending.node, parent: parent_key, root, path, cost, seen_alone });
            parent_key = Some(key);
        }
        Some(target_key)
    }

    fn has_entry(&self, key: usize) -> bool {
        self.entries.get(key).is_some_and(Option::is_some)
    }

    fn store(&mut self, key: usize, entry: Entry<N>) {
        if self.entries.len() <= key {
            self.entries.resize_with(key + 1, || None);
        }
        self.entries[key] = Some(entry);
    }

    /// The cheapest of the node's own compounds that is unique in its whole tree, and
    /// whether the query saw it match the node (node `key`) alone.
    fn unique_in_root<'c, D: Dom<Node = N>>(
        &mut self,
        dom: &mut D,
        node: &N,
        key: usize,
        root: usize,
        candidates: &'c [Compound],
        budget: &mut Budget,
    ) -> Option<(&'c Compound, bool)> {
        for candidate in candidates {
            if budget.exhausted(dom) {
                return None;
            }
            let found = self.root_count(dom, node, Some(key), root, &candidate.text, budget);
            if found.count == 1 {
                return Some((candidate, found.only == Some(key)));
            }
        }
        None
    }

    /// The id of the tree holding `node`, resolving the path of its shadow host first.
    fn resolve_root<D: Dom<Node = N>>(
        &mut self,
        dom: &mut D,
        node: &N,
        budget: &mut Budget,
    ) -> Option<usize> {
        let Some(host) = dom.tree_host(node) else { return Some(DOCUMENT) };
        let host_key = self.resolve(dom, &host, budget)?;
        let root = host_key + 1;
        if !self.root_prefixes.contains_key(&root) {
            let host_entry = self.entry(host_key);
            let host_path = verified(dom, &host, host_entry.path.clone())?;
            let outer = self.root_prefixes.get(&host_entry.root).map_or("", String::as_str);
            let prefix = format!("{outer}{host_path}{SHADOW_SEPARATOR}");
            self.root_prefixes.insert(root, prefix);
        }
        Some(root)
    }

    /// The cheapest unique path to `node` within its tree, given its ancestors' entries.
    fn best_path<D: Dom<Node = N>>(
        &mut self,
        dom: &mut D,
        pending: &Pending<N>,
        parent_key: Option<usize>,
        root: usize,
        budget: &mut Budget,
    ) -> (String, u32) {
        let Pending { node, tag, candidates, .. } = pending;
        let mut best: Option<(String, u32)> = None;
        let mut not_unique_in_root = Vec::new();
        for candidate in candidates {
            if budget.exhausted(dom) {
                break;
            }
            if self.root_count(dom, node, None, root, &candidate.text, budget).count == 1 {
                best = Some((candidate.text.clone(), candidate.cost));
                break;
            }
            not_unique_in_root.push(candidate);
        }
        self.improve_with_ancestors(dom, parent_key, not_unique_in_root, &mut best, budget);
        self.improve_with_parent(dom, node, parent_key, candidates, &mut best, budget);
        best.unwrap_or_else(|| self.positional_step(dom, node, parent_key, tag))
    }

    /// How many elements match `selector` in the tree holding `node` (whose key is `key`,
    /// if it matters which one matched), asked once per tree.
    fn root_count<D: Dom<Node = N>>(
        &mut self,
        dom: &mut D,
        node: &N,
        key: Option<usize>,
        root: usize,
        selector: &str,
        budget: &mut Budget,
    ) -> RootCount {
        let counts = self.root_counts.entry(root).or_default();
        if let Some(&found) = counts.get(selector) {
            return found;
        }
        budget.queries += 1;
        let (count, first_is_node) = dom.count_in_root(node, selector);
        let found = RootCount { count, only: key.filter(|_| count == 1 && first_is_node) };
        counts.insert(selector.to_owned(), found);
        found
    }

    /// `ancestor c` for an ancestor's path and a compound unique in its subtree. A
    /// compound that is not unique in one subtree is not unique in any larger one, so it
    /// is dropped on the way up; ancestors whose own path already costs too much are
    /// skipped without a query.
    fn improve_with_ancestors<D: Dom<Node = N>>(
        &self,
        dom: &mut D,
        parent_key: Option<usize>,
        mut alive: Vec<&Compound>,
        best: &mut Option<(String, u32)>,
        budget: &mut Budget,
    ) {
        let mut ancestor = parent_key;
        while let Some(key) = ancestor {
            let entry = self.entry(key);
            // `alive` is cheapest first: the first unique one is this ancestor's best.
            while let Some(candidate) = alive.first().filter(|_| !budget.exhausted(dom)) {
                let cost = entry.cost + 1 + candidate.cost;
                if best.as_ref().is_some_and(|(_, b)| cost >= *b) {
                    break;
                }
                budget.queries += 1;
                if dom.count(Scope::Subtree(&entry.node), &candidate.text) == 1 {
                    *best = Some((format!("{} {}", entry.path, candidate.text), cost));
                    break;
                }
                alive.remove(0);
            }
            if alive.is_empty() || budget.exhausted(dom) {
                return;
            }
            ancestor = entry.parent;
        }
    }

    /// `parent > c` for a compound unique among the parent's children (`:host > c` at the
    /// top of a shadow root).
    fn improve_with_parent<D: Dom<Node = N>>(
        &self,
        dom: &mut D,
        node: &N,
        parent_key: Option<usize>,
        candidates: &[Compound],
        best: &mut Option<(String, u32)>,
        budget: &mut Budget,
    ) {
        let (prefix, prefix_cost, scope) = match parent_key {
            Some(key) => {
                let parent = self.entry(key);
                (parent.path.as_str(), parent.cost, Scope::Children(&parent.node))
            }
            None if dom.tree_host(node).is_some() => (":host", 5, Scope::ShadowTop(node)),
            None => return,
        };
        for candidate in candidates {
            let cost = prefix_cost + 3 + candidate.cost;
            if best.as_ref().is_some_and(|(_, b)| cost >= *b) || budget.exhausted(dom) {
                return;
            }
            budget.queries += 1;
            if dom.count(scope, &candidate.text) == 1 {
                *best = Some((format!("{prefix} > {}", candidate.text), cost));
                return;
            }
        }
    }

    /// `parent > tag:nth-of-type(k)`: unique whenever the parent's path is.
    fn positional_step<D: Dom<Node = N>>(
        &self,
        dom: &mut D,
        node: &N,
        parent_key: Option<usize>,
        tag: &str,
    ) -> (String, u32) {
        let (prefix, prefix_cost) = match parent_key {
            Some(key) => (self.entry(key).path.as_str(), self.entry(key).cost),
            None if dom.tree_host(node).is_some() => (":host", 5),
            // The top of a document is its root element.
            None => return (":root".to_owned(), 5 + TAG_PENALTY),
        };
        let step = nth_of_type(tag, dom.index_of_type(node));
        let cost = prefix_cost + 3 + step.len() as u32 + POSITIONAL_PENALTY;
        (format!("{prefix} > {step}"), cost)
    }
}

/// The shortest tail of a unique `path` that is still unique: `li:nth-of-type(6) strong`
/// rather than `.columns > ul:nth-of-type(1) > li:nth-of-type(6) strong`. Each step
/// dropped from the front only widens the match, so a binary search finds it.
fn shortest_unique_suffix<D: Dom>(dom: &mut D, node: &D::Node, path: String) -> String {
    let starts = step_starts(&path);
    let (mut unique, mut not_unique) = (0, starts.len());
    while not_unique - unique > 1 {
        let middle = (unique + not_unique) / 2;
        if dom.matches_only(node, &path[starts[middle]..]) {
            unique = middle;
        } else {
            not_unique = middle;
        }
    }
    if unique == 0 { path } else { path[starts[unique]..].to_owned() }
}

/// Where each compound step of `path` starts: after each ` ` or ` > ` that is not
/// inside a string, brackets or an escape (`\31 ` ends with a space of its own).
pub fn step_starts(path: &str) -> Vec<usize> {
    let bytes = path.as_bytes();
    let mut starts = vec![0];
    let (mut at, mut depth, mut in_string) = (0, 0usize, false);
    while at < bytes.len() {
        match bytes[at] {
            b'\\' => {
                at += 1;
                let hex = bytes[at..].iter().take(6).take_while(|b| b.is_ascii_hexdigit()).count();
                at += if hex > 0 { hex + usize::from(bytes.get(at + hex) == Some(&b' ')) } else { 1 };
                continue;
            }
            b'"' => in_string = !in_string,
            b'[' | b'(' if !in_string => depth += 1,
            b']' | b')' if !in_string => depth = depth.saturating_sub(1),
            b' ' if !in_string && depth == 0 => {
                at += if bytes[at..].starts_with(b" > ") { 3 } else { 1 };
                starts.push(at);
                continue;
            }
            _ => {}
        }
        at += 1;
    }
    starts
}

/// `path` when it matches only `node`, else the positional chain when that does. Paths
/// are unique by construction; a failure here means the page changed under us.
fn verified<D: Dom>(dom: &mut D, node: &D::Node, path: String) -> Option<String> {
    if dom.matches_only(node, &path) {
        return Some(path);
    }
    let positional = positional_chain(dom, node);
    dom.matches_only(node, &positional).then_some(positional)
}

fn nth_of_type(tag: &str, index: u32) -> String {
    let mut step = String::with_capacity(tag.len() + 18);
    escape_ident(tag, &mut step);
    step.push_str(&format!(":nth-of-type({index})"));
    step
}

/// The path made of positional steps alone, from the top of the node's tree: unique
/// without a single query, so it is the last resort.
fn positional_chain<D: Dom>(dom: &D, node: &D::Node) -> String {
    let mut steps = Vec::new();
    let mut current = node.clone();
    loop {
        match dom.parent(&current) {
            Some(parent) => {
                steps.push(nth_of_type(&dom.facts(&current).tag, dom.index_of_type(&current)));
                current = parent;
            }
            None if dom.tree_host(&current).is_some() => {
                steps.push(nth_of_type(&dom.facts(&current).tag, dom.index_of_type(&current)));
                steps.push(":host".to_owned());
                break;
            }
            None => {
                steps.push(":root".to_owned());
                break;
            }
        }
    }
    steps.reverse();
    steps.join(" > ")
}

/// The CSS path of one element with a cache of its own.
pub fn css_path<D: Dom>(dom: &mut D, target: &D::Node) -> Option<String> {
    SelectorCache::new().css_path(dom, target)
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    // -----------------------------------------------------------------------------
    // A fake DOM with a small selector engine for exactly the grammar paths use:
    // compounds of tag, `#id`, `.class`, `[name="value"]`, `:nth-of-type(k)`, `:root`,
    // joined by ` ` and ` > `, with `:host` heading a shadow root's path.

    #[derive(Debug, Clone)]
    struct FakeNode {
        tag: String,
        attributes: Vec<(String, String)>,
        parent: Option<usize>,
        /// The tree the node is in: 0 is the document, `h + 1` the shadow root of node `h`.
        tree: usize,
    }

    #[derive(Debug, Clone, Default)]
    struct FakeDom {
        nodes: Vec<FakeNode>,
        queries: usize,
        /// Milliseconds the clock advances per query, to exercise the time budget.
        millis_per_query: f64,
        /// Milliseconds that passed outside the search (between paths).
        idle_ms: f64,
    }

    impl FakeDom {
        fn add(&mut self, tag: &str, attributes: &[(&str, &str)], parent: Option<usize>) -> usize {
            let tree = parent.map_or(0, |p| self.nodes[p].tree);
            self.push(tag, attributes, parent, tree)
        }

        /// A top-level element of `host`'s (open) shadow root.
        fn add_in_shadow_of(&mut self, host: usize, tag: &str, attributes: &[(&str, &str)]) -> usize {
            self.push(tag, attributes, None, host + 1)
        }

        fn push(
            &mut self,
            tag: &str,
            attributes: &[(&str, &str)],
            parent: Option<usize>,
            tree: usize,
        ) -> usize {
            let attributes = attributes.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect();
            self.nodes.push(FakeNode { tag: tag.to_owned(), attributes, parent, tree });
            self.nodes.len() - 1
        }

        fn attribute(&self, node: usize, name: &str) -> Option<&str> {
            self.nodes[node].attributes.iter().find(|(n, _)| n == name).map(|(_, v)| v.as_str())
        }

        fn siblings(&self, node: usize) -> impl Iterator<Item = usize> + '_ {
            let (parent, tree) = (self.nodes[node].parent, self.nodes[node].tree);
            (0..self.nodes.len())
                .filter(move |&n| self.nodes[n].parent == parent && self.nodes[n].tree == tree)
        }

        fn is_descendant(&self, node: usize, ancestor: usize) -> bool {
            let mut current = self.nodes[node].parent;
            while let Some(p) = current {
                if p == ancestor {
                    return true;
                }
                current = self.nodes[p].parent;
            }
            false
        }

        fn in_tree(&self, tree: usize) -> impl Iterator<Item = usize> + '_ {
            (0..self.nodes.len()).filter(move |&n| self.nodes[n].tree == tree)
        }

        fn select(&self, tree: usize, selector: &str) -> Vec<usize> {
            let Some(steps) = parse_complex(selector) else { return Vec::new() };
            self.in_tree(tree).filter(|&n| self.matches_steps(&steps, steps.len() - 1, n)).collect()
        }

        /// Follows a full path through shadow roots, as `resolve_css_path` does.
        fn resolve(&self, path: &str) -> Vec<usize> {
            let mut tree = 0;
            let mut found = Vec::new();
            for segment in shadow_parts(path) {
                found = self.select(tree, segment);
                let [only] = found[..] else { return found };
                tree = only + 1;
            }
            found
        }

        fn matches_steps(&self, steps: &[(bool, Vec<Simple>)], i: usize, node: usize) -> bool {
            let (child_combinator, compound) = &steps[i];
            if compound == &[Simple::Host] {
                return false; // `:host` is featureless: it only heads a path.
            }
            if !compound.iter().all(|s| self.matches_simple(s, node)) {
                return false;
            }
            if i == 0 {
                return true;
            }
            let previous = &steps[i - 1];
            let parent = self.nodes[node].parent;
            if previous.1 == [Simple::Host] {
                let in_shadow = self.nodes[node].tree != 0;
                return in_shadow && (parent.is_none() || !child_combinator);
            }
            if *child_combinator {
                return parent.is_some_and(|p| self.matches_steps(steps, i - 1, p));
            }
            let mut ancestor = parent;
            while let Some(a) = ancestor {
                if self.matches_steps(steps, i - 1, a) {
                    return true;
                }
                ancestor = self.nodes[a].parent;
            }
            false
        }

        fn matches_simple(&self, simple: &Simple, node: usize) -> bool {
            match simple {
                Simple::Tag(tag) => &self.nodes[node].tag == tag,
                Simple::Id(id) => self.attribute(node, "id") == Some(id),
                Simple::Class(class) => self
                    .attribute(node, "class")
                    .is_some_and(|c| c.split_ascii_whitespace().any(|c| c == class)),
                Simple::Attribute(name, value) => self.attribute(node, name) == Some(value),
                Simple::NthOfType(k) => self.index_of_type(&node) == *k,
                Simple::Root => self.nodes[node].parent.is_none() && self.nodes[node].tree == 0,
                Simple::Host => false,
            }
        }
    }

    impl Dom for FakeDom {
        type Node = usize;

        fn key(&mut self, node: &usize) -> usize {
            *node
        }

        fn parent(&self, node: &usize) -> Option<usize> {
            self.nodes[*node].parent
        }

        fn tree_host(&self, node: &usize) -> Option<usize> {
            self.nodes[*node].tree.checked_sub(1)
        }

        fn facts(&self, node: &usize) -> NodeFacts {
            let n = &self.nodes[*node];
            NodeFacts { tag: n.tag.clone(), attributes: n.attributes.clone() }
        }

        fn index_of_type(&self, node: &usize) -> u32 {
            let tag = &self.nodes[*node].tag;
            self.siblings(*node).filter(|&s| &self.nodes[s].tag == tag).position(|s| s == *node).unwrap()
                as u32
                + 1
        }

        fn count(&mut self, scope: Scope<'_, usize>, selector: &str) -> usize {
            self.queries += 1;
            let Some(steps) = parse_complex(selector) else { return 0 };
            let matches = |n: usize| self.matches_steps(&steps, steps.len() - 1, n);
            match scope {
                Scope::Subtree(a) => self
                    .in_tree(self.nodes[*a].tree)
                    .filter(|&m| self.is_descendant(m, *a) && matches(m))
                    .count(),
                Scope::Children(a) => self
                    .in_tree(self.nodes[*a].tree)
                    .filter(|&m| self.nodes[m].parent == Some(*a) && matches(m))
                    .count(),
                Scope::ShadowTop(n) => self
                    .in_tree(self.nodes[*n].tree)
                    .filter(|&m| self.nodes[m].parent.is_none() && matches(m))
                    .count(),
            }
        }

        fn matches_only(&mut self, node: &usize, selector: &str) -> bool {
            self.select(self.nodes[*node].tree, selector) == [*node]
        }

        fn count_in_root(&mut self, node: &usize, selector: &str) -> (usize, bool) {
            self.queries += 1;
            let matches = self.select(self.nodes[*node].tree, selector);
            (matches.len(), matches.first() == Some(node))
        }

        fn now_ms(&self) -> f64 {
            self.idle_ms + self.queries as f64 * self.millis_per_query
        }
    }

    #[derive(Debug, Clone, PartialEq)]
    enum Simple {
        Tag(String),
        Id(String),
        Class(String),
        Attribute(String, String),
        NthOfType(u32),
        Root,
        Host,
    }

    /// Steps of a complex selector, each with whether a `>` precedes it.
    fn parse_complex(selector: &str) -> Option<Vec<(bool, Vec<Simple>)>> {
        let chars: Vec<char> = selector.chars().collect();
        let mut at = 0;
        let mut steps = Vec::new();
        let mut child = false;
        loop {
            let compound = parse_compound(&chars, &mut at)?;
            steps.push((child, compound));
            if at == chars.len() {
                return Some(steps);
            }
            if chars[at] != ' ' {
                return None;
            }
            at += 1;
            child = chars.get(at) == Some(&'>');
            if child {
                if chars.get(at + 1) != Some(&' ') {
                    return None;
                }
                at += 2;
            }
        }
    }

    fn parse_compound(chars: &[char], at: &mut usize) -> Option<Vec<Simple>> {
        let mut simples = Vec::new();
        while let Some(&c) = chars.get(*at) {
            match c {
                ' ' => break,
                '#' => {
                    *at += 1;
                    simples.push(Simple::Id(parse_ident(chars, at)?));
                }
                '.' => {
                    *at += 1;
                    simples.push(Simple::Class(parse_ident(chars, at)?));
                }
                '[' => {
                    *at += 1;
                    let name = parse_ident(chars, at)?;
                    (chars.get(*at) == Some(&'=')).then_some(())?;
                    *at += 1;
                    let value = parse_string(chars, at)?;
                    (chars.get(*at) == Some(&']')).then_some(())?;
                    *at += 1;
                    simples.push(Simple::Attribute(name, value));
                }
                ':' => {
                    let rest: String = chars[*at..].iter().collect();
                    if let Some(tail) = rest.strip_prefix(":nth-of-type(") {
                        let close = tail.find(')')?;
                        simples.push(Simple::NthOfType(tail[..close].parse().ok()?));
                        *at += ":nth-of-type(".len() + close + 1;
                    } else if rest.starts_with(":root") {
                        simples.push(Simple::Root);
                        *at += 5;
                    } else if rest.starts_with(":host") {
                        simples.push(Simple::Host);
                        *at += 5;
                    } else {
                        return None;
                    }
                }
                _ if simples.is_empty() => simples.push(Simple::Tag(parse_ident(chars, at)?)),
                _ => return None,
            }
        }
        (!simples.is_empty()).then_some(simples)
    }

    /// A CSS identifier with its escapes undone; `None` when it is not a valid one.
    fn parse_ident(chars: &[char], at: &mut usize) -> Option<String> {
        let start = *at;
        let mut ident = String::new();
        while let Some(&c) = chars.get(*at) {
            if c == '\\' {
                ident.push(parse_escape(chars, at)?);
            } else if c.is_ascii_alphanumeric() || c == '-' || c == '_' || c >= '\u{80}' {
                ident.push(c);
                *at += 1;
            } else {
                break;
            }
        }
        // An identifier may not start with a digit, a hyphen and a digit, or a lone hyphen.
        let raw: Vec<char> = chars[start..*at].to_vec();
        let starts_badly = match raw.as_slice() {
            [] | ['-'] => true,
            [c, ..] if c.is_ascii_digit() => true,
            ['-', c, ..] if c.is_ascii_digit() => true,
            _ => false,
        };
        (!starts_badly).then_some(ident)
    }

    fn parse_escape(chars: &[char], at: &mut usize) -> Option<char> {
        *at += 1;
        let hex: String = chars[*at..].iter().take(6).take_while(|c| c.is_ascii_hexdigit()).collect();
        if hex.is_empty() {
            let c = *chars.get(*at)?;
            *at += 1;
            return Some(c);
        }
        *at += hex.len();
        if chars.get(*at) == Some(&' ') {
            *at += 1;
        }
        char::from_u32(u32::from_str_radix(&hex, 16).ok()?)
    }

    fn parse_string(chars: &[char], at: &mut usize) -> Option<String> {
        (chars.get(*at) == Some(&'"')).then_some(())?;
        *at += 1;
        let mut value = String::new();
        loop {
            match *chars.get(*at)? {
                '"' => {
                    *at += 1;
                    return Some(value);
                }
                '\\' => value.push(parse_escape(chars, at)?),
                c => {
                    value.push(c);
                    *at += 1;
                }
            }
        }
    }

    fn path_of(dom: &mut FakeDom, node: usize) -> String {
        css_path(dom, &node).expect("every element gets a path")
    }

    // -----------------------------------------------------------------------------
    // Escaping

    fn escaped(ident: &str) -> String {
        let mut out = String::new();
        escape_ident(ident, &mut out);
        out
    }

    #[test]
    fn escapes_like_css_escape() {
        assert_eq!(escaped("a:b"), "a\\:b");
        assert_eq!(escaped("1abc"), "\\31 abc");
        assert_eq!(escaped("-1a"), "-\\31 a");
        assert_eq!(escaped("-"), "\\-");
        assert_eq!(escaped("--x"), "--x");
        assert_eq!(escaped("a b"), "a\\ b");
        assert_eq!(escaped("w-1/2"), "w-1\\/2");
        assert_eq!(escaped("héllo✓"), "héllo✓");
        assert_eq!(escaped("a\u{0}b\u{1}"), "a\u{FFFD}b\\1 ");
        let mut s = String::new();
        serialize_string("say \"hi\"\\\n", &mut s);
        assert_eq!(s, "\"say \\\"hi\\\"\\\\\\a \"");
    }

    proptest! {
        #[test]
        fn escaped_identifiers_parse_back_to_themselves(ident in "\\PC{1,12}|[-_0-9a-z: ]{1,8}") {
            prop_assume!(!ident.contains('\0'));
            let text = escaped(&ident);
            let chars: Vec<char> = text.chars().collect();
            let mut at = 0;
            prop_assert_eq!(parse_ident(&chars, &mut at), Some(ident));
            prop_assert_eq!(at, chars.len());
        }

        #[test]
        fn serialized_strings_parse_back_to_themselves(value in "\\PC{0,12}|[\"\\\\\n\t ]{0,6}") {
            prop_assume!(!value.contains('\0'));
            let mut text = String::new();
            serialize_string(&value, &mut text);
            let chars: Vec<char> = text.chars().collect();
            let mut at = 0;
            prop_assert_eq!(parse_string(&chars, &mut at), Some(value));
            prop_assert_eq!(at, chars.len());
        }
    }

    #[test]
    fn steps_split_at_combinators_only() {
        let path = "#\\31 abc .a\\ b > [title=\"x > y\"] span:nth-of-type(2)";
        let starts = step_starts(path);
        let steps: Vec<&str> = starts
            .iter()
            .zip(starts.iter().skip(1).chain([&path.len()]))
            .map(|(&a, &b)| path[a..b].trim_end_matches([' ', '>']))
            .collect();
        assert_eq!(steps, ["#\\31 abc", ".a\\ b", "[title=\"x > y\"]", "span:nth-of-type(2)"]);
    }

    // -----------------------------------------------------------------------------
    // Tokens

    #[test]
    fn generated_tokens_are_rejected() {
        for token in [
            "css-1x2y3z",
            "css-abc123-Button",
            "sc-bdVaJa",
            "kKqmGb",
            "_a1b2c3",
            "a1b2c3",
            "Button_primary__3xKz1",
            "styles_card__a1B2c",
            "jsx-2231823",
            "svelte-1uha8ag",
            "ng-tns-c12-3",
            "ember123",
            "jss42",
            "e1e1bc98",
            "item-123456",
            "x7f3a9c",
            "SOXJJCZQ",
            "",
        ] {
            assert!(looks_generated(token), "{token} should look generated");
        }
    }

    #[test]
    fn word_like_tokens_are_kept() {
        for token in [
            "header",
            "nav-link",
            "btn-primary",
            "primaryButton",
            "HTMLElement",
            "col-md-6",
            "mt-4",
            "h1",
            "2xl",
            "sm:px-6",
            "grid-cols-12",
            "is-active",
            "order_row",
            "html",
            "MuiButton-root",
            "a:b",
            "1abc",
            "productsGroupPrimary",
        ] {
            assert!(!looks_generated(token), "{token} should be kept");
        }
    }

    #[test]
    fn candidates_put_test_ids_first_and_skip_generated_tokens() {
        let facts = NodeFacts {
            tag: "button".into(),
            attributes: vec![
                ("class".into(), "sc-bdVaJa primary css-1x2y3z".into()),
                ("id".into(), "save-order".into()),
                ("data-testid".into(), "orders.save".into()),
                ("style".into(), "color: red".into()),
                ("aria-label".into(), "Save the order".into()),
            ],
        };
        let texts: Vec<String> = candidates(&facts).into_iter().map(|c| c.text).collect();
        assert_eq!(texts[0], "[data-testid=\"orders.save\"]");
        assert!(texts.contains(&"#save-order".to_owned()));
        assert!(texts.contains(&".primary".to_owned()));
        assert!(texts.contains(&"[aria-label=\"Save the order\"]".to_owned()));
        assert!(texts.contains(&"button".to_owned()));
        assert!(!texts.iter().any(|t| t.contains("sc-") || t.contains("css-") || t.contains("color")));
    }

    // -----------------------------------------------------------------------------
    // Paths

    /// html > body > (nav#main-nav > a.link × 3), (ul > li × 3 > span), div[data-testid=card] × 2 > h2.title
    fn sample_page() -> (FakeDom, Vec<usize>) {
        let mut dom = FakeDom::default();
        let html = dom.add("html", &[], None);
        let body = dom.add("body", &[], Some(html));
        let nav = dom.add("nav", &[("id", "main-nav")], Some(body));
        let links: Vec<usize> =
            (0..3).map(|_| dom.add("a", &[("class", "link css-1x2y3z")], Some(nav))).collect();
        let list = dom.add("ul", &[("class", "sc-bdVaJa")], Some(body));
        let items: Vec<usize> = (0..3).map(|_| dom.add("li", &[], Some(list))).collect();
        let spans: Vec<usize> = items.iter().map(|&li| dom.add("span", &[], Some(li))).collect();
        let cards: Vec<usize> = ["first", "second"]
            .iter()
            .map(|name| dom.add("div", &[("data-testid", &format!("card-{name}"))], Some(body)))
            .collect();
        let titles: Vec<usize> =
            cards.iter().map(|&c| dom.add("h2", &[("class", "title")], Some(c))).collect();
        let mut all = vec![html, body, nav, list];
        all.extend(links.iter().chain(&items).chain(&spans).chain(&cards).chain(&titles));
        (dom, all)
    }

    #[test]
    fn paths_prefer_test_ids_and_ids_and_use_positions_only_when_needed() {
        let (mut dom, nodes) = sample_page();
        assert_eq!(path_of(&mut dom, nodes[0]), "html");
        assert_eq!(path_of(&mut dom, nodes[2]), "#main-nav");
        // The anchor is dropped: the position alone is already unique.
        assert_eq!(path_of(&mut dom, nodes[4]), "a:nth-of-type(1)");
        assert_eq!(path_of(&mut dom, nodes[3]), "ul");
        let first_title = *nodes.last().unwrap() - 1;
        assert_eq!(path_of(&mut dom, first_title), "[data-testid=\"card-first\"] .title");
        for &node in &nodes {
            let path = path_of(&mut dom, node);
            assert_eq!(dom.resolve(&path), [node], "{path}");
            assert!(!path.contains("css-") && !path.contains("sc-"), "{path}");
        }
    }

    #[test]
    fn paths_cross_open_shadow_roots_one_segment_per_root() {
        let mut dom = FakeDom::default();
        let html = dom.add("html", &[], None);
        let body = dom.add("body", &[], Some(html));
        let host = dom.add("my-app", &[], Some(body));
        let inner_div = dom.add_in_shadow_of(host, "div", &[]);
        let _other_div = dom.add_in_shadow_of(host, "div", &[]);
        let inner_host = dom.add("my-widget", &[], Some(inner_div));
        let button = dom.add_in_shadow_of(inner_host, "button", &[("class", "save")]);
        let _second = dom.add_in_shadow_of(inner_host, "button", &[("class", "save")]);
        assert_eq!(path_of(&mut dom, inner_div), "my-app >>> div:nth-of-type(1)");
        let path = path_of(&mut dom, button);
        assert_eq!(shadow_parts(&path).len(), 3, "{path}");
        assert_eq!(dom.resolve(&path), [button], "{path}");
    }

    #[test]
    fn odd_ids_and_classes_are_escaped_and_still_found() {
        let mut dom = FakeDom::default();
        let html = dom.add("html", &[], None);
        let body = dom.add("body", &[], Some(html));
        for id in ["a:b", "1abc", "x y", "ünï✓", "-2x"] {
            let node = dom.add("div", &[("id", id)], Some(body));
            let path = path_of(&mut dom, node);
            assert_eq!(dom.resolve(&path), [node], "{path}");
            assert!(path.starts_with('#'), "{path}");
        }
    }

    #[test]
    fn an_exhausted_budget_still_gives_a_unique_path() {
        let (mut dom, nodes) = sample_page();
        dom.millis_per_query = MAX_MILLIS; // every query uses up the time budget
        let mut cache = SelectorCache::new();
        for &node in &nodes {
            let path = cache.css_path(&mut dom, &node).unwrap();
            assert_eq!(dom.resolve(&path), [node], "{path}");
        }
    }

    #[test]
    fn a_batch_past_its_time_stops_searching_but_still_gives_unique_paths() {
        let (mut dom, nodes) = sample_page();
        dom.millis_per_query = MAX_BATCH_MILLIS / 4.0;
        let mut cache = SelectorCache::new();
        let (first, rest) = nodes.split_at(4);
        for node in first {
            cache.css_path(&mut dom, node).unwrap();
        }
        let searched = dom.queries;
        for node in rest {
            let path = cache.css_path(&mut dom, node).unwrap();
            assert_eq!(dom.resolve(&path), [*node], "{path}");
        }
        assert_eq!(dom.queries, searched, "no search once the batch is out of time");
    }

    #[test]
    fn time_between_paths_does_not_use_up_the_batch() {
        // A batch spread over a lasso stroke: seconds pass between paths.
        let (mut dom, nodes) = sample_page();
        let mut spread = SelectorCache::new();
        let mut at_once = SelectorCache::new();
        let (mut fresh, _) = sample_page();
        for &node in &nodes {
            dom.idle_ms += MAX_BATCH_MILLIS;
            assert_eq!(spread.css_path(&mut dom, &node), at_once.css_path(&mut fresh, &node));
        }
    }

    #[test]
    fn a_unique_test_id_costs_one_query() {
        // The query that finds the test id unique also sees that it is the target's, so
        // the path is not asked again to verify it.
        let mut dom = FakeDom::default();
        let html = dom.add("html", &[], None);
        let body = dom.add("body", &[], Some(html));
        dom.add("button", &[("data-testid", "orders.other")], Some(body));
        let target = dom.add("button", &[("data-testid", "orders.export")], Some(body));
        let path = SelectorCache::new().css_path(&mut dom, &target).unwrap();
        assert_eq!(path, "[data-testid=\"orders.export\"]");
        assert_eq!(dom.queries, 1);
    }

    #[test]
    fn a_cache_asks_each_whole_tree_query_once() {
        let (mut dom, nodes) = sample_page();
        let mut cache = SelectorCache::new();
        for &node in &nodes {
            cache.css_path(&mut dom, &node).unwrap();
        }
        let cold = dom.queries;
        dom.queries = 0;
        for &node in &nodes {
            cache.css_path(&mut dom, &node).unwrap();
        }
        assert_eq!(dom.queries, 0, "a second pass is all cached (cold pass: {cold})");
    }

    // -----------------------------------------------------------------------------
    // Random pages

    /// One element of a random page: its tag and attributes drawn from small pools, so
    /// duplicates, generated tokens and missing hooks are all common.
    #[derive(Debug, Clone)]
    struct Spec {
        parent: usize,
        tag: usize,
        id: Option<usize>,
        classes: Vec<usize>,
        test_id: Option<usize>,
        /// Put the element at the top of a new shadow root of its parent.
        shadow: bool,
    }

    const TAGS: [&str; 5] = ["div", "span", "a", "li", "my-card"];
    const IDS: [&str; 5] = ["main", "a:b", "css-1x2y3z", "1abc", "main"];
    const CLASSES: [&str; 7] = ["card", "title", "sc-bdVaJa", "x y", "sm:px-6", "ünï", "_a1b2c3"];
    const TEST_IDS: [&str; 3] = ["row", "save", "row"];

    fn spec() -> impl Strategy<Value = Spec> {
        (
            any::<prop::sample::Index>(),
            0..TAGS.len(),
            prop::option::weighted(0.2, 0..IDS.len()),
            prop::collection::vec(0..CLASSES.len(), 0..3),
            prop::option::weighted(0.2, 0..TEST_IDS.len()),
            prop::bool::weighted(0.08),
        )
            .prop_map(|(parent, tag, id, classes, test_id, shadow)| Spec {
                parent: parent.index(usize::MAX),
                tag,
                id,
                classes,
                test_id,
                shadow,
            })
    }

    fn build(specs: &[Spec]) -> FakeDom {
        let mut dom = FakeDom::default();
        let html = dom.add("html", &[], None);
        dom.add("body", &[], Some(html));
        for spec in specs {
            let parent = 1 + spec.parent % (dom.nodes.len() - 1);
            let class = spec.classes.iter().map(|&c| CLASSES[c]).collect::<Vec<_>>().join(" ");
            let mut attributes = vec![("class", class.as_str())];
            attributes.extend(spec.id.map(|i| ("id", IDS[i])));
            attributes.extend(spec.test_id.map(|t| ("data-testid", TEST_IDS[t])));
            let shadow_taken = dom.nodes.iter().any(|n| n.tree == parent + 1);
            if spec.shadow && !shadow_taken {
                dom.add_in_shadow_of(parent, TAGS[spec.tag], &attributes);
            } else {
                dom.add(TAGS[spec.tag], &attributes, Some(parent));
            }
        }
        dom
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn every_element_gets_a_path_that_finds_exactly_it(
            specs in prop::collection::vec(spec(), 1..40),
            millis_per_query in prop_oneof![Just(0.0), Just(MAX_MILLIS / 3.0)],
        ) {
            let mut dom = build(&specs);
            dom.millis_per_query = millis_per_query;
            let mut cache = SelectorCache::new();
            for node in 0..dom.nodes.len() {
                let path = cache.css_path(&mut dom, &node).unwrap();
                prop_assert_eq!(dom.resolve(&path), vec![node], "{}", path);
                let fresh = css_path(&mut dom, &node).unwrap();
                prop_assert_eq!(dom.resolve(&fresh), vec![node], "{}", fresh);
            }
        }

        #[test]
        fn an_element_with_a_unique_compound_gets_no_positional_step(
            specs in prop::collection::vec(spec(), 1..40),
        ) {
            let mut dom = build(&specs);
            for node in 0..dom.nodes.len() {
                let tree = dom.nodes[node].tree;
                let has_unique = candidates(&dom.facts(&node)).iter().any(|c| dom.select(tree, &c.text) == [node]);
                let path = path_of(&mut dom, node);
                let inner = shadow_parts(&path).pop().unwrap();
                prop_assert!(!has_unique || !inner.contains(":nth-of-type"), "{}", path);
            }
        }
    }
}

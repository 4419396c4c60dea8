//! Tidy checks over the sources, in the style of rust-analyzer's `tidy`: run with the
//! native tests (`cargo test --workspace`, the first phase of `cargo xtask test`).
//!
//! - **Layers point one way.** Within a crate, sibling modules (the top-level ones, or
//!   the children of one module) must not refer to each other in a circle: a module's
//!   code, its submodules' included, that names `crate::b::…` (or `super::b::…`) depends
//!   on `b`. The crate root's own items (those `lib.rs` or `main.rs` defines, not what it
//!   re-exports) are a node beside the top-level modules, [`ROOT_NODE`]: a type every
//!   layer imports from the root while the root wires those layers together is a hub, a
//!   cycle like any other. A cycle is a layering decision nobody made; there are none
//!   today, and [`ALLOWED_CYCLES`] is where one would have to be argued.
//! - **Pure folders stay pure.** The files under a folder in [`PURE_FOLDERS`] name
//!   none of its browser-side paths (the extension's `src/rules/`: no `web_sys`,
//!   `js_sys`, `wasm_bindgen`, nor the `browser`, `content`, `ui` or `worker` folders).
//! - **Files stay readable.** No source file over [`MAX_LINES`] lines, but for those in
//!   [`ALLOWED_LONG_FILES`], which may not grow past their listed size.
//! - **Every file says what it is.** Each `.rs` file opens with a `//!` doc comment.
//! - **Docs are read in minutes.** README, ARCHITECTURE and BENCHMARKS stay within
//!   [`WORD_BUDGETS`], counting the words a reader reads (table bars and rules are
//!   none); detail and history belong in `docs/`.
//! - **Views are built node by node.** The extension's `src/` calls `leptos::view!` only
//!   in [`VIEW_WRAPPER`]; everywhere else a view is a `ui_view!`, so that no markup is
//!   parsed from a string (no `innerHTML` in the glue for `web-ext lint` to flag).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Folders of plain Rust, tested natively, each with the paths its code may not name
/// (its comments and unit tests aside): the extension's rules run in every context and
/// natively, so they stand on nothing browser-side (issue #32).
const PURE_FOLDERS: &[(&str, &[&str])] = &[(
    "src/rules",
    &["web_sys", "js_sys", "wasm_bindgen", "crate::browser", "crate::content", "crate::ui", "crate::worker"],
)];

/// The most lines a source file may have.
const MAX_LINES: usize = 800;

/// Files over [`MAX_LINES`] today, each with the most lines it may have until split.
const ALLOWED_LONG_FILES: &[(&str, usize)] =
    &[("server/tests/queue.rs", 900), ("src/content/capture/selector.rs", 1_500)];

/// The docs a newcomer reads first, each with the most words it may have (issue #32:
/// all three read in about 15 minutes).
const WORD_BUDGETS: &[(&str, usize)] =
    &[("README.md", 2_000), ("ARCHITECTURE.md", 3_500), ("BENCHMARKS.md", 1_500)];

/// The one file that calls `leptos::view!` itself: the `ui_view!` wrapper, which says why.
const VIEW_WRAPPER: &str = "src/ui/ui_view.rs";

/// Where `.rs` files are not the workspace's own: build output, npm packages, hidden
/// folders (`.git`), and the anchors' SWC plugin, a workspace of its own that the
/// other checks leave out too.
const NOT_OURS: &[&str] = &["target", "node_modules", "plugins/redline-anchors/swc"];

/// The crates whose modules are checked, by source root (the directory holding
/// `lib.rs` or `main.rs`). A root inside another (the server's binary) is a crate of
/// its own, left out of the outer one.
const CRATE_ROOTS: &[&str] =
    &["src", "protocol/src", "server/src", "server/src/bin/redline", "agent/src", "xtask/src"];

/// Module cycles allowed to exist, each the set of modules of one strongly connected
/// component, as `crate_root: parent::{a, b, …}` would name them, the parent empty for
/// top-level modules ([`ROOT_NODE`] among them for the root's own items). Issue #25
/// broke the server's, the agent's, the protocol crate's and the extension's module
/// cycles; one added here needs its reason beside it.
const ALLOWED_CYCLES: &[(&str, &str, &[&str])] = &[];

/// The name the crate root's own items go by among the top-level modules.
const ROOT_NODE: &str = "crate";

/// A crate's modules: each by its path below the crate root (`[]` for the root,
/// `["ops", "agent"]` for `ops/agent.rs`), with the module paths its code names.
struct Crate {
    modules: BTreeMap<Vec<String>, BTreeSet<Vec<String>>>,
    /// The items the root file defines itself (structs, functions, consts), not modules.
    root_items: BTreeSet<String>,
}

impl Crate {
    fn read(root: &Path) -> Crate {
        let mut files = Vec::new();
        collect_rs(root, &mut files);
        let inner_roots: Vec<PathBuf> = CRATE_ROOTS
            .iter()
            .map(|inner| workspace().join(inner))
            .filter(|inner| inner != root && inner.starts_with(root))
            .collect();
        files.retain(|file| !inner_roots.iter().any(|inner| file.starts_with(inner)));
        let mut modules = BTreeMap::new();
        let mut root_text = String::new();
        for file in files {
            let path = module_path(root, &file);
            let text = strip_comments(&std::fs::read_to_string(&file).unwrap_or_default());
            let refs = referenced_paths(&text, &path);
            if path.is_empty() {
                root_text = text;
            }
            modules.insert(path, refs);
        }
        // The root names its modules without `crate::` too (`ops::ClaimQueue`).
        let top: BTreeSet<String> = modules.keys().filter(|p| p.len() == 1).map(|p| p[0].clone()).collect();
        let root_refs = bare_module_paths(&root_text, &top);
        modules.entry(Vec::new()).or_default().extend(root_refs);
        Crate { modules, root_items: defined_items(&root_text) }
    }

    /// The child of `parent` that `path` is in (itself or a descendant), if any.
    fn child_of<'p>(parent: &[String], path: &'p [String]) -> Option<&'p String> {
        (path.len() > parent.len() && path.starts_with(parent)).then(|| &path[parent.len()])
    }

    /// The node `path` (a module's, or a path it names) is among `parent`'s children:
    /// the child module it is in, else at the top [`ROOT_NODE`] for the root and its own
    /// items (a module and a root function may share a name, as the agent's `run` does:
    /// the name is taken for the module's).
    fn node_under(&self, parent: &[String], path: &[String]) -> Option<String> {
        let module = Crate::child_of(parent, path)
            .filter(|child| self.modules.keys().any(|m| Crate::child_of(parent, m) == Some(*child)));
        if let Some(child) = module {
            return Some(child.clone());
        }
        let at_root_item =
            parent.is_empty() && path.first().is_none_or(|name| self.root_items.contains(name));
        at_root_item.then(|| ROOT_NODE.to_owned())
    }

    /// The cycles among `parent`'s children, each as its sorted member names.
    fn cycles_under(&self, parent: &[String]) -> Vec<Vec<String>> {
        let mut edges: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for (path, refs) in &self.modules {
            let Some(from) = self.node_under(parent, path) else { continue };
            for target in refs {
                let Some(to) = self.node_under(parent, target) else { continue };
                if to != from {
                    edges.entry(from.clone()).or_default().insert(to);
                }
            }
        }
        strongly_connected(&edges).into_iter().filter(|c| c.len() > 1).collect()
    }

    /// Every module that has children, the root included.
    fn parents(&self) -> BTreeSet<Vec<String>> {
        self.modules.keys().filter(|p| !p.is_empty()).map(|p| p[..p.len() - 1].to_vec()).collect()
    }
}

fn collect_rs(dir: &Path, out: &mut Vec<PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_name().to_string_lossy().starts_with('.') || NOT_OURS.iter().any(|n| path.ends_with(n))
        {
            continue;
        }
        if path.is_dir() {
            collect_rs(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// The `.rs` files under `folder` (from the workspace root), each as its path from the
/// root and its text: what the checks below read.
#[cfg(test)]
fn sources_in(folder: &str) -> Vec<(String, String)> {
    let mut files = Vec::new();
    collect_rs(&workspace().join(folder), &mut files);
    files
        .into_iter()
        .map(|file| {
            let name = file.strip_prefix(workspace()).unwrap_or(&file).to_string_lossy().into_owned();
            (name, std::fs::read_to_string(&file).unwrap_or_default())
        })
        .collect()
}

/// `src/ops/agent.rs` → `["ops", "agent"]`; `lib.rs`, `main.rs` → `[]`; `x/mod.rs` → `["x"]`.
fn module_path(root: &Path, file: &Path) -> Vec<String> {
    let relative = file.strip_prefix(root).unwrap_or(file).with_extension("");
    let mut parts: Vec<String> = relative.iter().map(|p| p.to_string_lossy().into_owned()).collect();
    if matches!(parts.last().map(String::as_str), Some("mod" | "lib" | "main")) {
        parts.pop();
    }
    parts
}

/// The source without comments and without its unit tests (an inline `mod` at the end
/// under a `#[cfg(…)]` naming `test`, such as `#[cfg(test)]` or `#[cfg(all(test,
/// target_arch = "wasm32"))]`; a test module in a file of its own ends nothing): a path
/// named in a doc comment is no dependency, and a test may set up its case through a
/// higher layer.
fn strip_comments(text: &str) -> String {
    let lines: Vec<&str> = text.lines().map(|line| line.split("//").next().unwrap_or("")).collect();
    let is_test_attribute = |line: &str| line.starts_with("#[cfg(") && line.contains("test");
    let tests = lines
        .windows(2)
        .position(|pair| is_test_attribute(pair[0]) && pair[1].starts_with("mod ") && !pair[1].ends_with(';'))
        .unwrap_or(lines.len());
    lines[..tests].join("\n")
}

/// The paths the root file's code names through a top-level module's bare name
/// (`ops::ClaimQueue`, `self::client::exit`), as [`referenced_paths`] reads them.
fn bare_module_paths(text: &str, top: &BTreeSet<String>) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for module in top {
        let anchor = format!("{module}::");
        let mut rest = text;
        while let Some(i) = rest.find(&anchor) {
            let before = rest[..i].trim_end_matches("self::");
            let preceded_by_ident =
                before.chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
            rest = &rest[i..];
            if !preceded_by_ident {
                out.extend(expand(rest));
            }
            rest = &rest[anchor.len()..];
        }
    }
    out
}

/// The names of the items a root file defines at its top level (no indent): its
/// structs, enums, unions, traits, type aliases, functions, consts, statics, macros and
/// inline modules; not its `mod x;` files nor what it re-exports.
fn defined_items(text: &str) -> BTreeSet<String> {
    const KINDS: &[&str] = &[
        "struct ",
        "enum ",
        "union ",
        "trait ",
        "type ",
        "fn ",
        "const ",
        "static ",
        "macro_rules! ",
        "mod ",
    ];
    let mut out = BTreeSet::new();
    for line in text.lines() {
        let mut rest = line;
        if let Some(after) = rest.strip_prefix("pub") {
            rest =
                after.strip_prefix(' ').or_else(|| after.find(") ").map(|i| &after[i + 2..])).unwrap_or(rest);
        }
        for qualifier in ["async ", "unsafe "] {
            rest = rest.strip_prefix(qualifier).unwrap_or(rest);
        }
        if let Some(after) = rest.strip_prefix("const fn ") {
            rest = &rest[rest.len() - after.len() - 3..];
        }
        let Some(kind) = KINDS.iter().find(|k| rest.starts_with(**k)) else { continue };
        let rest = &rest[kind.len()..];
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        let is_module_file = *kind == "mod " && rest[end..].trim_start().starts_with(';');
        if end > 0 && !is_module_file {
            out.insert(rest[..end].to_owned());
        }
    }
    out
}

/// The module paths (as far as they go: the item at the end is kept, and only prefixes
/// that are modules matter later) that `text`, the code of module `at`, names through
/// `crate::` or `super::`, `use` groups (`crate::{a, b::c}`) expanded.
fn referenced_paths(text: &str, at: &[String]) -> BTreeSet<Vec<String>> {
    let mut out = BTreeSet::new();
    for (anchor, base) in [("crate::", Vec::new()), ("super::", at[..at.len().saturating_sub(1)].to_vec())] {
        let mut rest = text;
        while let Some(i) = rest.find(anchor) {
            let preceded_by_ident =
                rest[..i].chars().next_back().is_some_and(|c| c.is_alphanumeric() || c == '_' || c == ':');
            rest = &rest[i + anchor.len()..];
            if preceded_by_ident {
                continue;
            }
            for path in expand(rest) {
                let mut full = base.clone();
                full.extend(path);
                out.insert(full);
            }
        }
    }
    out
}

/// The paths written at the start of `text`: `a::b::C` → `[[a, b, C]]`;
/// `{a::x, b}` → `[[a, x], [b]]`.
fn expand(text: &str) -> Vec<Vec<String>> {
    let text = text.trim_start();
    if let Some(inner) = text.strip_prefix('{') {
        return split_group(inner).into_iter().flat_map(expand).collect();
    }
    let mut path = Vec::new();
    let mut rest = text;
    loop {
        let end = rest.find(|c: char| !(c.is_alphanumeric() || c == '_')).unwrap_or(rest.len());
        if end == 0 {
            break;
        }
        path.push(rest[..end].to_owned());
        rest = &rest[end..];
        match rest.strip_prefix("::") {
            Some(after) if after.trim_start().starts_with('{') => {
                return expand(after).into_iter().map(|tail| [path.clone(), tail].concat()).collect();
            }
            Some(after) => rest = after,
            None => break,
        }
    }
    if path.is_empty() { Vec::new() } else { vec![path] }
}

/// The top-level items of a `use` group whose `{` was just read, up to its `}`.
fn split_group(text: &str) -> Vec<&str> {
    let (mut depth, mut start, mut items) = (0usize, 0usize, Vec::new());
    for (i, c) in text.char_indices() {
        match c {
            '{' => depth += 1,
            '}' if depth == 0 => {
                items.push(&text[start..i]);
                return items;
            }
            '}' => depth -= 1,
            ',' if depth == 0 => {
                items.push(&text[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items
}

/// Tarjan's strongly connected components, each sorted.
fn strongly_connected(edges: &BTreeMap<String, BTreeSet<String>>) -> Vec<Vec<String>> {
    struct Walk<'a> {
        edges: &'a BTreeMap<String, BTreeSet<String>>,
        index: BTreeMap<&'a str, usize>,
        low: BTreeMap<&'a str, usize>,
        stack: Vec<&'a str>,
        on_stack: BTreeSet<&'a str>,
        out: Vec<Vec<String>>,
    }
    impl<'a> Walk<'a> {
        fn visit(&mut self, node: &'a str) {
            let i = self.index.len();
            self.index.insert(node, i);
            self.low.insert(node, i);
            self.stack.push(node);
            self.on_stack.insert(node);
            for next in self.edges.get(node).into_iter().flatten() {
                if !self.index.contains_key(next.as_str()) {
                    self.visit(next);
                    let low = self.low[node].min(self.low[next.as_str()]);
                    self.low.insert(node, low);
                } else if self.on_stack.contains(next.as_str()) {
                    let low = self.low[node].min(self.index[next.as_str()]);
                    self.low.insert(node, low);
                }
            }
            if self.low[node] == self.index[node] {
                let mut component = Vec::new();
                while let Some(top) = self.stack.pop() {
                    self.on_stack.remove(top);
                    component.push(top.to_owned());
                    if top == node {
                        break;
                    }
                }
                component.sort();
                self.out.push(component);
            }
        }
    }
    let mut walk = Walk {
        edges,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for node in edges.keys() {
        if !walk.index.contains_key(node.as_str()) {
            walk.visit(node);
        }
    }
    walk.out
}

/// Words a reader reads: runs between whitespace and table bars holding a letter or a
/// digit, so a table counts its cells' words however tightly it is written, and its bars,
/// rules (`---`) and lone dashes count nothing.
fn word_count(text: &str) -> usize {
    text.split(|c: char| c.is_whitespace() || c == '|')
        .filter(|run| run.chars().any(char::is_alphanumeric))
        .count()
}

/// What to report when `name`, whose text is `text`, is over its `budget` of words.
fn over_word_budget(name: &str, text: &str, budget: usize) -> Option<String> {
    let words = word_count(text);
    (words > budget).then(|| format!("{name}: {words} words (at most {budget})"))
}

/// Whether a source file opens with its module's doc comment, on its first line.
fn opens_with_module_doc(text: &str) -> bool {
    text.starts_with("//!")
}

/// Which of `forbidden` the code of `text` names, each as a whole path (`crate::worker`
/// is not `crate::worker_call`), comments and unit tests left out.
fn forbidden_names<'f>(text: &str, forbidden: &[&'f str]) -> Vec<&'f str> {
    let code = strip_comments(text);
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    forbidden
        .iter()
        .copied()
        .filter(|name| {
            code.match_indices(name).any(|(i, _)| {
                !code[..i].chars().next_back().is_some_and(is_ident)
                    && !code[i + name.len()..].chars().next().is_some_and(is_ident)
            })
        })
        .collect()
}

/// The lines (from 1) where the code of `text` calls `view!` itself, bare or by a path
/// (`leptos::view!`); `ui_view!` is another macro, and comments and unit tests are left out.
fn bare_views(text: &str) -> Vec<usize> {
    let is_ident = |c: char| c.is_alphanumeric() || c == '_';
    let calls_view = |line: &str| {
        line.match_indices("view").any(|(i, name)| {
            !line[..i].chars().next_back().is_some_and(is_ident)
                && line[i + name.len()..].trim_start().starts_with('!')
        })
    };
    strip_comments(text)
        .lines()
        .enumerate()
        .filter(|(_, line)| calls_view(line))
        .map(|(i, _)| i + 1)
        .collect()
}

fn workspace() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().expect("xtask sits in the workspace").to_owned()
}

#[test]
fn no_module_cycles_but_the_listed_ones() {
    let mut found = Vec::new();
    for root in CRATE_ROOTS {
        let krate = Crate::read(&workspace().join(root));
        for parent in krate.parents() {
            for cycle in krate.cycles_under(&parent) {
                found.push((root.to_string(), parent.join("::"), cycle));
            }
        }
    }
    let allowed: Vec<(String, String, Vec<String>)> = ALLOWED_CYCLES
        .iter()
        .map(|(root, parent, members)| {
            (root.to_string(), parent.to_string(), members.iter().map(|m| m.to_string()).collect())
        })
        .collect();
    let new: Vec<_> = found.iter().filter(|c| !allowed.contains(c)).collect();
    let gone: Vec<_> = allowed.iter().filter(|c| !found.contains(c)).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "module cycles changed.\nnew (break them: move what both sides need to a lower module): {new:#?}\n\
         no longer there (remove them from ALLOWED_CYCLES): {gone:#?}"
    );
}

#[test]
fn pure_folders_name_nothing_browser_side() {
    let mut found = Vec::new();
    for (folder, forbidden) in PURE_FOLDERS {
        let sources = sources_in(folder);
        assert!(!sources.is_empty(), "{folder} holds no .rs file: is PURE_FOLDERS right?");
        for (path, text) in sources {
            found.extend(forbidden_names(&text, forbidden).into_iter().map(|name| format!("{path}: {name}")));
        }
    }
    assert!(
        found.is_empty(),
        "pure code names the browser (move the call to an adapter, pass its result in):\n{}",
        found.join("\n")
    );
}

#[test]
fn names_a_forbidden_path_only_in_code_and_whole() {
    let forbidden = ["web_sys", "crate::worker"];
    assert_eq!(forbidden_names("use web_sys::Element;\n", &forbidden), ["web_sys"]);
    assert_eq!(forbidden_names("let t = crate::worker::badge::poll();\n", &forbidden), ["crate::worker"]);
    assert!(forbidden_names("use crate::worker_call::StartCircle;\n", &forbidden).is_empty());
    assert!(
        forbidden_names("//! Unlike web_sys, pure.\nfn f() {} // crate::worker\n", &forbidden).is_empty()
    );
    assert!(forbidden_names("use my_web_sys::X;\n", &forbidden).is_empty());
    let test_only = "fn f() {}\n#[cfg(test)]\nmod tests {\n    use web_sys::Element;\n}\n";
    assert!(forbidden_names(test_only, &forbidden).is_empty(), "a unit test may use a higher layer");
}

#[test]
fn no_file_over_the_line_limit() {
    let mut over = Vec::new();
    for root in ["src", "protocol", "server", "agent", "xtask", "tests"] {
        for (name, text) in sources_in(root) {
            let lines = text.lines().count();
            let limit = ALLOWED_LONG_FILES.iter().find(|(n, _)| *n == name).map_or(MAX_LINES, |(_, l)| *l);
            if lines > limit {
                over.push(format!("{name}: {lines} lines (at most {limit})"));
            }
        }
    }
    assert!(over.is_empty(), "split these files (a module per concern):\n{}", over.join("\n"));
}

#[test]
fn views_go_through_the_wrapper() {
    let mut found = Vec::new();
    for (name, text) in sources_in("src") {
        if name != VIEW_WRAPPER {
            found.extend(bare_views(&text).into_iter().map(|line| format!("{name}:{line}")));
        }
    }
    let wrapper = std::fs::read_to_string(workspace().join(VIEW_WRAPPER)).unwrap_or_default();
    assert_eq!(bare_views(&wrapper).len(), 1, "{VIEW_WRAPPER} calls `leptos::view!` once");
    found.sort();
    assert!(
        found.is_empty(),
        "write these as `ui_view!` (no HTML parsed from strings; {VIEW_WRAPPER} says why):\n{}",
        found.join("\n")
    );
}

#[test]
fn finds_a_bare_view_but_not_the_wrapper_s() {
    let text = "let a = view! { <p/> };\nlet b = leptos::view!{ <p/> };\nlet c = ui_view! { <p/> };\n\
                // view! { <p/> }\nlet d = view ! { <p/> };\nlet preview = 1;\n";
    assert_eq!(bare_views(text), [1, 2, 5]);
    let test_only = "fn f() {}\n#[cfg(test)]\nmod tests {\n    fn v() { view! { <p/> }; }\n}\n";
    assert!(bare_views(test_only).is_empty(), "a unit test's view ships in no module");
}

#[test]
fn reads_use_groups_and_super_paths() {
    let refs = referenced_paths(
        "use crate::{queue::{Ctx, Item}, rpc::Op};\nuse super::claim::X;\nlet a = crate::db::f();",
        &["ops".to_owned(), "agent".to_owned()],
    );
    let names: BTreeSet<String> = refs.iter().map(|p| p.join("::")).collect();
    for expected in ["queue::Ctx", "queue::Item", "rpc::Op", "ops::claim::X", "db::f"] {
        assert!(names.contains(expected), "{expected} missing from {names:?}");
    }
}

#[test]
fn reads_the_root_files_own_items() {
    let items = defined_items(
        "pub mod store;\nmod ops;\npub use crate::store::Store;\npub struct AppState {\n    pub store: Store,\n}\n\
         pub(crate) async fn serve() {}\nconst fn limit() -> u8 { 1 }\n#[cfg(test)]\npub(crate) mod held {\n    fn inner() {}\n}\n\
         pub const QUOTA: u64 = 1;",
    );
    let items: Vec<&str> = items.iter().map(String::as_str).collect();
    assert_eq!(items, ["AppState", "QUOTA", "held", "limit", "serve"]);
}

#[test]
fn a_root_item_every_layer_imports_is_a_node_of_the_cycle() {
    let krate = Crate {
        modules: [
            (
                vec![],
                bare_module_paths(
                    "let q = ops::Queue::new(); self::http::app()",
                    &["http", "ops"].map(String::from).into(),
                ),
            ),
            (vec!["ops".to_owned()], [vec!["AppState".to_owned()]].into()),
            (vec!["http".to_owned()], [vec!["Store".to_owned()]].into()),
        ]
        .into(),
        root_items: ["AppState".to_owned()].into(),
    };
    assert_eq!(krate.cycles_under(&[]), vec![vec![ROOT_NODE.to_owned(), "ops".to_owned()]]);
}

#[test]
fn finds_a_cycle_and_only_it() {
    let edges: BTreeMap<String, BTreeSet<String>> =
        [("a", &["b"][..]), ("b", &["c"]), ("c", &["a"]), ("d", &["a"])]
            .into_iter()
            .map(|(k, v)| (k.to_owned(), v.iter().map(|s| s.to_string()).collect()))
            .collect();
    let cycles: Vec<_> = strongly_connected(&edges).into_iter().filter(|c| c.len() > 1).collect();
    assert_eq!(cycles, vec![vec!["a".to_owned(), "b".to_owned(), "c".to_owned()]]);
}

#[test]
fn every_file_opens_with_a_module_doc() {
    let mut files = Vec::new();
    collect_rs(&workspace(), &mut files);
    let mut missing: Vec<String> = files
        .iter()
        .filter(|file| !opens_with_module_doc(&std::fs::read_to_string(file).unwrap_or_default()))
        .map(|file| file.strip_prefix(workspace()).unwrap_or(file).to_string_lossy().into_owned())
        .collect();
    missing.sort();
    assert!(files.len() > 100, "found only {} .rs files: is the walk right?", files.len());
    assert!(
        missing.is_empty(),
        "open these with a `//!` comment saying what the file is:\n{}",
        missing.join("\n")
    );
}

#[test]
fn docs_within_their_word_budgets() {
    let over: Vec<String> = WORD_BUDGETS
        .iter()
        .filter_map(|(name, budget)| {
            let text =
                std::fs::read_to_string(workspace().join(name)).unwrap_or_else(|e| panic!("{name}: {e}"));
            over_word_budget(name, &text, *budget)
        })
        .collect();
    assert!(over.is_empty(), "cut these (detail and history go to docs/):\n{}", over.join("\n"));
}

#[test]
fn counts_the_words_a_reader_reads() {
    assert_eq!(word_count(""), 0);
    assert_eq!(word_count(" \n\t "), 0);
    assert_eq!(word_count("one\ttwo\n\n  three — |a|b|\n"), 5);
    assert_eq!(word_count("|a|b c|\n|---|---|\n| 1 ms | — |"), 5, "bars, rules and dashes are no words");
}

#[test]
fn a_doc_over_its_budget_is_named_with_its_count() {
    assert_eq!(over_word_budget("X.md", "a b c", 3), None);
    assert_eq!(over_word_budget("X.md", "a b\nc d", 3), Some("X.md: 4 words (at most 3)".to_owned()));
}

#[test]
fn a_module_doc_comes_first() {
    assert!(opens_with_module_doc("//! What this file is.\nuse std::fs;\n"));
    assert!(!opens_with_module_doc("use std::fs;\n//! Too late.\n"));
    assert!(!opens_with_module_doc("/// An item's doc.\nfn f() {}\n"));
    assert!(!opens_with_module_doc("// A plain comment.\n"));
    assert!(!opens_with_module_doc(""));
}

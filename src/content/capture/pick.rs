//! Which of the elements under the lasso count as circled. Pure: the page adapter
//! supplies each candidate's box and family, this decides.

use redline_protocol::{Point, Rect};

use super::geometry::Polygon;

/// Share of an element's box the outline must cover for the element to count.
pub const MIN_COVERAGE: f64 = 0.75;
/// Boxes smaller than this (CSS px², e.g. 32×32) count when their centre is inside,
/// since a hand-drawn circle rarely covers three quarters of an icon.
pub const SMALL_AREA: f64 = 32.0 * 32.0;
/// The protocol's limit on elements per capture.
pub const MAX_ELEMENTS: usize = 500;

/// One element under the lasso, as the page adapter saw it.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    pub rect: Rect,
    /// Index of the nearest ancestor that is also a candidate, if any.
    pub parent: Option<usize>,
    /// Whether the element carries its own `data-testid`.
    pub has_test_id: bool,
    /// Whether Redline cannot read what is inside it: the host of a closed shadow root,
    /// or a frame of an origin it may not enter.
    pub opaque: bool,
    /// Whether it is a document's `html` or `body`, which a circle around a short page
    /// covers whole without meaning it.
    pub page_root: bool,
}

/// Whether the outline circles an element with box `rect`.
pub fn qualifies(polygon: &Polygon, rect: Rect) -> bool {
    let area = rect.width * rect.height;
    if area <= 0.0 {
        return false;
    }
    if area <= SMALL_AREA {
        let centre = redline_protocol::Point { x: rect.x + rect.width / 2.0, y: rect.y + rect.height / 2.0 };
        if polygon.contains(centre) {
            return true;
        }
    }
    polygon.coverage(rect) >= MIN_COVERAGE
}

/// Whether an element Redline cannot read inside counts: when it [`qualifies`], or when
/// the middle of the outline's bounds (`centre`) is in its box, since then what was
/// circled is inside it and the element is the nearest Redline can name.
fn opaque_qualifies(polygon: &Polygon, rect: Rect, centre: Option<Point>) -> bool {
    let inside = |c: Point| {
        c.x >= rect.x && c.x <= rect.x + rect.width && c.y >= rect.y && c.y <= rect.y + rect.height
    };
    rect.width * rect.height > 0.0 && centre.is_some_and(inside) || qualifies(polygon, rect)
}

/// The circled elements among `candidates`, as indices in document order:
/// - an element counts when [`qualifies`] says so, and one Redline cannot read inside
///   also when the circle's middle is in it;
/// - nested picks collapse to the outermost qualifying ancestor that carries a test id
///   (circling a whole form files the form, not each of its fields);
/// - an element without a test id inside a picked ancestor adds nothing and is dropped;
/// - a page root (`html`, `body`) counts only when nothing below it does: a circle
///   around a whole short page means what is on it, not the document.
///
/// At most [`MAX_ELEMENTS`], outermost first. A candidate's parent must come before it
/// (the page adapter lists ancestors first). One pass, top down: below a qualifying
/// ancestor with a test id nothing can count, so the coverage of those elements — most
/// of a circled card's insides — is never computed.
pub fn circled(polygon: &Polygon, candidates: &[Candidate]) -> Vec<usize> {
    #[derive(Clone, Copy, Default)]
    struct Above {
        qualified: bool,
        named_qualified: bool,
        depth: usize,
    }
    // What each candidate's ancestors (itself included) say to its descendants. Page
    // roots say nothing: they are set aside, and picked only if nothing else is.
    let mut seen: Vec<Above> = Vec::with_capacity(candidates.len());
    let mut picked = Vec::new();
    let mut roots = Vec::new();
    let centre = polygon.bounds().map(|b| Point { x: b.x + b.width / 2.0, y: b.y + b.height / 2.0 });
    for (i, candidate) in candidates.iter().enumerate() {
        let above = candidate.parent.map(|p| {
            debug_assert!(p < i, "ancestors come first");
            Above { depth: seen[p].depth + 1, ..seen[p] }
        });
        let above = above.unwrap_or_default();
        let qualified = !above.named_qualified
            && if candidate.opaque {
                opaque_qualifies(polygon, candidate.rect, centre)
            } else {
                qualifies(polygon, candidate.rect)
            };
        if candidate.page_root {
            if qualified {
                roots.push(i);
            }
            seen.push(above);
            continue;
        }
        if qualified && (candidate.has_test_id || !above.qualified) {
            picked.push(i);
        }
        seen.push(Above {
            qualified: above.qualified || qualified,
            named_qualified: above.named_qualified || (qualified && candidate.has_test_id),
            depth: above.depth,
        });
    }
    if picked.is_empty() {
        // The innermost root that counts: a circle around an empty page is its body.
        picked.extend(roots.last());
    }
    picked.sort_by_key(|&i| seen[i].depth);
    picked.truncate(MAX_ELEMENTS);
    picked.sort_unstable();
    picked
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rect(x: f64, y: f64, width: f64, height: f64) -> Rect {
        Rect { x, y, width, height }
    }

    fn square(x: f64, y: f64, side: f64) -> Polygon {
        Polygon::new(vec![
            Point { x, y },
            Point { x: x + side, y },
            Point { x: x + side, y: y + side },
            Point { x, y: y + side },
        ])
    }

    fn candidate(rect: Rect, parent: Option<usize>, has_test_id: bool) -> Candidate {
        Candidate { rect, parent, has_test_id, opaque: false, page_root: false }
    }

    #[test]
    fn three_quarters_of_the_box_must_be_inside() {
        let lasso = square(0.0, 0.0, 100.0);
        assert!(qualifies(&lasso, rect(10.0, 10.0, 80.0, 80.0)));
        assert!(qualifies(&lasso, rect(25.0, 0.0, 100.0, 100.0)), "exactly 75 %");
        assert!(!qualifies(&lasso, rect(30.0, 0.0, 100.0, 100.0)));
    }

    #[test]
    fn small_boxes_count_by_their_centre() {
        let lasso = square(0.0, 0.0, 100.0);
        assert!(qualifies(&lasso, rect(85.0, 40.0, 20.0, 20.0)), "a quarter outside, centre inside");
        assert!(!qualifies(&lasso, rect(95.0, 40.0, 20.0, 20.0)), "centre outside");
        assert!(!qualifies(&lasso, rect(10.0, 10.0, 0.0, 0.0)), "zero-size boxes never count");
    }

    #[test]
    fn an_element_redline_cannot_read_inside_counts_when_the_circle_is_in_it() {
        // A button circled inside a closed shadow root's host, or a frame of another origin.
        let lasso = square(120.0, 40.0, 60.0);
        let page = candidate(rect(0.0, 0.0, 1000.0, 800.0), None, false);
        let host = Candidate { opaque: true, ..candidate(rect(100.0, 20.0, 400.0, 300.0), Some(0), false) };
        assert_eq!(circled(&lasso, &[page.clone(), host.clone()]), [1]);
        let readable = Candidate { opaque: false, ..host.clone() };
        assert_eq!(
            circled(&lasso, &[page.clone(), readable]),
            Vec::<usize>::new(),
            "a readable one must qualify"
        );
        // A circle beside it, only grazing it, does not pick it.
        let beside = square(60.0, 40.0, 60.0);
        assert_eq!(circled(&beside, &[page.clone(), host.clone()]), Vec::<usize>::new());
        // Inside a circled ancestor with a test id it collapses like any other element.
        let card = candidate(rect(110.0, 30.0, 80.0, 80.0), Some(0), true);
        let small_host =
            Candidate { opaque: true, ..candidate(rect(130.0, 50.0, 40.0, 40.0), Some(1), false) };
        assert_eq!(circled(&square(100.0, 20.0, 100.0), &[page, card, small_host]), [1]);
    }

    #[test]
    fn a_whole_short_page_circled_files_what_is_on_it_not_html_or_body() {
        let lasso = square(0.0, 0.0, 1000.0);
        let root = |rect, parent| Candidate { page_root: true, ..candidate(rect, parent, false) };
        // html, then body inside it, then the one element of the page.
        let html = root(rect(0.0, 0.0, 800.0, 600.0), None);
        let body = root(rect(8.0, 8.0, 784.0, 584.0), Some(0));
        let card = candidate(rect(8.0, 8.0, 300.0, 200.0), Some(1), false);
        assert_eq!(circled(&lasso, &[html.clone(), body.clone(), card.clone()]), [2]);
        // The same with a closed shadow root's host, and html found by the point samples
        // apart from the walk's body (so neither is the other's parent); a test id on the
        // body changes nothing.
        let host = Candidate { opaque: true, ..card.clone() };
        let named_body = Candidate { has_test_id: true, parent: None, ..body.clone() };
        let lone_html = root(rect(0.0, 0.0, 800.0, 600.0), None);
        assert_eq!(circled(&lasso, &[named_body, Candidate { parent: Some(0), ..host }, lone_html]), [1]);
        // Several elements on the page: each outermost one, never the roots.
        let footer = candidate(rect(8.0, 300.0, 300.0, 50.0), Some(1), false);
        let button = candidate(rect(20.0, 20.0, 50.0, 20.0), Some(2), true);
        assert_eq!(circled(&lasso, &[html.clone(), body.clone(), card, button, footer]), [2, 3, 4]);
        // An empty page circled: its body.
        assert_eq!(circled(&lasso, &[html, body]), [1]);
    }

    #[test]
    fn a_circled_form_collapses_to_the_form() {
        let lasso = square(0.0, 0.0, 200.0);
        let candidates = [
            candidate(rect(0.0, 0.0, 1000.0, 1000.0), None, false), // body: mostly outside
            candidate(rect(10.0, 10.0, 150.0, 150.0), Some(0), true), // form with a test id
            candidate(rect(20.0, 20.0, 100.0, 30.0), Some(1), true), // field with a test id
            candidate(rect(20.0, 60.0, 100.0, 30.0), Some(1), false), // label
        ];
        assert_eq!(circled(&lasso, &candidates), vec![1]);
    }

    #[test]
    fn inside_an_unnamed_container_each_named_child_stays() {
        let lasso = square(0.0, 0.0, 200.0);
        let candidates = [
            candidate(rect(10.0, 10.0, 150.0, 150.0), None, false), // a plain div
            candidate(rect(20.0, 20.0, 100.0, 30.0), Some(0), true), // button
            candidate(rect(20.0, 60.0, 100.0, 30.0), Some(0), false), // text span
            candidate(rect(20.0, 100.0, 100.0, 30.0), Some(0), true), // link
        ];
        assert_eq!(circled(&lasso, &candidates), vec![0, 1, 3]);
    }

    #[test]
    fn a_button_circled_alone_is_the_button_not_its_page() {
        let lasso = square(100.0, 100.0, 60.0);
        let candidates = [
            candidate(rect(0.0, 0.0, 800.0, 600.0), None, true), // page root component
            candidate(rect(110.0, 110.0, 40.0, 30.0), Some(0), true), // the button
            candidate(rect(115.0, 115.0, 10.0, 10.0), Some(1), false), // its icon
        ];
        assert_eq!(circled(&lasso, &candidates), vec![1]);
    }

    #[test]
    fn no_more_than_the_protocol_allows() {
        let lasso = square(0.0, 0.0, 10_000.0);
        let candidates: Vec<Candidate> =
            (0..800).map(|i| candidate(rect(i as f64 * 10.0, 0.0, 5.0, 5.0), None, true)).collect();
        let picked = circled(&lasso, &candidates);
        assert_eq!(picked.len(), MAX_ELEMENTS);
        assert!(picked.windows(2).all(|w| w[0] < w[1]), "document order");
    }

    /// Property tests run natively only (see Cargo.toml).
    #[cfg(not(target_arch = "wasm32"))]
    mod properties {
        use super::*;
        use proptest::prelude::*;

        /// The rule as stated, every coverage computed: what the one pass must agree with.
        fn circled_as_stated(polygon: &Polygon, candidates: &[Candidate]) -> Vec<usize> {
            let counts = |c: &Candidate| qualifies(polygon, c.rect);
            let qualified: Vec<bool> = candidates.iter().map(|c| !c.page_root && counts(c)).collect();
            let ancestors = |mut index: usize| {
                std::iter::from_fn(move || {
                    index = candidates[index].parent?;
                    Some(index)
                })
            };
            let mut picked: Vec<usize> = (0..candidates.len())
                .filter(|&i| qualified[i])
                .filter(|&i| {
                    let covered_by_ancestor = ancestors(i).any(|a| qualified[a] && candidates[a].has_test_id);
                    let adds_nothing = !candidates[i].has_test_id && ancestors(i).any(|a| qualified[a]);
                    !covered_by_ancestor && !adds_nothing
                })
                .collect();
            if picked.is_empty() {
                picked.extend(
                    (0..candidates.len()).rev().find(|&i| candidates[i].page_root && counts(&candidates[i])),
                );
            }
            picked.sort_by_key(|&i| ancestors(i).count());
            picked.truncate(MAX_ELEMENTS);
            picked.sort_unstable();
            picked
        }

        proptest! {
            #[test]
            fn one_pass_agrees_with_the_rule_as_stated(
                nodes in proptest::collection::vec((0usize..1000, 0.0..300.0f64, 0.0..300.0f64, 1.0..200.0f64, 1.0..200.0f64, any::<bool>()), 1..200),
                roots in 0usize..3,
                side in 20.0..300.0f64,
            ) {
                let lasso = square(40.0, 40.0, side);
                let candidates: Vec<Candidate> = nodes
                    .iter()
                    .enumerate()
                    .map(|(i, &(p, x, y, w, h, named))| {
                        // The first `roots` are page roots, each inside the one before,
                        // as html and body are.
                        if i < roots {
                            let parent = i.checked_sub(1);
                            Candidate { page_root: true, ..candidate(rect(x, y, w, h), parent, named) }
                        } else {
                            candidate(rect(x, y, w, h), (i > 0 && p % 5 != 0).then(|| p % i), named)
                        }
                    })
                    .collect();
                prop_assert_eq!(circled(&lasso, &candidates), circled_as_stated(&lasso, &candidates));
            }
        }
    }
}

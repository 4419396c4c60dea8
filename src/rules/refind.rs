//! Items re-found on a new build, the pure part: which items of the page in view the
//! panel looks for again when the stage serves a build they were not filed on, what the
//! page's answer means for each element (in place, moved, gone), and what "Show on page"
//! is given for a moved one. The page side is `show::refind_elements`; the worker runs
//! it (`WorkerRequest::RefindOnPage`); the panel keeps and records the findings
//! (`ui/panel/refind.rs`, `recordRefind`).

use redline_protocol::{
    Change, ChangeStatus, Element, NAME_MAX_CHARS, Point, REFIND_ELEMENTS_MAX, Rect, RefoundElement,
    Viewport, Whereabouts,
};
use serde::{Deserialize, Serialize};

use crate::rules::chip::ChipName;
use crate::rules::locate::MatchedBy;

/// An element found where its captured CSS path leads, whose box moved further than
/// this (CSS px, on a page as wide as the filer's), has moved all the same.
pub const MOVE_PX: f64 = 16.0;

/// What the page found of one element (`show::refind_elements`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageFinding {
    /// Which handle found it; `None` when nothing did.
    pub matched_by: Option<MatchedBy>,
    /// Its captured CSS path leads to the element found.
    pub path_leads_to_it: bool,
    /// The element's CSS path now.
    pub css_path: Option<String>,
    /// Its box now, viewport CSS px.
    pub rect: Option<Rect>,
}

/// What the page answers a re-find: the build it states (`fabric-git-sha`), where it
/// is scrolled, its viewport, and one entry per element asked about (`None` for one it
/// could not look for: inside a frame of another origin).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageRefind {
    pub git_sha: Option<String>,
    pub scroll: Point,
    pub viewport: Viewport,
    pub elements: Vec<Option<PageFinding>>,
}

/// `/orders` of `https://stage.example/orders?x#y`: the path a page's items were filed
/// on (`route`).
pub fn route_of(url: &str) -> Option<&str> {
    let origin = crate::rules::verify::origin(url)?;
    let rest = &url[origin.len()..];
    let path = &rest[..rest.find(['?', '#']).unwrap_or(rest.len())];
    Some(if path.is_empty() { "/" } else { path })
}

/// An item the panel looks for again on the page in view: of that stage and route, open
/// or done but not yet checked, with elements to look for.
pub fn is_of_page(change: &Change, stage_id: &str, route: &str) -> bool {
    let in_play = match change.status {
        ChangeStatus::Dismissed => false,
        ChangeStatus::Done => change.verified_at.is_none(),
        _ => true,
    };
    let has_elements = change
        .element_count
        .map_or_else(|| change.capture.as_ref().is_some_and(|c| !c.elements.is_empty()), |count| count > 0);
    in_play && has_elements && change.stage_id == stage_id && change.route.as_deref() == Some(route)
}

/// Whether build `sha` is new to the item: not the build it was filed on, nor the one it
/// was last re-found on (`refound_on`).
pub fn is_new_build(change: &Change, sha: &str, refound_on: Option<&str>) -> bool {
    change.git_sha.as_deref().map(str::trim) != Some(sha) && refound_on != Some(sha)
}

/// The elements of an item that are looked for: its first [`REFIND_ELEMENTS_MAX`].
pub fn elements_to_find(change: &Change) -> Vec<Element> {
    let elements = change.capture.as_ref().map(|c| c.elements.as_slice()).unwrap_or_default();
    elements.iter().take(REFIND_ELEMENTS_MAX).cloned().collect()
}

/// Each element the page looked for, as recorded: in place, moved (with where it is
/// now) or gone. `elements` are those asked about ([`elements_to_find`]).
pub fn refound(change: &Change, elements: &[Element], page: &PageRefind) -> Vec<RefoundElement> {
    // Where the page was scrolled at filing, when the page is as wide now as then: only
    // then do boxes compare.
    let filed_scroll = change
        .capture
        .as_ref()
        .and_then(|c| c.scroll)
        .filter(|_| change.viewport.is_some_and(|v| (v.width - page.viewport.width).abs() < 1.0));
    elements
        .iter()
        .zip(&page.elements)
        .filter_map(|(element, finding)| {
            let finding = finding.as_ref()?;
            let whereabouts = whereabouts(element, finding, filed_scroll, page.scroll);
            Some(RefoundElement {
                label: label(element),
                whereabouts,
                css_path: finding.css_path.clone().filter(|_| whereabouts != Whereabouts::Gone),
            })
        })
        .collect()
}

/// Gone when nothing found it; moved when its captured path no longer leads to it, or
/// (with `filed_scroll`, the filer's scroll on a page as wide) its box moved further than
/// [`MOVE_PX`] on the page; in place otherwise.
fn whereabouts(
    element: &Element,
    finding: &PageFinding,
    filed_scroll: Option<Point>,
    scroll: Point,
) -> Whereabouts {
    if finding.matched_by.is_none() {
        return Whereabouts::Gone;
    }
    let had_path = element.css_path.as_deref().is_some_and(|p| !p.is_empty());
    if had_path && !finding.path_leads_to_it {
        return Whereabouts::Moved;
    }
    let shifted = match (filed_scroll, element.rect, finding.rect) {
        (Some(then_scroll), Some(then), Some(now)) => {
            let dx = (now.x + scroll.x) - (then.x + then_scroll.x);
            let dy = (now.y + scroll.y) - (then.y + then_scroll.y);
            dx.abs() > MOVE_PX || dy.abs() > MOVE_PX
        }
        _ => false,
    };
    if shifted { Whereabouts::Moved } else { Whereabouts::InPlace }
}

/// The element's chip label, as the server takes it: not blank, at most 200 characters.
fn label(element: &Element) -> String {
    let label = ChipName::of(element).label;
    let label = label.trim();
    let label = if label.is_empty() { "element" } else { label };
    label.chars().take(NAME_MAX_CHARS).collect()
}

/// The elements "Show on page" is given for an item re-found: a moved one's CSS path is
/// where it is now.
pub fn where_now(elements: &[Element], refound: &[RefoundElement]) -> Vec<Element> {
    elements
        .iter()
        .map(|element| {
            let label = label(element);
            let moved = refound.iter().find(|r| r.label == label && r.whereabouts == Whereabouts::Moved);
            match moved.and_then(|r| r.css_path.clone()) {
                Some(path) => Element { css_path: Some(path), ..element.clone() },
                None => element.clone(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use redline_protocol::Capture;
    use serde_json::json;

    fn change(status: &str, elements: Vec<Element>) -> Change {
        let mut change: Change = serde_json::from_value(json!({
            "changeId": "c1", "shortId": "7", "projectId": "p", "stageId": "s", "title": "t",
            "status": status, "route": "/orders", "gitSha": "a1", "source": "extension",
            "createdAt": "2024-05-01T10:00:00Z", "held": false,
            "viewport": {"width": 1200.0, "height": 700.0},
        }))
        .unwrap();
        change.capture = Some(Capture {
            stroke: vec![],
            bounds: None,
            elements,
            device_pixel_ratio: Some(1.0),
            scroll: Some(Point { x: 0.0, y: 100.0 }),
            failed_requests: vec![],
        });
        change
    }

    fn element(test_id: &str, path: &str, y: f64) -> Element {
        Element {
            test_id: Some(test_id.into()),
            css_path: Some(path.into()),
            rect: Some(Rect { x: 10.0, y, width: 80.0, height: 20.0 }),
            tag: "button".into(),
            ..Element::default()
        }
    }

    fn found(leads: bool, path: &str, y: f64) -> Option<PageFinding> {
        Some(PageFinding {
            matched_by: Some(MatchedBy::TestId),
            path_leads_to_it: leads,
            css_path: Some(path.into()),
            rect: Some(Rect { x: 10.0, y, width: 80.0, height: 20.0 }),
        })
    }

    fn page(width: f64, elements: Vec<Option<PageFinding>>) -> PageRefind {
        PageRefind {
            git_sha: Some("b2".into()),
            scroll: Point { x: 0.0, y: 0.0 },
            viewport: Viewport { width, height: 700.0 },
            elements,
        }
    }

    #[test]
    fn elements_are_in_place_moved_or_gone() {
        let elements = vec![
            element("orders.export", ".toolbar > button", 50.0),
            element("orders.summary", "p.summary", 300.0),
            element("orders.save", "#save", 400.0),
            element("orders.total", "#total", 500.0),
            element("orders.frame", "#f |> button", 600.0),
        ];
        let item = change("open", elements.clone());
        let not_found = PageFinding { matched_by: None, path_leads_to_it: false, css_path: None, rect: None };
        let answer = page(
            1200.0,
            vec![
                // Found by its test id where its path no longer leads.
                found(false, ".section-head > button", 50.0),
                Some(not_found),
                // Where it was on the page: filed at 400 with the page scrolled 100 down.
                found(true, "#save", 500.0),
                // Its path leads to it, but it sits 40 px lower on a page as wide.
                found(true, "#total", 640.0),
                // Not looked for (a frame of another origin).
                None,
            ],
        );
        let found_now = refound(&item, &elements, &answer);
        let said: Vec<String> = found_now.iter().map(RefoundElement::describe).collect();
        assert_eq!(
            said,
            [
                "orders.export moved to `.section-head > button`",
                "orders.summary gone",
                "orders.save in place",
                "orders.total moved to `#total`",
            ]
        );
        // On a page of another width, boxes say nothing.
        let total = vec![element("orders.total", "#total", 500.0)];
        let narrow =
            refound(&change("open", total.clone()), &total, &page(800.0, vec![found(true, "#total", 640.0)]));
        assert_eq!(narrow[0].whereabouts, Whereabouts::InPlace);

        let shown = where_now(&elements, &found_now);
        assert_eq!(
            shown[0].css_path.as_deref(),
            Some(".section-head > button"),
            "Show on page: where it is now"
        );
        assert_eq!(shown[1].css_path.as_deref(), Some("p.summary"));
    }

    #[test]
    fn the_items_of_the_page_in_view_are_looked_for_on_builds_new_to_them() {
        let item = change("open", vec![element("x", "#x", 0.0)]);
        assert!(is_of_page(&item, "s", "/orders"));
        assert!(!is_of_page(&item, "s", "/other"), "another page");
        assert!(!is_of_page(&item, "other", "/orders"), "another stage");
        assert!(!is_of_page(&change("dismissed", vec![element("x", "#x", 0.0)]), "s", "/orders"));
        assert!(is_of_page(&change("done", vec![element("x", "#x", 0.0)]), "s", "/orders"));
        let mut checked = change("done", vec![element("x", "#x", 0.0)]);
        checked.verified_at = Some(redline_protocol::Timestamp::from_unix_millis(1));
        assert!(!is_of_page(&checked, "s", "/orders"), "done and checked");
        assert!(!is_of_page(&change("open", vec![]), "s", "/orders"), "nothing to look for");
        let mut summary = change("open", vec![]);
        summary.capture = None;
        summary.element_count = Some(2);
        assert!(is_of_page(&summary, "s", "/orders"), "a list's summary counts its elements");

        assert!(!is_new_build(&item, "a1", None), "the build it was filed on");
        assert!(is_new_build(&item, "b2", None));
        assert!(!is_new_build(&item, "b2", Some("b2")), "already re-found on it");
        assert!(is_new_build(&item, "c3", Some("b2")));
    }

    #[test]
    fn routes_are_paths() {
        assert_eq!(route_of("http://127.0.0.1:8080/orders?x=1#top"), Some("/orders"));
        assert_eq!(route_of("http://127.0.0.1:8080"), Some("/"));
        assert_eq!(route_of("not a url"), None);
    }

    #[test]
    fn at_most_fifty_elements_are_looked_for_and_labels_fit() {
        let many: Vec<Element> = (0..60).map(|i| element(&format!("e{i}"), "#e", 0.0)).collect();
        assert_eq!(elements_to_find(&change("open", many)).len(), REFIND_ELEMENTS_MAX);
        let long = Element { text: Some("x".repeat(300)), tag: "p".into(), ..Element::default() };
        assert!(label(&long).chars().count() <= NAME_MAX_CHARS);
        assert_eq!(label(&Element::default()), "element");
    }
}

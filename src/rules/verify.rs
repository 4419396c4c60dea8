//! "Check on stage": the filer looks at a done item on the build that serves its fix,
//! before beside after, and says "fixed" or "still wrong" (`verifyChange`). What is
//! pure lives here: which items wait for a check, where the stage tab goes, which tab
//! to use, the regions the before and after images show, and what the panel says about
//! elements the new build no longer has. The worker opens the tab and takes the
//! screenshot; the panel shows the result and sends the verdict.

use redline_protocol::{Capture, Change, ChangeStatus, Point, Rect, Verdict, Viewport, short_sha};
use serde::{Deserialize, Serialize};

use crate::rules::locate::Located;

/// CSS px of context kept around the elements in the before and after images.
pub const MARGIN: f64 = 48.0;

/// Done, served by the stage (`live`), and nobody has said yet whether it is fixed.
pub fn waits_for_check(change: &Change) -> bool {
    change.status == ChangeStatus::Done && change.live == Some(true) && change.verified_at.is_none()
}

/// A check `me` should make: one of `me`'s items (or one whose filer the server does not
/// name) that waits for a check. The toolbar badge counts these.
pub fn waits_for_my_check(change: &Change, me: &str) -> bool {
    waits_for_check(change) && change.filed_by.as_deref().is_none_or(|by| by == me)
}

/// The toolbar badge for `count` items waiting: empty when there are none.
fn badge_text(count: usize) -> String {
    match count {
        0 => String::new(),
        1..=99 => count.to_string(),
        _ => "99+".to_owned(),
    }
}

/// The toolbar badge for `questions` and `checks`: one total (empty when nothing waits),
/// and the button's tooltip naming both.
pub fn badge(questions: usize, checks: usize) -> (String, String) {
    let text = badge_text(questions + checks);
    let plural = |n: usize, one: &str, many: &str| format!("{n} {}", if n == 1 { one } else { many });
    let title = match (questions, checks) {
        (0, 0) => DEFAULT_TITLE.to_owned(),
        (q, 0) => format!("Redline: {} for you", plural(q, "question waits", "questions wait")),
        (0, c) => {
            format!("Redline: {} for you", plural(c, "fix waits to be checked", "fixes wait to be checked"))
        }
        (q, c) => format!(
            "Redline: {} and {} to check",
            plural(q, "question waits", "questions wait"),
            plural(c, "fix", "fixes")
        ),
    };
    (text, title)
}

/// The toolbar button's tooltip when nothing waits (as in `manifest.json`).
pub const DEFAULT_TITLE: &str = "Circle something on this page (Alt+Shift+C)";

pub use redline_protocol::{check_url, is_plain_path, url_origin as origin};

/// The host permission pattern for a URL's origin (`http://127.0.0.1/*`: Chrome's
/// patterns carry no port).
pub fn origin_pattern(url: &str) -> Option<String> {
    let origin = origin(url)?;
    let (scheme, host) = origin.split_once("://")?;
    let host = host
        .rsplit_once(':')
        .filter(|(_, port)| port.chars().all(|c| c.is_ascii_digit()))
        .map_or(host, |(h, _)| h);
    Some(format!("{scheme}://{host}/*"))
}

/// A tab Chrome told us about: its id and, where Redline may see it, its URL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TabSeen {
    pub id: i32,
    pub url: Option<String>,
}

/// What to do to show `target`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TabPlan {
    /// Bring this tab to the front and load `target` in it (`navigate`), or reload it
    /// when it already shows `target`: it may show the build from before the deploy
    /// (but not for "Check again", `CheckOnStage::again`).
    Use {
        id: i32,
        navigate: bool,
    },
    Open,
}

/// The stage tab to use: the tab the panel follows when it shows the stage, else a tab
/// of the stage already at `target` (ignoring the fragment), else any tab of the stage,
/// else a new one.
pub fn plan_tab(tabs: &[TabSeen], followed: Option<i32>, stage_url: &str, target: &str) -> TabPlan {
    let on_stage =
        |t: &&TabSeen| t.url.as_deref().is_some_and(|u| redline_protocol::is_url_under(u, stage_url));
    let chosen = tabs
        .iter()
        .filter(on_stage)
        .find(|t| Some(t.id) == followed)
        .or_else(|| tabs.iter().filter(on_stage).find(|t| same_page(t.url.as_deref(), target)))
        .or_else(|| tabs.iter().find(on_stage));
    match chosen {
        Some(tab) => TabPlan::Use { id: tab.id, navigate: !same_page(tab.url.as_deref(), target) },
        None => TabPlan::Open,
    }
}

fn same_page(url: Option<&str>, target: &str) -> bool {
    let strip = |u: &str| u.split('#').next().unwrap_or(u).to_owned();
    url.is_some_and(|u| strip(u) == strip(target))
}

/// What the page answers right after "Show on page"'s code outlined the elements there
/// (`chrome::check_in_tab`): per element, what found it; the outlined boxes (viewport
/// CSS px at `scroll`); the scroll position, viewport and pixel ratio; and the build the
/// page states (`fabric-git-sha`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageView {
    pub located: Vec<Located>,
    pub boxes: Vec<Rect>,
    pub scroll: Point,
    pub viewport: Viewport,
    pub device_pixel_ratio: f64,
    pub git_sha: Option<String>,
}

impl PageView {
    /// Where to scroll so the outlined boxes together sit in the middle of the viewport
    /// (their top-left corner, with a little room, when they are larger than it); `None`
    /// when nothing was outlined.
    pub fn centring_scroll(&self) -> Option<Point> {
        redline_protocol::after_shot::centring_scroll(&self.boxes, self.scroll, self.viewport)
    }

    /// The check as the page shows it once scrolled to `scroll` (where the page came to
    /// rest, which may fall short of where it was asked to go): the outlines scroll with
    /// the page, so the boxes move by the difference.
    pub fn scrolled_to(self, scroll: Point) -> PageCheck {
        let (dx, dy) = (scroll.x - self.scroll.x, scroll.y - self.scroll.y);
        PageCheck {
            located: self.located,
            boxes: self.boxes.into_iter().map(|b| Rect { x: b.x - dx, y: b.y - dy, ..b }).collect(),
            viewport: self.viewport,
            device_pixel_ratio: self.device_pixel_ratio,
            git_sha: self.git_sha,
        }
    }
}

/// What the page said when the check re-located the elements: per element, what found
/// it; the outlined boxes (viewport CSS px once they are centred in view); the page's
/// viewport and pixel ratio; and the build it states (`fabric-git-sha`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PageCheck {
    pub located: Vec<Located>,
    pub boxes: Vec<Rect>,
    pub viewport: Viewport,
    pub device_pixel_ratio: f64,
    pub git_sha: Option<String>,
}

impl PageCheck {
    /// The region the after-shot shows: the outlined boxes together, or the viewport
    /// when nothing was found (the person still sees the page where it was).
    pub fn region(&self) -> Rect {
        union(&self.boxes).unwrap_or(Rect {
            x: 0.0,
            y: 0.0,
            width: self.viewport.width,
            height: self.viewport.height,
        })
    }

    /// One line per element: what found it, or "moved or removed on a91c4e2".
    pub fn sentences(&self) -> Vec<(bool, String)> {
        self.located
            .iter()
            .map(|l| (l.matched_by.is_some(), located_sentence(l, self.git_sha.as_deref())))
            .collect()
    }

    pub fn missing(&self) -> usize {
        self.located.iter().filter(|l| l.matched_by.is_none()).count()
    }
}

/// "orders.export: found by test id", or "orders.old: moved or removed on a91c4e2".
pub fn located_sentence(located: &Located, build: Option<&str>) -> String {
    match (located.matched_by, build.filter(|b| !b.is_empty())) {
        (None, Some(sha)) => format!("{}: moved or removed on {}", located.label, short_sha(sha)),
        (None, None) => format!("{}: moved or removed on this build", located.label),
        _ => located.sentence(),
    }
}

pub use redline_protocol::after_shot::union;

/// `region` grown by [`MARGIN`] and kept inside the viewport.
pub fn with_margin(region: Rect, viewport: Viewport) -> Rect {
    let left = (region.x - MARGIN).clamp(0.0, (viewport.width - 1.0).max(0.0));
    let top = (region.y - MARGIN).clamp(0.0, (viewport.height - 1.0).max(0.0));
    let right = (region.x + region.width + MARGIN).clamp(left + 1.0, viewport.width.max(left + 1.0));
    let bottom = (region.y + region.height + MARGIN).clamp(top + 1.0, viewport.height.max(top + 1.0));
    Rect { x: left, y: top, width: right - left, height: bottom - top }
}

/// How to show part of a viewport screenshot in a box of the part's shape, as CSS
/// percentages: the image's width and offsets relative to the box, and the box's
/// aspect ratio (width / height).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct CssCrop {
    pub width_pct: f64,
    pub left_pct: f64,
    pub top_pct: f64,
    pub aspect: f64,
}

impl CssCrop {
    pub fn of(part: Rect, viewport: Viewport) -> Option<CssCrop> {
        if part.width <= 0.0 || part.height <= 0.0 || viewport.width <= 0.0 || viewport.height <= 0.0 {
            return None;
        }
        Some(CssCrop {
            width_pct: viewport.width / part.width * 100.0,
            left_pct: -part.x / part.width * 100.0,
            top_pct: -part.y / part.height * 100.0,
            aspect: part.width / part.height,
        })
    }

    /// The image's inline style inside a box with `aspect-ratio` [`Self::aspect`].
    pub fn image_style(&self) -> String {
        format!(
            "position: absolute; max-width: none; width: {:.3}%; left: {:.3}%; top: {:.3}%;",
            self.width_pct, self.left_pct, self.top_pct
        )
    }

    pub fn box_style(&self) -> String {
        format!("aspect-ratio: {:.4};", self.aspect)
    }
}

/// The part of the filed screenshot the "before" shows: the circled elements (or the
/// circle) with a margin, in the viewport the screenshot covers.
pub fn before_part(capture: Option<&Capture>, viewport: Option<Viewport>) -> Option<(Rect, Viewport)> {
    let viewport = viewport?;
    let capture = capture?;
    let rects: Vec<Rect> = capture.elements.iter().filter_map(|e| e.rect).collect();
    let region = union(&rects).or(capture.bounds)?;
    Some((with_margin(region, viewport), viewport))
}

/// Where a pointer at `client` falls on an image shown in `bounds`, in fractions of its
/// width and height, kept on the image.
pub fn fraction_in(client: Point, bounds: Rect) -> Point {
    let part =
        |at: f64, start: f64, size: f64| if size > 0.0 { ((at - start) / size).clamp(0.0, 1.0) } else { 0.0 };
    Point { x: part(client.x, bounds.x, bounds.width), y: part(client.y, bounds.y, bounds.height) }
}

/// Adds `point` to a circle being drawn, unless it is within half a percent of the last
/// one (a drag reports far more points than a circle needs).
pub fn extend_circle(circle: &mut Vec<Point>, point: Point) {
    let near = circle.last().is_some_and(|l| (l.x - point.x).hypot(l.y - point.y) < 0.005);
    if !near {
        circle.push(point);
    }
}

/// Enough of a circle to mean a place: three points or more.
pub fn is_circle(circle: &[Point]) -> bool {
    circle.len() >= 3
}

/// A circle as an SVG `points` list in a 100 × 100 view box.
pub fn svg_points(circle: &[Point]) -> String {
    circle.iter().map(|p| format!("{:.2},{:.2}", p.x * 100.0, p.y * 100.0)).collect::<Vec<_>>().join(" ")
}

/// Words are required for "still wrong" (the agent needs them), optional for "fixed".
pub fn check_words(verdict: Verdict, words: &str) -> Result<Option<String>, &'static str> {
    let words = words.trim();
    match (verdict, words.is_empty()) {
        (Verdict::StillWrong, true) => Err("Say what is still wrong: the agent gets your words."),
        (_, true) => Ok(None),
        (_, false) => Ok(Some(words.to_owned())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::locate::MatchedBy;
    use serde_json::json;

    fn change(status: &str, live: Option<bool>, verified: bool, filed_by: Option<&str>) -> Change {
        serde_json::from_value(json!({
            "changeId": "c", "shortId": "1", "projectId": "p", "stageId": "s", "title": "t",
            "status": status, "source": "extension", "filedBy": filed_by, "live": live,
            "createdAt": redline_protocol::Timestamp::from_unix_millis(0), "held": false,
            "verifiedAt": if verified { Some(redline_protocol::Timestamp::from_unix_millis(5)) } else { None },
        }))
        .unwrap()
    }

    #[test]
    fn a_live_done_item_waits_for_a_check_until_verified() {
        assert!(waits_for_check(&change("done", Some(true), false, Some("ada"))));
        assert!(!waits_for_check(&change("done", Some(false), false, Some("ada"))));
        assert!(!waits_for_check(&change("done", None, false, Some("ada"))));
        assert!(!waits_for_check(&change("done", Some(true), true, Some("ada"))));
        assert!(!waits_for_check(&change("open", Some(true), false, Some("ada"))));
        assert!(waits_for_my_check(&change("done", Some(true), false, Some("ada")), "ada"));
        assert!(!waits_for_my_check(&change("done", Some(true), false, Some("bob")), "ada"));
        assert!(waits_for_my_check(&change("done", Some(true), false, None), "ada"));
    }

    #[test]
    fn the_badge_is_one_total_and_the_tooltip_names_both() {
        assert_eq!(badge(0, 0), (String::new(), DEFAULT_TITLE.to_owned()));
        assert_eq!(badge(1, 0).0, "1");
        assert_eq!(badge(2, 1), ("3".to_owned(), "Redline: 2 questions wait and 1 fix to check".to_owned()));
        assert_eq!(badge(0, 1).1, "Redline: 1 fix waits to be checked for you");
        assert_eq!(badge(1, 0).1, "Redline: 1 question waits for you");
        assert_eq!(badge(100, 1).0, "99+");
    }

    #[test]
    fn the_check_goes_to_the_route_on_the_stage_origin() {
        let stage = "http://127.0.0.1:4000/";
        assert_eq!(
            check_url(Some(stage), Some("/orders/7")).as_deref(),
            Some("http://127.0.0.1:4000/orders/7")
        );
        assert_eq!(
            check_url(Some("https://x.example/app/"), Some("/app/a")).as_deref(),
            Some("https://x.example/app/a")
        );
        assert_eq!(check_url(Some(stage), None).as_deref(), Some(stage));
        assert_eq!(check_url(Some(stage), Some("javascript:alert(1)")).as_deref(), Some(stage));
        assert_eq!(check_url(None, Some("/")), None);
        assert_eq!(origin_pattern("http://127.0.0.1:4000/x").as_deref(), Some("http://127.0.0.1/*"));
        assert_eq!(origin_pattern("https://a.example").as_deref(), Some("https://a.example/*"));
        assert_eq!(origin("nonsense"), None);
    }

    #[test]
    fn a_route_that_is_not_a_plain_path_on_the_stage_opens_the_stage_itself() {
        let stage = "https://x.example/app/";
        for route in [
            "/app/x?delete=1",
            "/app/x#frag",
            "//evil.example/app/x",
            "https://evil.example/app/x",
            "evil.example/app",
            "/\\evil.example",
            "/app/../admin",
            "/app/%2E%2e/admin",
            "/app/./x",
            "/app/x y",
            "/app/\nx",
            "/other",
            "/apple",
            "",
        ] {
            assert_eq!(check_url(Some(stage), Some(route)).as_deref(), Some(stage), "{route:?}");
        }
        assert_eq!(check_url(Some(stage), Some("/app")).as_deref(), Some("https://x.example/app"));
        assert_eq!(
            check_url(Some(stage), Some("/app/a.b/%20c")).as_deref(),
            Some("https://x.example/app/a.b/%20c"),
            "dots in a name and escapes are a path's own"
        );
        assert!(is_plain_path("/"));
        assert!(is_plain_path("/..."), "three dots are a name, not a segment the browser resolves");
    }

    #[test]
    fn the_followed_stage_tab_is_used_then_any_stage_tab_then_a_new_one() {
        let stage = "http://s.test/";
        let tabs = vec![
            TabSeen { id: 1, url: None },
            TabSeen { id: 2, url: Some("http://s.test/other".into()) },
            TabSeen { id: 3, url: Some("http://s.test/orders#x".into()) },
            TabSeen { id: 4, url: Some("http://elsewhere.test/orders".into()) },
        ];
        let target = "http://s.test/orders";
        assert_eq!(plan_tab(&tabs, Some(2), stage, target), TabPlan::Use { id: 2, navigate: true });
        assert_eq!(plan_tab(&tabs, Some(4), stage, target), TabPlan::Use { id: 3, navigate: false });
        assert_eq!(plan_tab(&tabs, None, stage, "http://s.test/new"), TabPlan::Use { id: 2, navigate: true });
        assert_eq!(plan_tab(&tabs[..1], Some(1), stage, target), TabPlan::Open);
    }

    fn rect(x: f64, y: f64, width: f64, height: f64) -> Rect {
        Rect { x, y, width, height }
    }

    #[test]
    fn regions_hold_every_box_with_a_margin_inside_the_viewport() {
        assert_eq!(
            union(&[rect(10.0, 20.0, 5.0, 5.0), rect(0.0, 40.0, 30.0, 10.0), rect(99.0, 99.0, 0.0, 0.0)]),
            Some(rect(0.0, 20.0, 30.0, 30.0))
        );
        assert_eq!(union(&[]), None);
        let viewport = Viewport { width: 800.0, height: 600.0 };
        assert_eq!(with_margin(rect(100.0, 100.0, 50.0, 20.0), viewport), rect(52.0, 52.0, 146.0, 116.0));
        assert_eq!(with_margin(rect(10.0, 580.0, 50.0, 40.0), viewport), rect(0.0, 532.0, 108.0, 68.0));
        let check =
            PageCheck { located: vec![], boxes: vec![], viewport, device_pixel_ratio: 1.0, git_sha: None };
        assert_eq!(check.region(), rect(0.0, 0.0, 800.0, 600.0));
    }

    #[test]
    fn the_before_crop_shows_the_circled_elements_in_css_percentages() {
        let capture: Capture = serde_json::from_value(json!({
            "stroke": [], "bounds": {"x": 0, "y": 0, "width": 10, "height": 10},
            "elements": [{"tag": "button", "rect": {"x": 148, "y": 148, "width": 104, "height": 54}}],
        }))
        .unwrap();
        let viewport = Viewport { width: 1000.0, height: 500.0 };
        let (part, _) = before_part(Some(&capture), Some(viewport)).unwrap();
        assert_eq!(part, rect(100.0, 100.0, 200.0, 150.0));
        let crop = CssCrop::of(part, viewport).unwrap();
        assert_eq!((crop.width_pct, crop.left_pct, crop.aspect), (500.0, -50.0, 200.0 / 150.0));
        assert!((crop.top_pct + 200.0 / 3.0).abs() < 1e-9);
        assert!(crop.image_style().contains("width: 500.000%; left: -50.000%; top: -66.667%"));
        // No element rects: the circle's bounds.
        let circle_only: Capture =
            serde_json::from_value(json!({"bounds": {"x": 300, "y": 300, "width": 10, "height": 10}}))
                .unwrap();
        assert_eq!(
            before_part(Some(&circle_only), Some(viewport)).unwrap().0,
            rect(252.0, 252.0, 106.0, 106.0)
        );
        assert_eq!(before_part(None, Some(viewport)), None);
    }

    #[test]
    fn the_outlined_elements_are_centred_and_their_boxes_follow_the_scroll() {
        let viewport = Viewport { width: 800.0, height: 600.0 };
        let view = PageView {
            located: vec![],
            boxes: vec![rect(100.0, 500.0, 100.0, 40.0), rect(300.0, 560.0, 100.0, 40.0)],
            scroll: Point { x: 0.0, y: 200.0 },
            viewport,
            device_pixel_ratio: 2.0,
            git_sha: Some("a91c4e2ff".into()),
        };
        // The boxes together are 100..400 by 500..600: centred, 250 is mid-width and
        // 550 mid-height, so 150 left of 400 and 250 below 300 (never left of 0).
        assert_eq!(view.centring_scroll(), Some(Point { x: 0.0, y: 450.0 }));
        // The page stopped at 400 (its end): the boxes moved up by 200.
        let check = view.clone().scrolled_to(Point { x: 0.0, y: 400.0 });
        assert_eq!(check.boxes, vec![rect(100.0, 300.0, 100.0, 40.0), rect(300.0, 360.0, 100.0, 40.0)]);
        assert_eq!((check.device_pixel_ratio, check.git_sha.as_deref()), (2.0, Some("a91c4e2ff")));
        // Larger than the viewport: its corner in view, with room.
        let tall = PageView { boxes: vec![rect(50.0, 700.0, 100.0, 900.0)], ..view.clone() };
        assert_eq!(tall.centring_scroll(), Some(Point { x: 0.0, y: 884.0 }));
        assert_eq!(PageView { boxes: vec![], ..view }.centring_scroll(), None);
        // What the page answers reads as a view (each box also carries its label).
        let answered: PageView = serde_json::from_value(json!({
            "located": [], "boxes": [{"label": "orders.export", "x": 1, "y": 2, "width": 3, "height": 4}],
            "scroll": {"x": 0, "y": 0}, "viewport": {"width": 800, "height": 600},
            "devicePixelRatio": 1, "gitSha": null,
        }))
        .unwrap();
        assert_eq!(answered.boxes, vec![rect(1.0, 2.0, 3.0, 4.0)]);
    }

    #[test]
    fn a_new_circle_is_kept_in_fractions_of_the_after_shot() {
        let shown = rect(100.0, 50.0, 200.0, 100.0);
        assert_eq!(fraction_in(Point { x: 150.0, y: 75.0 }, shown), Point { x: 0.25, y: 0.25 });
        // Dragged past the image's edge: on its edge.
        assert_eq!(fraction_in(Point { x: 400.0, y: 0.0 }, shown), Point { x: 1.0, y: 0.0 });
        assert_eq!(fraction_in(Point { x: 1.0, y: 1.0 }, rect(0.0, 0.0, 0.0, 0.0)), Point { x: 0.0, y: 0.0 });
        let mut circle = Vec::new();
        for (x, y) in [(0.1, 0.1), (0.101, 0.101), (0.5, 0.1), (0.5, 0.5)] {
            extend_circle(&mut circle, Point { x, y });
        }
        assert_eq!(circle.len(), 3, "a point next to the last adds nothing");
        assert!(is_circle(&circle) && !is_circle(&circle[..2]));
        assert_eq!(svg_points(&circle), "10.00,10.00 50.00,10.00 50.00,50.00");
    }

    #[test]
    fn elements_the_new_build_lacks_are_moved_or_removed_on_its_sha() {
        let check = PageCheck {
            located: vec![
                Located { label: "orders.export".into(), matched_by: Some(MatchedBy::TestId), count: 1 },
                Located { label: "orders.old".into(), matched_by: None, count: 0 },
            ],
            boxes: vec![],
            viewport: Viewport { width: 1.0, height: 1.0 },
            device_pixel_ratio: 1.0,
            git_sha: Some("a91c4e2ffee0".into()),
        };
        assert_eq!(
            check.sentences(),
            vec![
                (true, "orders.export: found by test id".to_owned()),
                (false, "orders.old: moved or removed on a91c4e2".to_owned())
            ]
        );
        assert_eq!(check.missing(), 1);
        assert_eq!(located_sentence(&check.located[1], None), "orders.old: moved or removed on this build");
    }

    #[test]
    fn still_wrong_needs_words() {
        assert!(check_words(Verdict::StillWrong, "  ").is_err());
        assert_eq!(check_words(Verdict::StillWrong, " still red "), Ok(Some("still red".to_owned())));
        assert_eq!(check_words(Verdict::Fixed, ""), Ok(None));
    }
}

//! One capture's page work spread over the stroke. The person takes hundreds of
//! milliseconds to draw a lasso; meanwhile the content script walks the elements within
//! the stroke's growing bounds (reading each box once), samples the point grid inside
//! the stroke so far and describes the elements it already circles, in slices of a few
//! milliseconds. On release only the rest runs: the area the stroke reached last, the
//! samples not taken yet, the coverage rule and whatever was not described yet. Pure:
//! the page adapter (`dom.rs`) reads the page, this decides what to read, in which
//! order, and how long a slice may take.
//!
//! The cache is only as good as the page staying put: `stroke_dom.rs` starts it over
//! when the page scrolls, resizes or changes, and the release reads every circled box
//! again (see `dom.rs`).

use std::f64::consts::FRAC_PI_4;
use std::ops::Range;

use redline_protocol::{Point, Rect};

use super::geometry::{self, Polygon, SAMPLE_BUDGET};
use super::pick::{self, Candidate};

/// The page as the walk sees it.
pub trait Tree {
    type Node: Clone;
    /// The element's border box, viewport CSS px.
    fn rect(&mut self, node: &Self::Node) -> Rect;
    /// The element's children, then those of its open shadow root, in order; never our
    /// own overlay.
    fn children(&mut self, node: &Self::Node) -> Vec<Self::Node>;
    /// Whether the element carries its own `data-testid`.
    fn has_test_id(&mut self, node: &Self::Node) -> bool;
}

struct Entry<N> {
    node: N,
    /// The box, once read.
    rect: Option<Rect>,
    /// Its children's entries and its test id, once entered (its box met the bounds).
    entered: Option<(Range<usize>, bool)>,
}

enum Work {
    Read(usize),
    Enter(usize),
}

/// Depth-first through the elements whose box meets the bounds (and into open shadow
/// roots); subtrees outside are not entered, which keeps big pages cheap. The bounds
/// only grow, so each box is read once per stroke: an element read while outside is
/// entered later if the bounds grow to meet it.
pub struct Walk<N> {
    entries: Vec<Entry<N>>,
    /// A stack, so the walk goes depth first.
    work: Vec<Work>,
    /// Read, and outside the bounds so far.
    outside: Vec<usize>,
    bounds: Option<Rect>,
}

impl<N: Clone> Walk<N> {
    /// A walk from `root` (the body) that reads nothing until it has bounds.
    pub fn new(root: N) -> Walk<N> {
        Walk {
            entries: vec![Entry { node: root, rect: None, entered: None }],
            work: vec![Work::Read(0)],
            outside: Vec::new(),
            bounds: None,
        }
    }

    /// Widens the bounds to hold `bounds` as well.
    pub fn grow(&mut self, bounds: Rect) {
        let grown = self.bounds.map_or(bounds, |b| union(b, bounds));
        if self.bounds == Some(grown) {
            return;
        }
        self.bounds = Some(grown);
        let mut i = 0;
        while let Some(&entry) = self.outside.get(i) {
            if self.entries[entry].rect.is_some_and(|r| intersects(r, grown)) {
                self.outside.swap_remove(i);
                self.work.push(Work::Enter(entry));
            } else {
                i += 1;
            }
        }
    }

    /// Whether everything within the bounds has been read.
    pub fn is_done(&self) -> bool {
        self.bounds.is_none() || self.work.is_empty()
    }

    /// One element's worth of work: read a box, or list an element's children. `false`
    /// when there is nothing left to do within the bounds.
    pub fn step<T: Tree<Node = N>>(&mut self, tree: &mut T) -> bool {
        let Some(bounds) = self.bounds else { return false };
        let Some(work) = self.work.pop() else { return false };
        match work {
            Work::Read(i) => {
                let rect = tree.rect(&self.entries[i].node);
                self.entries[i].rect = Some(rect);
                if intersects(rect, bounds) {
                    self.work.push(Work::Enter(i));
                } else {
                    self.outside.push(i);
                }
            }
            Work::Enter(i) => {
                let node = &self.entries[i].node;
                let has_test_id = tree.has_test_id(node);
                let children = tree.children(node);
                let start = self.entries.len();
                self.entries.extend(children.into_iter().map(|node| Entry {
                    node,
                    rect: None,
                    entered: None,
                }));
                let end = self.entries.len();
                self.entries[i].entered = Some((start..end, has_test_id));
                // Reversed, so the stack reads the first child first.
                self.work.extend((start..end).rev().map(Work::Read));
            }
        }
        true
    }

    /// Reads what is left within `bounds` (widening the bounds if needed).
    pub fn finish<T: Tree<Node = N>>(&mut self, tree: &mut T, bounds: Rect) {
        self.grow(bounds);
        while self.step(tree) {}
    }

    /// The elements whose box meets `bounds`, entered from the root through elements
    /// that all meet it (what a walk of `bounds` alone would find), in document order
    /// with ancestors first, as the coverage rule takes them; each with its entry.
    /// Complete once [`Walk::finish`] has run for `bounds`.
    pub fn candidates(&self, bounds: Rect) -> Vec<(usize, Candidate)> {
        let mut found = Vec::new();
        let mut stack = vec![(0, None)];
        while let Some((i, parent)) = stack.pop() {
            let entry = &self.entries[i];
            let (Some(rect), Some((children, has_test_id))) = (entry.rect, entry.entered.clone()) else {
                continue;
            };
            if !intersects(rect, bounds) {
                continue;
            }
            let me = found.len();
            // The walk's root is the body (see `dom.rs`, which also marks the others).
            found.push((i, Candidate { rect, parent, has_test_id, opaque: false, page_root: i == 0 }));
            stack.extend(children.rev().map(|c| (c, Some(me))));
        }
        found
    }

    /// Everything the walk has been asked to cover so far.
    pub fn bounds(&self) -> Option<Rect> {
        self.bounds
    }

    pub fn node(&self, entry: usize) -> &N {
        &self.entries[entry].node
    }
}

/// Points added since the coverage rule last ran on the stroke so far before it runs
/// again: a pointer reports 60–120 moves a second, so about every 100 ms of drawing.
const POINTS_BETWEEN_PICKS: usize = 8;

/// Corners of the outline the coverage rule runs on during the stroke.
const MAX_GUESS_CORNERS: usize = 32;

/// What to do next with a stroke's spare time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Task {
    /// Read more of the page within the bounds so far.
    Walk,
    /// Describe this entry, which the stroke so far circles.
    Describe(usize),
    /// Ask the page what lies at this point of the sampling grid.
    Sample(Point),
    /// Run the coverage rule on the stroke so far, to learn what to describe.
    Pick,
    /// Nothing until more points arrive.
    Idle,
}

/// The stroke so far and what has been read for it.
pub struct Stroke<N> {
    pub walk: Walk<N>,
    points: Vec<Point>,
    /// How many points the stroke had when the coverage rule last ran.
    picked_at: usize,
    /// Entries the stroke so far circles, waiting to be described, next last.
    to_describe: Vec<usize>,
    /// Grid points inside the stroke so far, waiting to be sampled, next last.
    to_sample: Vec<Point>,
    /// Every grid point ever queued (whole pixels: grid steps are); a few hundred at
    /// most, so a list.
    queued_points: Vec<(i32, i32)>,
    /// Which entries were ever queued (by entry), so none is described twice.
    queued: Vec<bool>,
}

impl<N: Clone> Stroke<N> {
    pub fn new(root: N) -> Stroke<N> {
        Stroke {
            walk: Walk::new(root),
            points: Vec::new(),
            picked_at: 0,
            to_describe: Vec::new(),
            to_sample: Vec::new(),
            queued_points: Vec::new(),
            queued: Vec::new(),
        }
    }

    /// More of the stroke, viewport CSS px.
    pub fn extend(&mut self, points: &[Point]) {
        let points: Vec<Point> =
            points.iter().copied().filter(|p| p.x.is_finite() && p.y.is_finite()).collect();
        if let Some(bounds) = Polygon::new(points.clone()).bounds() {
            self.walk.grow(bounds);
        }
        self.points.extend(points);
    }

    /// The walk first (its boxes feed everything else), then descriptions of what is
    /// already circled and samples inside the stroke so far, then a fresh look at what
    /// is circled once the stroke has grown.
    pub fn next_task(&self) -> Task {
        if !self.walk.is_done() {
            Task::Walk
        } else if let Some(&entry) = self.to_describe.last() {
            Task::Describe(entry)
        } else if let Some(&point) = self.to_sample.last() {
            Task::Sample(point)
        } else if self.points.len() >= self.picked_at + POINTS_BETWEEN_PICKS {
            Task::Pick
        } else {
            Task::Idle
        }
    }

    /// Runs the coverage rule on the stroke so far, closed, and queues what it circles
    /// and the sampling grid inside it.
    pub fn pick(&mut self) {
        self.picked_at = self.points.len();
        // Thinned to every n-th point rather than simplified: this outline is only a
        // guess at what the release will circle, and fewer corners make its coverage
        // cheaper (the rule runs on every candidate so far, in one task).
        let stride = self.points.len().div_ceil(MAX_GUESS_CORNERS).max(1);
        let mut corners = Vec::with_capacity(MAX_GUESS_CORNERS);
        let mut at = 0;
        while let Some(&point) = self.points.get(at) {
            corners.push(point);
            at += stride;
        }
        let polygon = Polygon::new(corners);
        let Some(bounds) = polygon.bounds().filter(|_| polygon.is_area()) else { return };
        let candidates = self.walk.candidates(bounds);
        let (entries, candidates): (Vec<usize>, Vec<Candidate>) = candidates.into_iter().unzip();
        for picked in pick::circled(&polygon, &candidates) {
            let entry = entries[picked];
            if self.queued.len() <= entry {
                self.queued.resize(entry + 1, false);
            }
            if !std::mem::replace(&mut self.queued[entry], true) {
                self.to_describe.push(entry);
            }
        }
        // The grid of the outline the stroke is heading for: its bounds so far hold an
        // ellipse of at least this area, and a released outline's coarser grid nests in
        // this one (see `geometry::grid_step`).
        let heading_for = bounds_area(self.walk.bounds()) * FRAC_PI_4;
        let step = geometry::grid_step(polygon.area().max(heading_for), SAMPLE_BUDGET);
        for point in polygon.grid_inside(step) {
            let key = grid_key(point);
            if !self.queued_points.contains(&key) {
                self.queued_points.push(key);
                self.to_sample.push(point);
            }
        }
    }

    /// The point [`Task::Sample`] named has been sampled.
    pub fn sampled(&mut self) {
        self.to_sample.pop();
    }

    /// The entry [`Task::Describe`] named has been described.
    pub fn described(&mut self) {
        self.to_describe.pop();
    }
}

/// Our share of each frame while the person draws: the page and the lasso keep the rest
/// of a 60 fps frame.
pub const SLICE_MILLIS: f64 = 3.0;
const FRAME_MILLIS: f64 = 1000.0 / 60.0;

/// Spreads stroke-time work so that no frame (a 16.7 ms window) holds more than
/// [`SLICE_MILLIS`] of it, however often the page asks.
#[derive(Debug, Default)]
pub struct Pacer {
    window_started: Option<f64>,
    used: f64,
    spent: Spent,
}

/// What a stroke's slices cost in all: reported once per stroke, not per slice.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Spent {
    pub slices: u32,
    pub longest: f64,
    pub total: f64,
}

impl Pacer {
    /// How long work starting at `now` may run: zero means wait [`Pacer::wait`].
    pub fn allowance(&mut self, now: f64) -> f64 {
        if self.window_started.is_none_or(|start| now - start >= FRAME_MILLIS) {
            self.window_started = Some(now);
            self.used = 0.0;
        }
        (SLICE_MILLIS - self.used).max(0.0)
    }

    /// Records a slice of work that took `millis`.
    pub fn spent(&mut self, millis: f64) {
        self.used += millis;
        self.spent.slices += 1;
        self.spent.longest = self.spent.longest.max(millis);
        self.spent.total += millis;
    }

    /// Every slice recorded so far.
    pub fn spent_in_all(&self) -> Spent {
        self.spent
    }

    /// How long from `now` until the next window opens.
    pub fn wait(&self, now: f64) -> f64 {
        self.window_started.map_or(0.0, |start| (start + FRAME_MILLIS - now).max(0.0))
    }
}

/// A grid point as whole pixels, to look samples up by.
pub fn grid_key(point: Point) -> (i32, i32) {
    (point.x.round() as i32, point.y.round() as i32)
}

fn bounds_area(bounds: Option<Rect>) -> f64 {
    bounds.map_or(0.0, |b| b.width * b.height)
}

pub fn intersects(a: Rect, b: Rect) -> bool {
    a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
}

fn union(a: Rect, b: Rect) -> Rect {
    let (left, top) = (a.x.min(b.x), a.y.min(b.y));
    let (right, bottom) = ((a.x + a.width).max(b.x + b.width), (a.y + a.height).max(b.y + b.height));
    Rect { x: left, y: top, width: right - left, height: bottom - top }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::content::capture::geometry::SIMPLIFY_TOLERANCE;

    /// A page as a list of elements: box, parent, test id. Element 0 is the body.
    struct FakePage {
        nodes: Vec<(Rect, Option<usize>, bool)>,
        reads: usize,
    }

    impl Tree for FakePage {
        type Node = usize;

        fn rect(&mut self, node: &usize) -> Rect {
            self.reads += 1;
            self.nodes[*node].0
        }

        fn children(&mut self, node: &usize) -> Vec<usize> {
            (0..self.nodes.len()).filter(|&i| self.nodes[i].1 == Some(*node)).collect()
        }

        fn has_test_id(&mut self, node: &usize) -> bool {
            self.nodes[*node].2
        }
    }

    fn rect(x: f64, y: f64, width: f64, height: f64) -> Rect {
        Rect { x, y, width, height }
    }

    /// A body holding a row of ten 100×100 cards, each with a title inside.
    fn cards() -> FakePage {
        let mut nodes = vec![(rect(0.0, 0.0, 1000.0, 1000.0), None, false)];
        for i in 0..10 {
            let x = i as f64 * 100.0;
            nodes.push((rect(x, 0.0, 100.0, 100.0), Some(0), true));
            let card = nodes.len() - 1;
            nodes.push((rect(x + 10.0, 10.0, 80.0, 20.0), Some(card), false));
        }
        FakePage { nodes, reads: 0 }
    }

    fn walk_of(page: &mut FakePage, bounds: Rect) -> Vec<(usize, Candidate)> {
        let mut walk = Walk::new(0);
        walk.finish(page, bounds);
        walk.candidates(bounds).into_iter().map(|(e, c)| (*walk.node(e), c)).collect()
    }

    #[test]
    fn the_walk_enters_only_what_meets_the_bounds() {
        let mut page = cards();
        let found = walk_of(&mut page, rect(150.0, 0.0, 100.0, 50.0));
        let nodes: Vec<usize> = found.iter().map(|(n, _)| *n).collect();
        // The body, cards 1 and 2 (nodes 3 and 5) and their titles (4 and 6).
        assert_eq!(nodes, [0, 3, 4, 5, 6]);
        assert_eq!(found[2].1.parent, Some(1), "a title's parent is its card");
        assert!(found[1].1.has_test_id);
        assert_eq!(page.reads, 1 + 10 + 2, "only the titles of entered cards are read");
    }

    #[test]
    fn growing_bounds_read_each_box_once_and_find_what_one_walk_would() {
        let final_bounds = rect(150.0, 0.0, 500.0, 60.0);
        let mut page = cards();
        let mut walk = Walk::new(0);
        for right in [200.0, 350.0, 500.0, 650.0] {
            walk.grow(rect(150.0, 0.0, right - 150.0, 60.0));
            // Interrupted after a few steps, as a time slice would be.
            for _ in 0..3 {
                walk.step(&mut page);
            }
        }
        walk.finish(&mut page, final_bounds);
        let reads = page.reads;
        let incremental: Vec<(usize, Candidate)> =
            walk.candidates(final_bounds).into_iter().map(|(e, c)| (*walk.node(e), c)).collect();
        assert_eq!(incremental, walk_of(&mut cards(), final_bounds));
        assert_eq!(reads, 1 + 10 + 6, "each box read once");
    }

    #[test]
    fn candidates_for_smaller_bounds_leave_out_what_the_stroke_passed_but_did_not_keep() {
        let mut page = cards();
        let mut walk = Walk::new(0);
        walk.finish(&mut page, rect(0.0, 0.0, 1000.0, 100.0));
        let small = rect(150.0, 0.0, 100.0, 50.0);
        let nodes: Vec<usize> = walk.candidates(small).into_iter().map(|(e, _)| *walk.node(e)).collect();
        assert_eq!(nodes, walk_of(&mut cards(), small).into_iter().map(|(n, _)| n).collect::<Vec<_>>());
    }

    #[test]
    fn nothing_is_read_before_the_first_point() {
        let mut page = cards();
        let mut walk = Walk::new(0);
        assert!(walk.is_done());
        assert!(!walk.step(&mut page));
        assert_eq!(page.reads, 0);
    }

    fn run(stroke: &mut Stroke<usize>, page: &mut FakePage) -> Vec<usize> {
        let mut described = Vec::new();
        loop {
            match stroke.next_task() {
                Task::Walk => {
                    stroke.walk.step(page);
                }
                Task::Describe(entry) => {
                    described.push(*stroke.walk.node(entry));
                    stroke.described();
                }
                Task::Sample(_) => stroke.sampled(),
                Task::Pick => stroke.pick(),
                Task::Idle => return described,
            }
        }
    }

    /// `n` points from `from` (exclusive) to `to` (inclusive).
    fn line(from: (f64, f64), to: (f64, f64), n: usize) -> Vec<Point> {
        (1..=n)
            .map(|i| {
                let t = i as f64 / n as f64;
                Point { x: from.0 + (to.0 - from.0) * t, y: from.1 + (to.1 - from.1) * t }
            })
            .collect()
    }

    #[test]
    fn what_the_stroke_so_far_circles_is_described_once() {
        let mut page = cards();
        let mut stroke = Stroke::new(0);
        // Around cards 1 and 2 (nodes 3 and 5). Closed by a chord, the first part covers
        // card 1 and card 2's title (node 6) enough, but only half of card 2.
        let mut first = vec![Point { x: 90.0, y: 110.0 }];
        first.extend(line((90.0, 110.0), (90.0, -10.0), 3));
        first.extend(line((90.0, -10.0), (310.0, -10.0), 4));
        first.extend(line((310.0, -10.0), (310.0, 30.0), 2));
        stroke.extend(&first);
        let mut described = run(&mut stroke, &mut page);
        described.sort();
        assert_eq!(described, [3, 6]);
        let mut rest = line((310.0, 30.0), (310.0, 110.0), 4);
        rest.extend(line((310.0, 110.0), (90.0, 110.0), 5));
        stroke.extend(&rest);
        assert_eq!(run(&mut stroke, &mut page), [5]);
        stroke.extend(&[Point { x: 90.0, y: 110.0 }; POINTS_BETWEEN_PICKS]);
        assert_eq!(run(&mut stroke, &mut page), Vec::<usize>::new(), "nothing twice");
    }

    #[test]
    fn the_stroke_samples_ahead_the_grid_of_the_outline_it_closes() {
        let mut page = cards();
        let mut stroke = Stroke::new(0);
        let ellipse: Vec<Point> = (0..=48)
            .map(|i| {
                let a = i as f64 / 48.0 * std::f64::consts::TAU;
                Point { x: 400.0 + 300.0 * a.cos(), y: 60.0 + 50.0 * a.sin() }
            })
            .collect();
        let mut sampled = Vec::new();
        for part in ellipse.chunks(POINTS_BETWEEN_PICKS) {
            stroke.extend(part);
            while let task @ (Task::Walk | Task::Describe(_) | Task::Sample(_) | Task::Pick) =
                stroke.next_task()
            {
                match task {
                    Task::Walk => {
                        stroke.walk.step(&mut page);
                    }
                    Task::Describe(_) => stroke.described(),
                    Task::Sample(point) => {
                        sampled.push(grid_key(point));
                        stroke.sampled();
                    }
                    _ => stroke.pick(),
                }
            }
        }
        let released = Polygon::from_stroke(&ellipse, SIMPLIFY_TOLERANCE);
        let grid = released.grid_inside(released.grid_step(SAMPLE_BUDGET));
        assert!(grid.len() > 20, "{}", grid.len());
        let missing = grid.iter().filter(|p| !sampled.contains(&grid_key(**p))).count();
        assert!(missing * 10 <= grid.len(), "{missing} of {} left for the release", grid.len());
        let unique: std::collections::HashSet<_> = sampled.iter().collect();
        assert_eq!(unique.len(), sampled.len(), "no point sampled twice");
    }

    #[test]
    fn a_frame_holds_at_most_one_slice_of_work() {
        let mut pacer = Pacer::default();
        assert_eq!(pacer.allowance(0.0), SLICE_MILLIS);
        pacer.spent(2.0);
        assert_eq!(pacer.allowance(5.0), SLICE_MILLIS - 2.0);
        pacer.spent(1.5);
        assert_eq!(pacer.allowance(8.0), 0.0, "this frame's share is used up");
        assert!((pacer.wait(8.0) - (FRAME_MILLIS - 8.0)).abs() < 1e-9);
        assert_eq!(pacer.allowance(FRAME_MILLIS), SLICE_MILLIS, "a new frame, a new share");
        assert_eq!(pacer.spent_in_all(), Spent { slices: 2, longest: 2.0, total: 3.5 });
    }
}

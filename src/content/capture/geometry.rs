//! The lasso's geometry: the freehand stroke as a closed polygon, and how much of an
//! element's box it covers. Viewport CSS pixels throughout.

use redline_protocol::{Point, Rect};

/// How far (CSS px) the simplified outline may stray from the stroke the person drew.
pub const SIMPLIFY_TOLERANCE: f64 = 2.0;
/// About how many points of the page to sample inside the lasso. The walk finds what
/// lies within the lasso's bounds; the samples catch content drawn outside its parent's
/// box (positioned or overflowing), so a coarse grid suffices.
pub const SAMPLE_BUDGET: usize = 64;

/// A closed polygon: the last point connects back to the first.
#[derive(Debug, Clone, PartialEq)]
pub struct Polygon {
    points: Vec<Point>,
}

impl Polygon {
    pub fn new(points: Vec<Point>) -> Polygon {
        Polygon { points }
    }

    /// The released stroke, closed and simplified (Ramer–Douglas–Peucker, `tolerance` px).
    pub fn from_stroke(stroke: &[Point], tolerance: f64) -> Polygon {
        let mut points: Vec<Point> = Vec::with_capacity(stroke.len());
        for &p in stroke {
            if points.last() != Some(&p) && p.x.is_finite() && p.y.is_finite() {
                points.push(p);
            }
        }
        Polygon { points: simplify(&points, tolerance) }
    }

    pub fn points(&self) -> &[Point] {
        &self.points
    }

    /// Whether the outline encloses anything (three corners and some area).
    pub fn is_area(&self) -> bool {
        self.points.len() >= 3 && self.area() > 1.0
    }

    /// The enclosed area (shoelace formula), whatever the winding direction.
    pub fn area(&self) -> f64 {
        shoelace(&self.points).abs()
    }

    /// The smallest rectangle holding the outline.
    pub fn bounds(&self) -> Option<Rect> {
        let first = self.points.first()?;
        let (mut left, mut top, mut right, mut bottom) = (first.x, first.y, first.x, first.y);
        for p in &self.points {
            left = left.min(p.x);
            top = top.min(p.y);
            right = right.max(p.x);
            bottom = bottom.max(p.y);
        }
        Some(Rect { x: left, y: top, width: right - left, height: bottom - top })
    }

    /// Whether `point` is inside (even–odd rule, so a figure eight's loops both count).
    pub fn contains(&self, point: Point) -> bool {
        let mut inside = false;
        let n = self.points.len();
        for i in 0..n {
            let (a, b) = (self.points[i], self.points[(i + n - 1) % n]);
            if (a.y > point.y) != (b.y > point.y) {
                let crossing = (b.x - a.x) * (point.y - a.y) / (b.y - a.y) + a.x;
                if point.x < crossing {
                    inside = !inside;
                }
            }
        }
        inside
    }

    /// The share of `rect`'s area inside the outline, from 0 to 1: the outline clipped to
    /// the rectangle (Sutherland–Hodgman, exact for a convex clip window), then measured.
    pub fn coverage(&self, rect: Rect) -> f64 {
        let rect_area = rect.width * rect.height;
        if rect_area <= 0.0 {
            return 0.0;
        }
        (shoelace(&clip_to_rect(&self.points, rect)).abs() / rect_area).min(1.0)
    }

    /// Points inside the outline on a grid `step` px apart: where to ask the page which
    /// elements lie under the circle. The grid is the viewport's (multiples of `step`),
    /// not the outline's, so the stroke so far and the released outline share points.
    pub fn grid_inside(&self, step: f64) -> Vec<Point> {
        let Some(bounds) = self.bounds() else { return Vec::new() };
        let step = step.max(1.0);
        let mut samples = Vec::new();
        let mut y = (bounds.y / step).ceil() * step;
        while y < bounds.y + bounds.height {
            let mut x = (bounds.x / step).ceil() * step;
            while x < bounds.x + bounds.width {
                let p = Point { x, y };
                if self.contains(p) {
                    samples.push(p);
                }
                x += step;
            }
            y += step;
        }
        samples
    }

    /// A grid step that keeps the number of samples near `budget` for this outline.
    pub fn grid_step(&self, budget: usize) -> f64 {
        grid_step(self.area(), budget)
    }
}

/// A grid step that puts about `budget` points in `area` (within a factor of two): a
/// power of two from 4 to 64 px, so that grids nest — every point of a coarser grid is
/// a point of each finer one, and points sampled for a smaller outline still serve.
pub fn grid_step(area: f64, budget: usize) -> f64 {
    let ideal = (area / budget.max(1) as f64).sqrt();
    let mut step = 4.0;
    // The nearer power of two on a log scale: double while that halves the distance.
    while step < 64.0 && ideal > step * std::f64::consts::SQRT_2 {
        step *= 2.0;
    }
    step
}

/// Twice-signed area halved: positive counter-clockwise (in y-up terms).
fn shoelace(points: &[Point]) -> f64 {
    let n = points.len();
    if n < 3 {
        return 0.0;
    }
    let mut sum = 0.0;
    for i in 0..n {
        let (a, b) = (points[i], points[(i + 1) % n]);
        sum += a.x * b.y - b.x * a.y;
    }
    sum / 2.0
}

fn clip_to_rect(polygon: &[Point], rect: Rect) -> Vec<Point> {
    let (left, top, right, bottom) = (rect.x, rect.y, rect.x + rect.width, rect.y + rect.height);
    let mut output = polygon.to_vec();
    for edge in [Edge::Left(left), Edge::Right(right), Edge::Top(top), Edge::Bottom(bottom)] {
        let input = std::mem::take(&mut output);
        let Some(&last) = input.last() else { break };
        let mut previous = last;
        for &current in &input {
            match (edge.keeps(current), edge.keeps(previous)) {
                (true, true) => output.push(current),
                (true, false) => {
                    output.push(edge.intersect(previous, current));
                    output.push(current);
                }
                (false, true) => output.push(edge.intersect(previous, current)),
                (false, false) => {}
            }
            previous = current;
        }
    }
    output
}

#[derive(Clone, Copy)]
enum Edge {
    Left(f64),
    Right(f64),
    Top(f64),
    Bottom(f64),
}

impl Edge {
    fn keeps(self, p: Point) -> bool {
        match self {
            Edge::Left(x) => p.x >= x,
            Edge::Right(x) => p.x <= x,
            Edge::Top(y) => p.y >= y,
            Edge::Bottom(y) => p.y <= y,
        }
    }

    fn intersect(self, a: Point, b: Point) -> Point {
        match self {
            Edge::Left(x) | Edge::Right(x) => {
                let t = (x - a.x) / (b.x - a.x);
                Point { x, y: a.y + t * (b.y - a.y) }
            }
            Edge::Top(y) | Edge::Bottom(y) => {
                let t = (y - a.y) / (b.y - a.y);
                Point { x: a.x + t * (b.x - a.x), y }
            }
        }
    }
}

/// Ramer–Douglas–Peucker: drops points closer than `tolerance` to the line through the
/// points kept around them. Iterative, so a long stroke cannot overflow the stack.
fn simplify(points: &[Point], tolerance: f64) -> Vec<Point> {
    if points.len() < 3 {
        return points.to_vec();
    }
    let mut keep = vec![false; points.len()];
    let last = points.len() - 1;
    keep[0] = true;
    keep[last] = true;
    let mut spans = vec![(0, last)];
    while let Some((start, end)) = spans.pop() {
        let mut farthest = (0.0, 0);
        for i in start + 1..end {
            let distance = distance_to_segment(points[i], points[start], points[end]);
            if distance > farthest.0 {
                farthest = (distance, i);
            }
        }
        if farthest.0 > tolerance {
            keep[farthest.1] = true;
            spans.push((start, farthest.1));
            spans.push((farthest.1, end));
        }
    }
    points.iter().zip(keep).filter_map(|(p, k)| k.then_some(*p)).collect()
}

fn distance_to_segment(p: Point, a: Point, b: Point) -> f64 {
    let (dx, dy) = (b.x - a.x, b.y - a.y);
    let length_squared = dx * dx + dy * dy;
    let t = if length_squared == 0.0 {
        0.0
    } else {
        (((p.x - a.x) * dx + (p.y - a.y) * dy) / length_squared).clamp(0.0, 1.0)
    };
    let (cx, cy) = (a.x + t * dx, a.y + t * dy);
    ((p.x - cx).powi(2) + (p.y - cy).powi(2)).sqrt()
}

#[cfg(all(test, not(target_arch = "wasm32")))]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn p(x: f64, y: f64) -> Point {
        Point { x, y }
    }

    fn rect(x: f64, y: f64, width: f64, height: f64) -> Rect {
        Rect { x, y, width, height }
    }

    fn square(x: f64, y: f64, side: f64) -> Polygon {
        Polygon::new(vec![p(x, y), p(x + side, y), p(x + side, y + side), p(x, y + side)])
    }

    /// A circle drawn as a stroke of `n` points.
    fn circle(cx: f64, cy: f64, r: f64, n: usize) -> Vec<Point> {
        (0..n)
            .map(|i| {
                let a = i as f64 / n as f64 * std::f64::consts::TAU;
                p(cx + r * a.cos(), cy + r * a.sin())
            })
            .collect()
    }

    #[test]
    fn area_bounds_and_containment_of_a_square() {
        let sq = square(10.0, 20.0, 100.0);
        assert_eq!(sq.area(), 10_000.0);
        assert_eq!(sq.bounds(), Some(rect(10.0, 20.0, 100.0, 100.0)));
        assert!(sq.contains(p(50.0, 50.0)));
        assert!(!sq.contains(p(5.0, 50.0)));
        assert!(!sq.contains(p(50.0, 130.0)));
    }

    #[test]
    fn coverage_is_the_share_of_the_box_inside() {
        let sq = square(0.0, 0.0, 100.0);
        assert_eq!(sq.coverage(rect(10.0, 10.0, 20.0, 20.0)), 1.0);
        assert_eq!(sq.coverage(rect(200.0, 0.0, 20.0, 20.0)), 0.0);
        assert!((sq.coverage(rect(50.0, 0.0, 100.0, 100.0)) - 0.5).abs() < 1e-9);
        assert!((sq.coverage(rect(75.0, 75.0, 50.0, 50.0)) - 0.25).abs() < 1e-9);
        assert_eq!(sq.coverage(rect(10.0, 10.0, 0.0, 20.0)), 0.0, "zero-size boxes cover nothing");
    }

    #[test]
    fn a_concave_outline_is_clipped_exactly() {
        // An L: the 100×100 square without its top-right quarter.
        let l = Polygon::new(vec![
            p(0.0, 0.0),
            p(50.0, 0.0),
            p(50.0, 50.0),
            p(100.0, 50.0),
            p(100.0, 100.0),
            p(0.0, 100.0),
        ]);
        assert_eq!(l.area(), 7_500.0);
        assert!((l.coverage(rect(0.0, 0.0, 100.0, 100.0)) - 0.75).abs() < 1e-9);
        assert_eq!(l.coverage(rect(60.0, 10.0, 30.0, 30.0)), 0.0);
    }

    #[test]
    fn simplifying_a_dense_stroke_keeps_its_shape_within_tolerance() {
        let stroke = circle(200.0, 200.0, 100.0, 2_000);
        let polygon = Polygon::from_stroke(&stroke, SIMPLIFY_TOLERANCE);
        assert!(polygon.points().len() < 100, "{} points kept", polygon.points().len());
        let exact = std::f64::consts::PI * 100.0 * 100.0;
        assert!((polygon.area() - exact).abs() / exact < 0.03);
        for q in &stroke {
            let nearest = (0..polygon.points().len())
                .map(|i| {
                    let n = polygon.points().len();
                    distance_to_segment(*q, polygon.points()[i], polygon.points()[(i + 1) % n])
                })
                .fold(f64::INFINITY, f64::min);
            assert!(nearest <= SIMPLIFY_TOLERANCE + 1e-9);
        }
    }

    #[test]
    fn a_click_or_a_line_encloses_nothing() {
        assert!(!Polygon::from_stroke(&[p(5.0, 5.0), p(5.0, 5.0)], 2.0).is_area());
        assert!(!Polygon::from_stroke(&[p(0.0, 0.0), p(50.0, 0.0), p(100.0, 0.0)], 2.0).is_area());
        assert!(!Polygon::from_stroke(&[p(0.0, 0.0), p(f64::NAN, 1.0)], 2.0).is_area());
    }

    #[test]
    fn grid_samples_lie_inside_and_respect_the_budget() {
        let polygon = Polygon::from_stroke(&circle(300.0, 300.0, 150.0, 400), 2.0);
        let step = polygon.grid_step(400);
        let samples = polygon.grid_inside(step);
        assert!(samples.iter().all(|s| polygon.contains(*s)));
        assert!((200..=800).contains(&samples.len()), "{} samples", samples.len());
    }

    #[test]
    fn grids_nest_so_a_growing_outline_reuses_its_samples() {
        let small = Polygon::from_stroke(&circle(300.0, 300.0, 60.0, 200), 2.0);
        let large = Polygon::from_stroke(&circle(300.0, 300.0, 150.0, 400), 2.0);
        let (fine, coarse) = (small.grid_step(64), large.grid_step(64));
        assert!(coarse > fine && coarse % fine == 0.0, "{fine} {coarse}");
        let fine_points = small.grid_inside(fine);
        for point in large.grid_inside(coarse).into_iter().filter(|p| small.contains(*p)) {
            assert!(fine_points.contains(&point), "{point:?}");
        }
    }

    fn arb_rect() -> impl Strategy<Value = Rect> {
        (-50.0..250.0f64, -50.0..250.0f64, 0.5..150.0f64, 0.5..150.0f64)
            .prop_map(|(x, y, w, h)| rect(x, y, w, h))
    }

    fn arb_star() -> impl Strategy<Value = Polygon> {
        // Star-shaped around (100,100): always a simple polygon, often concave.
        prop::collection::vec(10.0..120.0f64, 3..40).prop_map(|radii| {
            let n = radii.len();
            Polygon::new(
                radii
                    .iter()
                    .enumerate()
                    .map(|(i, r)| {
                        let a = i as f64 / n as f64 * std::f64::consts::TAU;
                        p(100.0 + r * a.cos(), 100.0 + r * a.sin())
                    })
                    .collect(),
            )
        })
    }

    proptest! {
        #[test]
        fn coverage_is_a_share(polygon in arb_star(), r in arb_rect()) {
            let c = polygon.coverage(r);
            prop_assert!((0.0..=1.0).contains(&c));
        }

        #[test]
        fn coverage_agrees_with_sampling(polygon in arb_star(), r in arb_rect()) {
            // Monte-Carlo on a fine grid: the exact clip and the count agree closely.
            let (n, mut inside) = (40, 0);
            for i in 0..n {
                for j in 0..n {
                    let q = p(r.x + (i as f64 + 0.5) * r.width / n as f64, r.y + (j as f64 + 0.5) * r.height / n as f64);
                    if polygon.contains(q) { inside += 1; }
                }
            }
            let sampled = inside as f64 / (n * n) as f64;
            prop_assert!((polygon.coverage(r) - sampled).abs() < 0.08, "exact {} sampled {}", polygon.coverage(r), sampled);
        }

        #[test]
        fn a_box_inside_the_bounds_of_a_square_is_fully_covered(x in 0.0..90.0f64, y in 0.0..90.0f64) {
            prop_assert!((square(0.0, 0.0, 100.0).coverage(rect(x, y, 10.0, 10.0)) - 1.0).abs() < 1e-9);
        }

        #[test]
        fn simplifying_never_grows_and_keeps_the_ends(stroke in prop::collection::vec((0.0..500.0f64, 0.0..500.0f64), 0..300)) {
            let stroke: Vec<Point> = stroke.into_iter().map(|(x, y)| p(x, y)).collect();
            let polygon = Polygon::from_stroke(&stroke, SIMPLIFY_TOLERANCE);
            prop_assert!(polygon.points().len() <= stroke.len());
            if stroke.len() >= 2 && stroke[0] != stroke[1] {
                prop_assert_eq!(polygon.points().first(), stroke.first());
            }
        }
    }
}

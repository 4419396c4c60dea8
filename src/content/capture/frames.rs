//! Where a frame's viewport sits in the top page's viewport. Pure: the page adapter
//! reads each frame element's content box in its parent, this maps boxes out of a frame
//! (to file them, to outline them) and the outline into it (to capture inside it).

use redline_protocol::{Point, Rect};

/// A frame's viewport as seen from the top page: its top-left corner there, and the
/// part of the top viewport it shows (a frame shows its content only inside its box,
/// and inside the boxes of the frames around it).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FrameView {
    pub origin: Point,
    pub clip: Rect,
}

impl FrameView {
    /// The frame whose content box is `content`, in the top viewport.
    pub fn in_top(content: Rect) -> FrameView {
        FrameView { origin: Point { x: content.x, y: content.y }, clip: content }
    }

    /// A frame inside this one, whose content box is `content` in this frame's viewport.
    pub fn child(&self, content: Rect) -> FrameView {
        let content = self.offset(content);
        FrameView { origin: Point { x: content.x, y: content.y }, clip: intersection(self.clip, content) }
    }

    /// A box in this frame's viewport, in the top viewport: only the part the frame
    /// shows (an empty box at the nearest edge when it shows none of it).
    pub fn to_top(&self, rect: Rect) -> Rect {
        intersection(self.clip, self.offset(rect))
    }

    /// A point of the top viewport, in this frame's viewport.
    pub fn into_frame(&self, point: Point) -> Point {
        Point { x: point.x - self.origin.x, y: point.y - self.origin.y }
    }

    fn offset(&self, rect: Rect) -> Rect {
        Rect { x: rect.x + self.origin.x, y: rect.y + self.origin.y, ..rect }
    }
}

/// The part of `b` inside `a`; where they do not meet, an empty box at the edge of `a`
/// nearest to `b`.
fn intersection(a: Rect, b: Rect) -> Rect {
    // `max`/`min`, not `clamp`: its panic message would bring Rust's float formatting
    // into the page (see `page_js`).
    let within = |v: f64, low: f64, high: f64| v.max(low).min(high);
    let x = within(b.x, a.x, a.x + a.width);
    let y = within(b.y, a.y, a.y + a.height);
    let right = within(b.x + b.width, a.x, a.x + a.width);
    let bottom = within(b.y + b.height, a.y, a.y + a.height);
    Rect { x, y, width: (right - x).max(0.0), height: (bottom - y).max(0.0) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rect(x: f64, y: f64, width: f64, height: f64) -> Rect {
        Rect { x, y, width, height }
    }

    #[test]
    fn boxes_in_a_frame_move_by_its_corner_and_are_cut_to_what_it_shows() {
        let frame = FrameView::in_top(rect(100.0, 50.0, 300.0, 200.0));
        assert_eq!(frame.to_top(rect(10.0, 20.0, 80.0, 30.0)), rect(110.0, 70.0, 80.0, 30.0));
        // Half of it scrolled out of the frame's bottom edge.
        assert_eq!(frame.to_top(rect(0.0, 185.0, 50.0, 30.0)), rect(100.0, 235.0, 50.0, 15.0));
        // Wholly below the frame: nothing of it shows.
        assert_eq!(frame.to_top(rect(0.0, 400.0, 50.0, 30.0)), rect(100.0, 250.0, 50.0, 0.0));
        assert_eq!(frame.into_frame(Point { x: 150.0, y: 60.0 }), Point { x: 50.0, y: 10.0 });
    }

    #[test]
    fn nested_frames_add_their_corners_and_show_only_what_both_show() {
        let outer = FrameView::in_top(rect(100.0, 100.0, 400.0, 300.0));
        let inner = outer.child(rect(350.0, 20.0, 200.0, 100.0));
        assert_eq!(inner.origin, Point { x: 450.0, y: 120.0 });
        assert_eq!(inner.clip, rect(450.0, 120.0, 50.0, 100.0), "the outer frame cuts the inner one");
        assert_eq!(inner.to_top(rect(10.0, 10.0, 20.0, 20.0)), rect(460.0, 130.0, 20.0, 20.0));
        assert_eq!(inner.to_top(rect(60.0, 10.0, 20.0, 20.0)).width, 0.0, "past the outer frame's edge");
        let point = Point { x: 470.0, y: 140.0 };
        assert_eq!(inner.into_frame(point), Point { x: 20.0, y: 20.0 });
    }
}

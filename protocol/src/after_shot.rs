//! The framing of "Check on stage"'s after-shot: the page scrolled so the found elements
//! sit in the middle of the viewport, and the screenshot cropped to them with a margin.
//! The extension's panel frames the after-shot it uploads this way, and `redline guard`
//! frames today's shot the same way, so the two compare pixel for pixel.

use crate::{Point, Rect, Viewport};

/// CSS px of context kept around the elements in the after-shot.
pub const CROP_MARGIN: f64 = 48.0;

/// The smallest rectangle holding every one of `rects` with an area.
pub fn union(rects: &[Rect]) -> Option<Rect> {
    let mut it = rects.iter().filter(|r| r.width > 0.0 && r.height > 0.0);
    let first = *it.next()?;
    let (mut left, mut top, mut right, mut bottom) =
        (first.x, first.y, first.x + first.width, first.y + first.height);
    for r in it {
        left = left.min(r.x);
        top = top.min(r.y);
        right = right.max(r.x + r.width);
        bottom = bottom.max(r.y + r.height);
    }
    Some(Rect { x: left, y: top, width: right - left, height: bottom - top })
}

/// Where to scroll so `boxes` (viewport CSS px at `scroll`) together sit in the middle of
/// the viewport (their top-left corner, with a little room, when they are larger than
/// it); `None` when none has an area.
pub fn centring_scroll(boxes: &[Rect], scroll: Point, viewport: Viewport) -> Option<Point> {
    let region = union(boxes)?;
    let offset = |start: f64, size: f64, view: f64| {
        if size >= view { start - 16.0 } else { start + size / 2.0 - view / 2.0 }
    };
    Some(Point {
        x: (scroll.x + offset(region.x, region.width, viewport.width)).max(0.0),
        y: (scroll.y + offset(region.y, region.height, viewport.height)).max(0.0),
    })
}

/// The crop in device px of a `width` × `height` screenshot taken at `scale` device px
/// per CSS px: `region` (CSS px) plus [`CROP_MARGIN`], inside the image, whole pixels.
pub fn crop_rect(region: Rect, scale: f64, width: f64, height: f64) -> Rect {
    let left = ((region.x - CROP_MARGIN) * scale).clamp(0.0, width - 1.0).floor();
    let top = ((region.y - CROP_MARGIN) * scale).clamp(0.0, height - 1.0).floor();
    let right = ((region.x + region.width + CROP_MARGIN) * scale).clamp(left + 1.0, width).ceil();
    let bottom = ((region.y + region.height + CROP_MARGIN) * scale).clamp(top + 1.0, height).ceil();
    Rect { x: left, y: top, width: right - left, height: bottom - top }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rect(x: f64, y: f64, width: f64, height: f64) -> Rect {
        Rect { x, y, width, height }
    }

    #[test]
    fn the_union_skips_empty_boxes() {
        assert_eq!(
            union(&[rect(10.0, 10.0, 5.0, 5.0), rect(0.0, 30.0, 0.0, 9.0), rect(20.0, 0.0, 10.0, 4.0)]),
            Some(rect(10.0, 0.0, 20.0, 15.0))
        );
        assert_eq!(union(&[rect(1.0, 1.0, 0.0, 0.0)]), None);
    }

    #[test]
    fn boxes_are_centred_and_never_scrolled_above_the_page() {
        let view = Viewport { width: 800.0, height: 600.0 };
        let at = centring_scroll(&[rect(100.0, 900.0, 200.0, 100.0)], Point { x: 0.0, y: 0.0 }, view);
        assert_eq!(at, Some(Point { x: 0.0, y: 650.0 }));
        let big = centring_scroll(&[rect(0.0, 100.0, 900.0, 700.0)], Point { x: 0.0, y: 50.0 }, view);
        assert_eq!(big, Some(Point { x: 0.0, y: 134.0 }));
        assert_eq!(centring_scroll(&[], Point { x: 0.0, y: 0.0 }, view), None);
    }

    #[test]
    fn the_crop_keeps_a_margin_inside_the_image() {
        assert_eq!(
            crop_rect(rect(100.0, 100.0, 50.0, 20.0), 2.0, 1600.0, 1200.0),
            rect(104.0, 104.0, 292.0, 232.0)
        );
        assert_eq!(crop_rect(rect(10.0, 10.0, 50.0, 20.0), 1.0, 100.0, 60.0), rect(0.0, 0.0, 100.0, 60.0));
    }
}

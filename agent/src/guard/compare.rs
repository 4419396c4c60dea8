//! What `redline guard` decides, with no browser and no server: whether today's shot of a
//! verified fix still shows it. Pure, tested natively.
//!
//! Today's shot is framed as the panel framed the verified after-shot (scrolled so the
//! elements sit mid-viewport, cropped to them with a margin: `redline_protocol::after_shot`),
//! so on an unchanged build the two are the same size and the elements sit at the same
//! place. The pixels compared are those inside the elements' boxes: the after-shot also
//! holds the panel's outlines and labels around them, and the margin shows whatever is
//! beside them, which a later commit may change without touching the fix.

use redline_protocol::Rect;

/// An image as RGBA bytes, 4 a pixel, row by row.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pixels {
    pub width: u32,
    pub height: u32,
    pub rgba: Vec<u8>,
}

impl Pixels {
    /// A `width` × `height` image of one colour.
    pub fn filled(width: u32, height: u32, colour: [u8; 4]) -> Pixels {
        Pixels { width, height, rgba: colour.repeat((width * height) as usize) }
    }

    fn at(&self, x: u32, y: u32) -> [u8; 4] {
        let i = ((y * self.width + x) * 4) as usize;
        [self.rgba[i], self.rgba[i + 1], self.rgba[i + 2], self.rgba[i + 3]]
    }

    fn set(&mut self, x: u32, y: u32, colour: [u8; 4]) {
        let i = ((y * self.width + x) * 4) as usize;
        self.rgba[i..i + 4].copy_from_slice(&colour);
    }

    /// The part `crop` (whole pixels inside the image) of this image.
    pub fn cropped(&self, crop: Rect) -> Pixels {
        let (x0, y0) = (crop.x.max(0.0) as u32, crop.y.max(0.0) as u32);
        let width = (crop.width as u32).min(self.width.saturating_sub(x0));
        let height = (crop.height as u32).min(self.height.saturating_sub(y0));
        let mut rgba = Vec::with_capacity((width * height * 4) as usize);
        for y in y0..y0 + height {
            let start = ((y * self.width + x0) * 4) as usize;
            rgba.extend_from_slice(&self.rgba[start..start + (width * 4) as usize]);
        }
        Pixels { width, height, rgba }
    }
}

/// How far today's shot may be from the verified one and still show the fix.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    /// A pixel differs when one of its channels differs by more than this (0–255): the
    /// after-shot is a lossy WebP (quality 0.9) under the panel's faint tint, so a few
    /// levels of difference mean nothing.
    pub channel: u8,
    /// The share of the elements' pixels that may differ (0–1).
    pub share: f64,
    /// Device px by which the shot's width or height may differ: the framing follows the
    /// elements' size and place, so a larger difference means they moved or resized.
    pub size_px: u32,
}

impl Default for Tolerance {
    fn default() -> Self {
        Tolerance { channel: 48, share: 0.02, size_px: 2 }
    }
}

/// What today's page says about one verified fix.
#[derive(Debug, Clone, PartialEq)]
pub enum Finding {
    /// The elements are there and look as verified: `share` of their pixels differ.
    Unchanged { share: f64 },
    /// These elements (their labels) were not found on the page.
    Gone { labels: Vec<String> },
    /// The framing around the elements has another size: they moved or resized.
    Resized { verified: (u32, u32), today: (u32, u32) },
    /// More than the tolerance of the elements' pixels differ.
    Changed { share: f64 },
}

impl Finding {
    pub fn regressed(&self) -> bool {
        !matches!(self, Finding::Unchanged { .. })
    }

    /// What the report says: "the element orders.export is gone", "12.5% of its pixels
    /// changed", …
    pub fn sentence(&self) -> String {
        match self {
            Finding::Unchanged { share } => format!("unchanged ({} of its pixels differ)", percent(*share)),
            Finding::Gone { labels } => format!("not on the page: {}", labels.join(", ")),
            Finding::Resized { verified, today } => format!(
                "moved or resized: the shot around it is {}×{} px, was {}×{} px",
                today.0, today.1, verified.0, verified.1
            ),
            Finding::Changed { share } => format!("{} of its pixels changed", percent(*share)),
        }
    }
}

fn percent(share: f64) -> String {
    format!("{:.1}%", share * 100.0)
}

/// Compares today's shot with the verified one over `boxes` (the elements in today's
/// shot, device px), and draws the difference: today's shot faded, with the pixels that
/// differ in red.
pub fn compare(verified: &Pixels, today: &Pixels, boxes: &[Rect], tolerance: Tolerance) -> (Finding, Pixels) {
    let resized = verified.width.abs_diff(today.width) > tolerance.size_px
        || verified.height.abs_diff(today.height) > tolerance.size_px;
    let (width, height) = (verified.width.min(today.width), verified.height.min(today.height));
    let mut difference = today.clone();
    let (mut compared, mut differing) = (0u64, 0u64);
    for y in 0..today.height {
        for x in 0..today.width {
            let now = today.at(x, y);
            let faded = now.map(|c| 255 - (255 - c) / 4);
            let differs = x < width && y < height && {
                let was = verified.at(x, y);
                was.iter().zip(now).take(3).any(|(a, b)| a.abs_diff(b) > tolerance.channel)
            };
            if inside(boxes, x, y) && x < width && y < height {
                compared += 1;
                differing += u64::from(differs);
            }
            difference.set(
                x,
                y,
                if differs { [220, 38, 38, 255] } else { [faded[0], faded[1], faded[2], 255] },
            );
        }
    }
    let finding = if resized {
        Finding::Resized { verified: (verified.width, verified.height), today: (today.width, today.height) }
    } else {
        let share = if compared == 0 { 1.0 } else { differing as f64 / compared as f64 };
        if share > tolerance.share { Finding::Changed { share } } else { Finding::Unchanged { share } }
    };
    (finding, difference)
}

fn inside(boxes: &[Rect], x: u32, y: u32) -> bool {
    let (x, y) = (f64::from(x) + 0.5, f64::from(y) + 0.5);
    boxes.iter().any(|b| x >= b.x && x < b.x + b.width && y >= b.y && y < b.y + b.height)
}

/// The elements' boxes (viewport CSS px) in a shot cropped at `crop` (device px) from a
/// screenshot taken at `scale` device px per CSS px.
pub fn boxes_in_crop(boxes: &[Rect], crop: Rect, scale: f64) -> Vec<Rect> {
    boxes
        .iter()
        .map(|b| Rect {
            x: b.x * scale - crop.x,
            y: b.y * scale - crop.y,
            width: b.width * scale,
            height: b.height * scale,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const WHITE: [u8; 4] = [255, 255, 255, 255];
    const BLUE: [u8; 4] = [37, 99, 235, 255];

    fn button_on_white(colour: [u8; 4]) -> Pixels {
        let mut image = Pixels::filled(100, 60, WHITE);
        for y in 20..40 {
            for x in 30..70 {
                image.set(x, y, colour);
            }
        }
        image
    }

    fn button() -> Vec<Rect> {
        vec![Rect { x: 30.0, y: 20.0, width: 40.0, height: 20.0 }]
    }

    #[test]
    fn the_same_button_is_unchanged_despite_compression_noise() {
        let verified = button_on_white(BLUE);
        let noisy = button_on_white([BLUE[0] + 9, BLUE[1] - 7, BLUE[2], 255]);
        let (finding, _) = compare(&verified, &noisy, &button(), Tolerance::default());
        assert_eq!(finding, Finding::Unchanged { share: 0.0 });
        assert!(!finding.regressed());
    }

    #[test]
    fn a_button_whose_colour_went_back_has_changed() {
        let verified = button_on_white(BLUE);
        let today = button_on_white([220, 38, 38, 255]);
        let (finding, difference) = compare(&verified, &today, &button(), Tolerance::default());
        assert_eq!(finding, Finding::Changed { share: 1.0 });
        assert_eq!(finding.sentence(), "100.0% of its pixels changed");
        assert_eq!(difference.at(35, 25), [220, 38, 38, 255], "a differing pixel is red");
        assert_eq!(difference.at(5, 5), WHITE, "an equal white pixel stays white");
    }

    #[test]
    fn what_changed_beside_the_element_does_not_count() {
        let verified = button_on_white(BLUE);
        let mut today = button_on_white(BLUE);
        for x in 0..100 {
            today.set(x, 2, [0, 0, 0, 255]);
        }
        let (finding, difference) = compare(&verified, &today, &button(), Tolerance::default());
        assert_eq!(finding, Finding::Unchanged { share: 0.0 });
        assert_eq!(difference.at(50, 2), [220, 38, 38, 255], "but the difference image shows it");
    }

    #[test]
    fn a_small_change_within_the_share_passes_and_a_larger_one_does_not() {
        let verified = button_on_white(BLUE);
        let mut today = button_on_white(BLUE);
        today.set(31, 21, [0, 0, 0, 255]); // 1 of 800 pixels
        assert!(!compare(&verified, &today, &button(), Tolerance::default()).0.regressed());
        for x in 30..70 {
            today.set(x, 22, [0, 0, 0, 255]); // 40 of 800: 5%
        }
        let (finding, _) = compare(&verified, &today, &button(), Tolerance::default());
        assert_eq!(finding.sentence(), "5.1% of its pixels changed");
    }

    #[test]
    fn a_shot_of_another_size_means_the_element_moved_or_resized() {
        let verified = button_on_white(BLUE);
        let today = Pixels::filled(100, 90, WHITE);
        let (finding, _) = compare(&verified, &today, &button(), Tolerance::default());
        assert_eq!(finding, Finding::Resized { verified: (100, 60), today: (100, 90) });
        let within = Pixels::filled(101, 60, WHITE);
        let (finding, _) =
            compare(&verified, &within, &button(), Tolerance { share: 1.0, ..Tolerance::default() });
        assert!(!finding.regressed(), "a pixel more is within the tolerance");
    }

    #[test]
    fn a_crop_and_its_boxes_line_up() {
        let image = button_on_white(BLUE);
        let crop = Rect { x: 20.0, y: 10.0, width: 60.0, height: 40.0 };
        let part = image.cropped(crop);
        assert_eq!((part.width, part.height), (60, 40));
        assert_eq!(part.at(10, 10), BLUE);
        let boxes = boxes_in_crop(&[Rect { x: 15.0, y: 10.0, width: 20.0, height: 10.0 }], crop, 2.0);
        assert_eq!(boxes, vec![Rect { x: 10.0, y: 10.0, width: 40.0, height: 20.0 }]);
        assert_eq!(
            Finding::Gone { labels: vec!["orders.export".into()] }.sentence(),
            "not on the page: orders.export"
        );
    }
}

//! Hiding parts of the screenshot before it leaves the browser. In the composer the filer
//! paints boxes over the screenshot (dragging with the pointer, or "Hide part of the
//! screenshot" and the arrow keys). A box is kept in viewport CSS px, the screenshot
//! being the viewport shown at its size, and blacks out every device pixel it touches
//! in the image filed and in the crop shown. Pure: `ui/shot.rs` replaces the pixels and
//! `ui/overlay.rs` shows and edits the boxes.

use redline_protocol::{Point, Rect, Viewport};

/// How far one arrow key moves or resizes a box, in CSS px.
pub const STEP: f64 = 8.0;
/// The shortest side a box has, in CSS px: a smaller one would be hard to see and to hit.
pub const MIN_SIDE: f64 = 8.0;
/// The size of a box added from the keyboard, in CSS px: about a line of text.
const NEW_SIZE: (f64, f64) = (160.0, 48.0);
/// Each box added from the keyboard sits this far below and right of the one added
/// before it, so that none lies exactly on another.
const CASCADE: f64 = 24.0;

/// One box over the screenshot; its `id` stays while it is moved and resized.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct HiddenArea {
    pub id: u32,
    pub rect: Rect,
}

impl HiddenArea {
    /// Its accessible name, `number` counting from 1: what it is, its size and place.
    pub fn label(&self, number: usize) -> String {
        let Rect { x, y, width, height } = self.rect;
        format!("Hidden area {number}: {width:.0} × {height:.0} px at {x:.0}, {y:.0}")
    }
}

/// What a key does to the focused box.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Edit {
    Move {
        dx: f64,
        dy: f64,
    },
    /// Moves the right and bottom edges.
    Resize {
        dw: f64,
        dh: f64,
    },
    Remove,
}

impl Edit {
    /// Arrows move the box by [`STEP`]; Shift+arrows resize it (right and down grow it,
    /// left and up shrink it); Delete and Backspace remove it.
    pub fn for_key(key: &str, shift: bool) -> Option<Edit> {
        let (x, y) = match key {
            "ArrowLeft" => (-STEP, 0.0),
            "ArrowRight" => (STEP, 0.0),
            "ArrowUp" => (0.0, -STEP),
            "ArrowDown" => (0.0, STEP),
            "Delete" | "Backspace" => return Some(Edit::Remove),
            _ => return None,
        };
        Some(if shift { Edit::Resize { dw: x, dh: y } } else { Edit::Move { dx: x, dy: y } })
    }
}

/// A run of device pixels to black out: whole pixels, inside the image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PixelRect {
    pub x: u32,
    pub y: u32,
    pub width: u32,
    pub height: u32,
}

/// The boxes painted over one screenshot of `area` (the viewport, CSS px). Every box
/// lies inside the area and, where the area allows, has sides of at least [`MIN_SIDE`].
#[derive(Clone, Debug, PartialEq)]
pub struct Redactions {
    area: Viewport,
    boxes: Vec<HiddenArea>,
    next_id: u32,
}

impl Redactions {
    pub fn new(area: Viewport) -> Redactions {
        Redactions { area, boxes: Vec::new(), next_id: 1 }
    }

    pub fn area(&self) -> Viewport {
        self.area
    }

    pub fn boxes(&self) -> &[HiddenArea] {
        &self.boxes
    }

    pub fn is_empty(&self) -> bool {
        self.boxes.is_empty()
    }

    /// How many parts are hidden, said for the composer; `None` while none is.
    pub fn summary(&self) -> Option<String> {
        match self.boxes.len() {
            0 => None,
            1 => Some("1 part hidden".to_owned()),
            n => Some(format!("{n} parts hidden")),
        }
    }

    /// The box `id` and its number (from 1, in the order added), if it is still there.
    pub fn find(&self, id: u32) -> Option<(usize, HiddenArea)> {
        self.boxes.iter().position(|b| b.id == id).map(|i| (i + 1, self.boxes[i]))
    }

    /// Adds a box of a line's size in the middle of the area (each further one a little
    /// lower and to the right) and says its id.
    pub fn add(&mut self) -> u32 {
        let width = NEW_SIZE.0.min(self.area.width);
        let height = NEW_SIZE.1.min(self.area.height);
        let offset = self.boxes.len() as f64 * CASCADE;
        let rect = Rect {
            x: (self.area.width - width) / 2.0 + offset,
            y: (self.area.height - height) / 2.0 + offset,
            width,
            height,
        };
        self.push(self.moved(rect, 0.0, 0.0))
    }

    /// Adds the box dragged from `from` to `to`, unless it is thinner than [`MIN_SIDE`]
    /// (a click, not a drag), and says its id.
    pub fn add_drawn(&mut self, from: Point, to: Point) -> Option<u32> {
        let rect = self.drawn(from, to);
        (rect.width >= MIN_SIDE && rect.height >= MIN_SIDE).then(|| self.push(rect))
    }

    /// The box a drag from `from` to `to` paints, inside the area.
    pub fn drawn(&self, from: Point, to: Point) -> Rect {
        let inside =
            |p: Point| Point { x: within(p.x, 0.0, self.area.width), y: within(p.y, 0.0, self.area.height) };
        let (a, b) = (inside(from), inside(to));
        Rect { x: a.x.min(b.x), y: a.y.min(b.y), width: (a.x - b.x).abs(), height: (a.y - b.y).abs() }
    }

    /// Applies `edit` to the box `id`, keeping it inside the area.
    pub fn edit(&mut self, id: u32, edit: Edit) {
        let Some(index) = self.boxes.iter().position(|b| b.id == id) else { return };
        let rect = self.boxes[index].rect;
        self.boxes[index].rect = match edit {
            Edit::Move { dx, dy } => self.moved(rect, dx, dy),
            Edit::Resize { dw, dh } => self.resized(rect, dw, dh),
            Edit::Remove => {
                self.boxes.remove(index);
                return;
            }
        };
    }

    /// Puts the box `id`'s top left corner at `at` (where the pointer dragged it), or as
    /// near as keeps it inside the area.
    pub fn place(&mut self, id: u32, at: Point) {
        if let Some(b) = self.boxes.iter().find(|b| b.id == id) {
            let (dx, dy) = (at.x - b.rect.x, at.y - b.rect.y);
            self.edit(id, Edit::Move { dx, dy });
        }
    }

    /// The device pixels to black out in an image of `width` × `height` taken at
    /// `device_pixel_ratio`: every pixel a box touches, even in part, and none outside
    /// the image. A ratio that is not a positive number is taken from the image's width,
    /// so that a bad ratio never leaves a box unpainted.
    pub fn pixels(&self, device_pixel_ratio: f64, width: u32, height: u32) -> Vec<PixelRect> {
        let scale = if device_pixel_ratio.is_finite() && device_pixel_ratio > 0.0 {
            device_pixel_ratio
        } else {
            f64::from(width) / self.area.width
        };
        let (width, height) = (f64::from(width), f64::from(height));
        self.boxes
            .iter()
            .filter_map(|b| {
                let left = within((b.rect.x * scale).floor(), 0.0, width);
                let top = within((b.rect.y * scale).floor(), 0.0, height);
                let right = within(((b.rect.x + b.rect.width) * scale).ceil(), left, width);
                let bottom = within(((b.rect.y + b.rect.height) * scale).ceil(), top, height);
                (right > left && bottom > top).then_some(PixelRect {
                    x: left as u32,
                    y: top as u32,
                    width: (right - left) as u32,
                    height: (bottom - top) as u32,
                })
            })
            .collect()
    }

    fn push(&mut self, rect: Rect) -> u32 {
        let id = self.next_id;
        self.next_id += 1;
        self.boxes.push(HiddenArea { id, rect });
        id
    }

    fn moved(&self, rect: Rect, dx: f64, dy: f64) -> Rect {
        Rect {
            x: within(rect.x + dx, 0.0, self.area.width - rect.width),
            y: within(rect.y + dy, 0.0, self.area.height - rect.height),
            ..rect
        }
    }

    fn resized(&self, rect: Rect, dw: f64, dh: f64) -> Rect {
        Rect {
            width: within(rect.width + dw, MIN_SIDE, self.area.width - rect.x),
            height: within(rect.height + dh, MIN_SIDE, self.area.height - rect.y),
            ..rect
        }
    }
}

/// `value` no lower than `low` and no higher than `high`; `high` wins where they cross
/// (an area smaller than a box), where `f64::clamp` would panic.
fn within(value: f64, low: f64, high: f64) -> f64 {
    value.max(low).min(high)
}

#[cfg(test)]
mod tests {
    use super::*;

    const AREA: Viewport = Viewport { width: 1200.0, height: 700.0 };

    fn rect(x: f64, y: f64, width: f64, height: f64) -> Rect {
        Rect { x, y, width, height }
    }

    fn p(x: f64, y: f64) -> Point {
        Point { x, y }
    }

    #[test]
    fn keys_move_resize_and_remove() {
        assert_eq!(Edit::for_key("ArrowLeft", false), Some(Edit::Move { dx: -STEP, dy: 0.0 }));
        assert_eq!(Edit::for_key("ArrowDown", false), Some(Edit::Move { dx: 0.0, dy: STEP }));
        assert_eq!(Edit::for_key("ArrowRight", true), Some(Edit::Resize { dw: STEP, dh: 0.0 }));
        assert_eq!(Edit::for_key("ArrowUp", true), Some(Edit::Resize { dw: 0.0, dh: -STEP }));
        assert_eq!(Edit::for_key("Delete", false), Some(Edit::Remove));
        assert_eq!(Edit::for_key("Backspace", true), Some(Edit::Remove));
        assert_eq!(Edit::for_key("Enter", false), None);
        assert_eq!(Edit::for_key("a", false), None);
    }

    #[test]
    fn a_new_box_is_a_line_in_the_middle_and_the_next_is_offset() {
        let mut r = Redactions::new(AREA);
        let first = r.add();
        let second = r.add();
        assert_ne!(first, second);
        assert_eq!(r.find(first), Some((1, HiddenArea { id: first, rect: rect(520.0, 326.0, 160.0, 48.0) })));
        assert_eq!(r.find(second).unwrap().1.rect, rect(544.0, 350.0, 160.0, 48.0));
        assert_eq!(r.find(second).unwrap().0, 2);
    }

    #[test]
    fn a_new_box_fits_a_tiny_area() {
        let mut r = Redactions::new(Viewport { width: 100.0, height: 30.0 });
        let id = r.add();
        assert_eq!(r.find(id).unwrap().1.rect, rect(0.0, 0.0, 100.0, 30.0));
    }

    /// Keys pressed: each `(key, shift, times)` in turn.
    type Presses = &'static [(&'static str, bool, usize)];

    /// The box added in the middle of `AREA` after `keys`.
    fn pressed(keys: Presses) -> Rect {
        let mut r = Redactions::new(AREA);
        let id = r.add();
        for &(key, shift, times) in keys {
            for _ in 0..times {
                r.edit(id, Edit::for_key(key, shift).unwrap());
            }
        }
        r.find(id).unwrap().1.rect
    }

    #[test]
    fn arrows_move_and_shift_arrows_resize_a_box_inside_the_area() {
        let cases: [(Presses, Rect); 5] = [
            (&[("ArrowLeft", false, 1), ("ArrowUp", false, 1)], rect(512.0, 318.0, 160.0, 48.0)),
            // A move stops at the edge.
            (&[("ArrowLeft", false, 200), ("ArrowDown", false, 200)], rect(0.0, 652.0, 160.0, 48.0)),
            // Resizing moves the right and bottom edges, down to the minimum, up to the area's edge.
            (&[("ArrowRight", true, 1), ("ArrowDown", true, 1)], rect(520.0, 326.0, 168.0, 56.0)),
            (&[("ArrowLeft", true, 100), ("ArrowUp", true, 100)], rect(520.0, 326.0, MIN_SIDE, MIN_SIDE)),
            (&[("ArrowRight", true, 200)], rect(520.0, 326.0, 680.0, 48.0)),
        ];
        for (keys, expected) in cases {
            assert_eq!(pressed(keys), expected, "{keys:?}");
        }
    }

    #[test]
    fn a_dragged_box_goes_where_it_is_put_inside_the_area() {
        let mut r = Redactions::new(AREA);
        let id = r.add();
        r.place(id, p(100.5, 40.0));
        assert_eq!(r.find(id).unwrap().1.rect, rect(100.5, 40.0, 160.0, 48.0));
        r.place(id, p(1190.0, -30.0));
        assert_eq!(r.find(id).unwrap().1.rect, rect(1040.0, 0.0, 160.0, 48.0));
    }

    #[test]
    fn delete_removes_only_that_box() {
        let mut r = Redactions::new(AREA);
        let (first, second) = (r.add(), r.add());
        r.edit(first, Edit::Remove);
        assert_eq!(r.find(first), None);
        assert_eq!(r.find(second).unwrap().0, 1, "the one left is now the first");
        r.edit(first, Edit::for_key("ArrowLeft", false).unwrap());
        assert_eq!(r.boxes().len(), 1, "editing a removed box does nothing");
        assert_ne!(r.add(), first, "ids are not reused");
    }

    #[test]
    fn a_drag_paints_a_box_whichever_way_it_goes_and_a_click_paints_none() {
        let mut r = Redactions::new(AREA);
        let id = r.add_drawn(p(300.0, 200.0), p(100.0, 150.0)).unwrap();
        assert_eq!(r.find(id).unwrap().1.rect, rect(100.0, 150.0, 200.0, 50.0));
        let id = r.add_drawn(p(1100.0, 650.0), p(1500.0, 900.0)).unwrap();
        assert_eq!(r.find(id).unwrap().1.rect, rect(1100.0, 650.0, 100.0, 50.0), "cut at the area's edge");
        assert_eq!(r.add_drawn(p(10.0, 10.0), p(12.0, 40.0)), None);
        assert_eq!(r.boxes().len(), 2);
    }

    #[test]
    fn the_composer_says_how_many_parts_are_hidden() {
        let mut r = Redactions::new(AREA);
        assert_eq!(r.summary(), None);
        r.add();
        assert_eq!(r.summary().as_deref(), Some("1 part hidden"));
        r.add();
        assert_eq!(r.summary().as_deref(), Some("2 parts hidden"));
    }

    #[test]
    fn a_box_is_named_by_number_size_and_place() {
        let area = HiddenArea { id: 7, rect: rect(520.0, 326.4, 160.0, 48.0) };
        assert_eq!(area.label(2), "Hidden area 2: 160 × 48 px at 520, 326");
    }

    #[test]
    fn pixels_cover_every_device_pixel_a_box_touches() {
        let mut r = Redactions::new(AREA);
        r.add_drawn(p(10.25, 20.5), p(30.5, 40.0));
        assert_eq!(r.pixels(1.0, 1200, 700), vec![PixelRect { x: 10, y: 20, width: 21, height: 20 }]);
        assert_eq!(r.pixels(2.0, 2400, 1400), vec![PixelRect { x: 20, y: 41, width: 41, height: 39 }]);
        assert_eq!(
            r.pixels(1.5, 1800, 1050),
            vec![PixelRect { x: 15, y: 30, width: 31, height: 30 }],
            "15.375..45.75 → 15..46"
        );
    }

    #[test]
    fn pixels_stay_inside_the_image() {
        let mut r = Redactions::new(AREA);
        r.add_drawn(p(1150.0, 650.0), p(1200.0, 700.0));
        assert_eq!(r.pixels(1.0, 1180, 690), vec![PixelRect { x: 1150, y: 650, width: 30, height: 40 }]);
        assert_eq!(r.pixels(1.0, 1000, 600), vec![], "nothing of the box is in a smaller image");
    }

    #[test]
    fn a_bad_ratio_is_taken_from_the_image() {
        let mut r = Redactions::new(AREA);
        r.add_drawn(p(10.0, 10.0), p(20.0, 20.0));
        let from_width = vec![PixelRect { x: 20, y: 20, width: 20, height: 20 }];
        assert_eq!(r.pixels(f64::NAN, 2400, 1400), from_width);
        assert_eq!(r.pixels(0.0, 2400, 1400), from_width);
        assert_eq!(r.pixels(-1.0, 2400, 1400), from_width);
    }

    #[cfg(not(target_arch = "wasm32"))]
    mod properties {
        use super::*;
        use proptest::prelude::*;

        #[derive(Clone, Debug)]
        enum Action {
            Add,
            Draw(Point, Point),
            Key(usize, &'static str, bool),
            Place(usize, Point),
        }

        fn arb_action() -> impl Strategy<Value = Action> {
            let point = (-100.0..1400.0f64, -100.0..900.0f64).prop_map(|(x, y)| p(x, y));
            let key = prop::sample::select(vec!["ArrowLeft", "ArrowRight", "ArrowUp", "ArrowDown", "Delete"]);
            prop_oneof![
                Just(Action::Add),
                (point.clone(), point.clone()).prop_map(|(a, b)| Action::Draw(a, b)),
                (0..4usize, key, any::<bool>()).prop_map(|(i, k, s)| Action::Key(i, k, s)),
                (0..4usize, point).prop_map(|(i, at)| Action::Place(i, at)),
            ]
        }

        fn apply(r: &mut Redactions, action: &Action) {
            match action {
                Action::Add => {
                    r.add();
                }
                Action::Draw(a, b) => {
                    r.add_drawn(*a, *b);
                }
                Action::Place(i, at) => {
                    if let Some(b) = r.boxes().get(*i).copied() {
                        r.place(b.id, *at);
                    }
                }
                Action::Key(i, key, shift) => {
                    if let (Some(b), Some(edit)) = (r.boxes().get(*i).copied(), Edit::for_key(key, *shift)) {
                        r.edit(b.id, edit);
                    }
                }
            }
        }

        proptest! {
            #[test]
            fn boxes_stay_inside_the_area_and_no_thinner_than_the_minimum(actions in prop::collection::vec(arb_action(), 0..60)) {
                let mut r = Redactions::new(AREA);
                for action in &actions {
                    apply(&mut r, action);
                    for b in r.boxes() {
                        prop_assert!(b.rect.x >= 0.0 && b.rect.y >= 0.0, "{:?}", b);
                        prop_assert!(b.rect.x + b.rect.width <= AREA.width + 1e-9, "{:?}", b);
                        prop_assert!(b.rect.y + b.rect.height <= AREA.height + 1e-9, "{:?}", b);
                        prop_assert!(b.rect.width >= MIN_SIDE && b.rect.height >= MIN_SIDE, "{:?}", b);
                    }
                }
            }

            #[test]
            fn a_move_and_its_opposite_bring_a_box_back_away_from_the_edges(x in 8.0..1000.0f64, y in 8.0..600.0f64) {
                let mut r = Redactions::new(AREA);
                let id = r.add_drawn(p(x, y), p(x + 60.0, y + 30.0)).unwrap();
                let before = r.find(id).unwrap().1.rect;
                for (there, back) in [("ArrowLeft", "ArrowRight"), ("ArrowUp", "ArrowDown")] {
                    r.edit(id, Edit::for_key(there, false).unwrap());
                    r.edit(id, Edit::for_key(back, false).unwrap());
                }
                prop_assert_eq!(r.find(id).unwrap().1.rect, before);
            }

            #[test]
            fn every_device_pixel_under_a_box_is_blacked_out_and_none_outside_the_image(
                from in (0.0..1200.0f64, 0.0..700.0f64),
                to in (0.0..1200.0f64, 0.0..700.0f64),
                ratio in prop::sample::select(vec![1.0, 1.25, 1.5, 2.0, 3.0]),
                sample in (0.0..1.0f64, 0.0..1.0f64),
            ) {
                let mut r = Redactions::new(AREA);
                let Some(id) = r.add_drawn(p(from.0, from.1), p(to.0, to.1)) else { return Ok(()) };
                let rect = r.find(id).unwrap().1.rect;
                let (width, height) = ((AREA.width * ratio).round() as u32, (AREA.height * ratio).round() as u32);
                let pixels = r.pixels(ratio, width, height);
                prop_assert_eq!(pixels.len(), 1);
                let px = pixels[0];
                prop_assert!(px.x + px.width <= width && px.y + px.height <= height);
                // A point anywhere in the box lands in a pixel that is blacked out.
                let (cx, cy) = (rect.x + sample.0 * rect.width, rect.y + sample.1 * rect.height);
                let (dx, dy) = (((cx * ratio).floor() as u32).min(width - 1), ((cy * ratio).floor() as u32).min(height - 1));
                prop_assert!(dx >= px.x && dx < px.x + px.width, "x {} not in {:?}", dx, px);
                prop_assert!(dy >= px.y && dy < px.y + px.height, "y {} not in {:?}", dy, px);
                // And no more than the pixels the box touches.
                prop_assert!(f64::from(px.width) <= rect.width * ratio + 2.0);
                prop_assert!(f64::from(px.height) <= rect.height * ratio + 2.0);
            }
        }
    }
}

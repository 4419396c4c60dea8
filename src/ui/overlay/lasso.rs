//! The lasso: the freehand stroke drawn over the page, released as a circle when its
//! outline has an area, and the closed outline shown while the circle is described.

use leptos::prelude::*;
use redline_protocol::Point;
use wasm_bindgen::prelude::JsCast;

use crate::content::capture::geometry::{Polygon, SIMPLIFY_TOLERANCE};

/// The freehand stroke, drawn as the pointer moves (mouse, pen and touch alike).
#[component]
pub(super) fn Lasso(
    drawing: Signal<bool>,
    on_drawing: impl Fn(Vec<Point>) + 'static,
    on_abandoned: impl Fn() + 'static,
    on_circled: impl Fn(Vec<Point>) + 'static,
) -> impl IntoView {
    let on_abandoned = std::rc::Rc::new(on_abandoned);
    let on_cancelled = on_abandoned.clone();
    let points = RwSignal::new(Vec::<Point>::new());
    let pressed = RwSignal::new(false);
    let on_drawing = std::rc::Rc::new(on_drawing);
    let on_drawing_moved = on_drawing.clone();
    ui_view! {
        <div
            class="lasso"
            class:active=move || drawing.get()
            on:pointerdown=move |event| {
                if !drawing.get_untracked() || event.button() != 0 {
                    return;
                }
                hold_pointer(&event);
                pressed.set(true);
                points.set(vec![pointer_at(&event)]);
                on_drawing(vec![pointer_at(&event)]);
            }
            on:pointermove=move |event| {
                if pressed.get_untracked() {
                    points.update(|p| p.push(pointer_at(&event)));
                    on_drawing_moved(points.get_untracked());
                }
            }
            on:pointerup=move |_| {
                if !pressed.get_untracked() {
                    return;
                }
                pressed.set(false);
                release(&points.get_untracked(), &on_circled, &*on_abandoned);
                points.set(Vec::new());
            }
            on:pointercancel=move |_| {
                pressed.set(false);
                points.set(Vec::new());
                on_cancelled();
            }
        >
            <svg class="stroke" aria-hidden="true">
                <path d=move || path_data(&points.get(), false) />
            </svg>
        </div>
    }
}

/// A stroke released, on the lasso or on the mount script's pen: circled when its
/// simplified outline has an area, abandoned when not.
pub(super) fn release(stroke: &[Point], on_circled: &impl Fn(Vec<Point>), on_abandoned: &impl Fn()) {
    let polygon = Polygon::from_stroke(stroke, SIMPLIFY_TOLERANCE);
    if polygon.is_area() {
        on_circled(polygon.points().to_vec());
    } else {
        on_abandoned();
    }
}

/// Where the pointer is, in the overlay's CSS px (the page's viewport).
pub(super) fn pointer_at(event: &web_sys::PointerEvent) -> Point {
    Point { x: event.client_x() as f64, y: event.client_y() as f64 }
}

/// Sends the rest of this pointer's moves, and its release, to the element it went down
/// on, even once it leaves it.
pub(super) fn hold_pointer(event: &web_sys::PointerEvent) {
    if let Some(target) = event.current_target() {
        let _ = target.unchecked_into::<web_sys::Element>().set_pointer_capture(event.pointer_id());
    }
}

/// A released outline, closed, while the circle is captured and described.
#[component]
pub(super) fn Outline(points: Vec<Point>) -> impl IntoView {
    ui_view! {
        <svg class="stroke outline" aria-hidden="true">
            <path d=path_data(&points, true) />
        </svg>
    }
}

fn path_data(points: &[Point], closed: bool) -> String {
    let mut d = String::with_capacity(points.len() * 14);
    for (i, p) in points.iter().enumerate() {
        d.push_str(if i == 0 { "M" } else { "L" });
        d.push_str(&format!("{:.1} {:.1}", p.x, p.y));
    }
    if closed && !points.is_empty() {
        d.push('Z');
    }
    d
}

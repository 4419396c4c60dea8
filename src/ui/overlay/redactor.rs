//! The redactor: hides parts of the screenshot before it is filed, with black boxes
//! dragged over it or added and moved with the keys.

use leptos::prelude::*;
use redline_protocol::{Point, Rect};

use super::lasso::{Outline, hold_pointer, pointer_at};
use crate::rules::redact::{Edit, HiddenArea, Redactions};

/// Hides parts of the screenshot: the screenshot at the size of the page it shows, with
/// boxes painted over it by dragging, or added with a button and moved with the arrow
/// keys. Done (or Esc) hands the boxes back to the composer.
#[component]
pub(super) fn Redactor(
    screenshot: String,
    outline: Vec<Point>,
    hidden: Redactions,
    on_done: impl Fn(Redactions) + Copy + 'static,
) -> impl IntoView {
    let area = hidden.area();
    let hidden = RwSignal::new(hidden);
    // The box to focus once it is on screen: a new one, or the first when reopened.
    let focus = RwSignal::new(None::<u32>);
    let add = move || focus.set(Some(hidden.try_update(Redactions::add).unwrap_or_default()));
    match hidden.with_untracked(|h| h.boxes().first().map(|b| b.id)) {
        Some(first) => focus.set(Some(first)),
        None => add(),
    }
    let add_button = NodeRef::<leptos::html::Button>::new();
    let on_edit = move |id: u32, edit: Edit| {
        hidden.update(|h| h.edit(id, edit));
        if edit == Edit::Remove
            && let Some(button) = add_button.get_untracked()
        {
            let _ = button.focus();
        }
    };
    let on_place = move |id: u32, at: Point| hidden.update(|h| h.place(id, at));
    let dragged = RwSignal::new(None::<(Point, Point)>);
    let done = move || on_done(hidden.get_untracked());

    ui_view! {
        <div class="redactor" role="dialog" aria-modal="true" aria-label="Hide parts of the screenshot"
            on:keydown=move |event| {
                if event.key() == "Escape" {
                    // Closes this view only, not the composer under it.
                    event.prevent_default();
                    event.stop_propagation();
                    done();
                }
            }>
            <div class="redact-area" style=format!("width: {:.0}px; height: {:.0}px;", area.width, area.height)
                on:pointerdown=move |event| {
                    if event.button() != 0 {
                        return;
                    }
                    hold_pointer(&event);
                    dragged.set(Some((pointer_at(&event), pointer_at(&event))));
                }
                on:pointermove=move |event| {
                    if let Some((from, _)) = dragged.get_untracked() {
                        dragged.set(Some((from, pointer_at(&event))));
                    }
                }
                on:pointerup=move |_| {
                    let Some((from, to)) = dragged.get_untracked() else { return };
                    dragged.set(None);
                    if let Some(id) = hidden.try_update(|h| h.add_drawn(from, to)).flatten() {
                        focus.set(Some(id));
                    }
                }
                on:pointercancel=move |_| dragged.set(None)>
                <img src=screenshot alt="The screenshot to be filed" draggable="false" />
                <Outline points=outline />
                <For each=move || hidden.get().boxes().to_vec() key=|b| b.id let(area)>
                    <HiddenBox id=area.id hidden=hidden.read_only() focus on_edit on_place />
                </For>
                {move || dragged.get().map(|(from, to)| {
                    let rect = hidden.with(|h| h.drawn(from, to));
                    ui_view! { <div class="hidden-box drawing" style=box_style(rect) aria-hidden="true"></div> }
                })}
            </div>
            <div class="redact-bar">
                <span id="redact-keys" class="hint">
                    "Drag over the screenshot to hide a part, or a box to move it · Arrows move a box · Shift+arrows resize it · Delete removes it"
                </span>
                <button type="button" node_ref=add_button on:click=move |_| add()>"Hide another part"</button>
                <button type="button" class="primary" on:click=move |_| done()>"Done"</button>
            </div>
        </div>
    }
}

/// One hidden area: a black box the filer drags to move, or focuses and then moves,
/// resizes or removes with the keys `Edit::for_key` names.
#[component]
fn HiddenBox(
    id: u32,
    hidden: ReadSignal<Redactions>,
    focus: RwSignal<Option<u32>>,
    on_edit: impl Fn(u32, Edit) + 'static,
    on_place: impl Fn(u32, Point) + 'static,
) -> impl IntoView {
    let found = move || hidden.with(|h| h.find(id));
    // While dragged: where the pointer took hold and where the box's corner was then.
    let held = RwSignal::new(None::<(Point, Point)>);
    let node = NodeRef::<leptos::html::Button>::new();
    Effect::new(move |_| {
        if let Some(button) = node.get()
            && focus.get() == Some(id)
        {
            let _ = button.focus();
            focus.set(None);
        }
    });
    ui_view! {
        <button type="button" class="hidden-box" node_ref=node aria-describedby="redact-keys"
            aria-label=move || found().map(|(number, area): (usize, HiddenArea)| area.label(number))
            style=move || found().map(|(_, area)| box_style(area.rect))
            on:pointerdown=move |event| {
                // Dragging a box moves it; only a drag beside the boxes paints a new one.
                event.stop_propagation();
                let Some((_, area)) = hidden.with_untracked(|h| h.find(id)) else { return };
                if event.button() == 0 {
                    hold_pointer(&event);
                    held.set(Some((pointer_at(&event), Point { x: area.rect.x, y: area.rect.y })));
                }
            }
            on:pointermove=move |event| {
                if let Some((from, corner)) = held.get_untracked() {
                    let to = pointer_at(&event);
                    on_place(id, Point { x: corner.x + to.x - from.x, y: corner.y + to.y - from.y });
                }
            }
            on:pointerup=move |_| held.set(None)
            on:pointercancel=move |_| held.set(None)
            on:keydown=move |event| {
                if let Some(edit) = Edit::for_key(&event.key(), event.shift_key()) {
                    event.prevent_default();
                    on_edit(id, edit);
                }
            }
        ></button>
    }
}

/// Where a box sits over the screenshot (CSS px), as inline style.
fn box_style(rect: Rect) -> String {
    format!(
        "left: {:.1}px; top: {:.1}px; width: {:.1}px; height: {:.1}px;",
        rect.x, rect.y, rect.width, rect.height
    )
}

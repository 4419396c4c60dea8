//! The composer: says what is wrong beside the circle, shows the circled elements as
//! chips and the screenshot as it will be filed, and files it through the worker.

use leptos::prelude::*;
use redline_protocol::{Element, ElementStyles, Point, Rect, Viewport};
use wasm_bindgen::prelude::JsValue;

use super::redactor::Redactor;
use super::{Composition, Target};
use crate::content::capture::geometry::Polygon;
use crate::messages;
use crate::rules::chip::ChipName;
use crate::rules::compose;
use crate::rules::redact::Redactions;
use crate::rules::tray::TrayItem;
use crate::ui::ErrorLine;
use crate::ui::shot::{self, Shot};
use crate::worker_call::{File, Queued};

/// The capture's screenshot with the outline drawn on it.
async fn annotated(composition: &Composition) -> Result<std::rc::Rc<Shot>, String> {
    let captured = &composition.captured;
    let page_shot = composition.page_shot.as_ref().map_err(Clone::clone)?;
    let bounds = captured.bounds_or_viewport();
    let dpr = captured.capture.device_pixel_ratio.unwrap_or(1.0);
    shot::annotate(page_shot, &composition.outline, bounds, dpr)
        .await
        .map(std::rc::Rc::new)
        .map_err(|e| format!("{e:?}"))
}

/// Where the composer sits: beside the circle (`bounds`), inside the `viewport`.
fn composer_position(bounds: Rect, viewport: Viewport) -> String {
    let (width, height) = (340.0, 320.0);
    let right_of_circle = bounds.x + bounds.width + 16.0;
    let left = if right_of_circle + width <= viewport.width {
        right_of_circle
    } else {
        (bounds.x - width - 16.0).max(8.0)
    };
    let top = bounds.y.clamp(8.0, (viewport.height - height - 8.0).max(8.0));
    format!("left: {left:.0}px; top: {top:.0}px; width: {width:.0}px;")
}

/// The overlay's viewport, which is the page's: its frame is the size of the page's
/// window (`100vw` × `100vh`, as the page's `innerWidth` and `innerHeight` count).
fn overlay_viewport() -> Viewport {
    let size = |value: Result<JsValue, JsValue>| value.ok().and_then(|v| v.as_f64()).unwrap_or(0.0);
    Viewport { width: size(window().inner_width()), height: size(window().inner_height()) }
}

/// Says what is wrong: first line the title, the rest the body; `Enter` files,
/// `Shift+Enter` is a new line. The elements caught show as chips the filer can remove;
/// parts of the screenshot can be hidden before it is filed.
#[component]
pub(super) fn Composer(
    /// The released outline, in the overlay's (the page's) viewport.
    outline: Vec<Point>,
    /// What the page captured for it, once handed over.
    capture: Signal<Option<Composition>, LocalStorage>,
    /// The capture's computed styles, once they have followed it.
    styles: ReadSignal<Option<Vec<Option<ElementStyles>>>, LocalStorage>,
    target: LocalResource<Result<Target, String>>,
    draft_text: RwSignal<String>,
    on_filed: impl Fn(TrayItem) + Copy + 'static,
) -> impl IntoView {
    let viewport = overlay_viewport();
    let bounds = messages::bounds_or_viewport(Polygon::new(outline.clone()).bounds(), viewport);
    let position = composer_position(bounds, viewport);
    // Indexes into the capture's elements of the chips the filer removed.
    let removed = RwSignal::new(Vec::<usize>::new());
    let (hidden, set_hidden) = signal(Redactions::new(viewport));
    let (redacting, set_redacting) = signal(false);
    // The annotated screenshot joins the composer once the capture has, begun once the
    // composer has been painted so that drawing it does not hold that frame back; an
    // item filed before that waits for it. `None` until there is a capture.
    let screenshot = LocalResource::new(move || {
        let composition = capture.get();
        async move {
            let composition = composition?;
            after_next_paint().await;
            Some(annotated(&composition).await)
        }
    });
    // The screenshot as it will be filed, encoded while the filer types (again after each
    // change to the hidden parts), so that Enter does not wait for the encoder.
    let encoded = LocalResource::new(move || {
        let (hidden, shot) = (hidden.get(), screenshot.get().flatten());
        async move { Some(shot?.ok()?.encoded(hidden).await) }
    });
    let file = Action::new_local(move |_: &()| {
        let text = draft_text.get_untracked();
        let removed = removed.get_untracked();
        let hidden = hidden.get_untracked();
        async move {
            let target = target.await?;
            let composition = when_here(|| capture.get_untracked(), CAPTURE_WAIT_MS).await.ok_or(
                "The page did not hand over what was circled, nothing was filed; your text is kept.",
            )?;
            let styles = when_here(|| styles.get_untracked(), STYLES_WAIT_MS).await.unwrap_or_default();
            let elements = composition.captured.filed_elements(&removed, &styles);
            let change_id = window().crypto().map_err(|e| format!("{e:?}"))?.random_uuid();
            let annotated = when_here(|| screenshot.get_untracked().flatten(), CAPTURE_WAIT_MS).await;
            let image =
                match annotated {
                    Some(Ok(shot)) => Some(shot.to_file(&hidden, encoded.await).await.map_err(|e| {
                        format!("The screenshot could not be prepared, nothing was filed: {e}")
                    })?),
                    Some(Err(_)) | None => None,
                };
            let draft =
                compose::draft(&target.stage, &composition.captured, elements, &text, change_id, image)
                    .map_err(|e| e.to_string())?;
            let title = draft.input.title.clone();
            match crate::ui::call(&File { draft: draft.into() }).await {
                Ok(Queued { change_id }) => {
                    on_filed(TrayItem::queued(change_id, title));
                    Ok(())
                }
                Err(error) => Err(format!("Not filed yet, your text is kept: {error}")),
            }
        }
    });
    let failure = move || file.value().get().and_then(Result::err);
    let textarea = NodeRef::<leptos::html::Textarea>::new();
    Effect::new(move |_| {
        if let Some(textarea) = textarea.get() {
            let _ = textarea.focus();
        }
    });
    let hide_button = NodeRef::<leptos::html::Button>::new();
    let on_hidden = move |areas: Redactions| {
        set_hidden.set(areas);
        set_redacting.set(false);
        // Once the composer is no longer inert, back where the filer left it.
        request_animation_frame(move || {
            if let Some(button) = hide_button.get_untracked() {
                let _ = button.focus();
            }
        });
    };

    ui_view! {
        // A dialog holding a form: a form may not take the dialog role itself.
        <div class="composer" style=position role="dialog" aria-label="Say what is wrong" inert=move || redacting.get()>
            <form on:submit=move |event| { event.prevent_default(); file.dispatch(()); }>
                <textarea
                    node_ref=textarea
                    aria-label="What is wrong? The first line is the title."
                    placeholder="What is wrong? First line is the title…"
                    prop:value=move || draft_text.get()
                    on:input=move |event| draft_text.set(event_target_value(&event))
                    on:keydown=move |event| {
                        if event.key() == "Enter" && !event.shift_key() && !event.is_composing() {
                            event.prevent_default();
                            file.dispatch(());
                        }
                    }
                ></textarea>
                {move || match capture.get() {
                    None => ui_view! { <p class="hint" role="status">"Capturing what you circled…"</p> }.into_any(),
                    Some(composition) => ui_view! { <CircledElements composition removed /> }.into_any(),
                }}
                {move || match screenshot.get().flatten() {
                    None => ui_view! { <p class="hint">"Adding the screenshot…"</p> }.into_any(),
                    Some(Ok(shot)) => ui_view! {
                        <ShotPreview shot hidden />
                        <div class="composer-actions">
                            <button type="button" node_ref=hide_button on:click=move |_| set_redacting.set(true)>
                                "Hide part of the screenshot"
                            </button>
                            <span class="hint">{move || hidden.with(Redactions::summary)}</span>
                        </div>
                    }.into_any(),
                    Some(Err(why)) => ui_view! { <p class="hint">"No screenshot: " {why}</p> }.into_any(),
                }}
                <div class="composer-actions">
                    <span class="hint">"Enter files · Shift+Enter new line · Esc back"</span>
                    <button type="submit" class="primary" disabled=move || file.pending().get()>
                        {move || if file.pending().get() { "Filing…" } else { "File" }}
                    </button>
                </div>
                {move || failure().map(|message| ui_view! { <ErrorLine message /> })}
            </form>
        </div>
        {move || {
            let backdrop = capture.with(|c| c.as_ref().and_then(|c| c.page_shot.clone().ok()));
            let screenshot = backdrop.filter(|_| redacting.get())?.data_url();
            Some(ui_view! { <Redactor screenshot outline=outline.clone() hidden=hidden.get_untracked() on_done=on_hidden /> })
        }}
    }
}

/// The circled elements as chips the filer can remove, and the frames Redline could not
/// look inside.
#[component]
fn CircledElements(composition: Composition, removed: RwSignal<Vec<usize>>) -> impl IntoView {
    let elements = composition.captured.capture.elements;
    let count = elements.len();
    let elements = StoredValue::new(elements);
    let kept = move || (0..count).filter(|i| !removed.with(|r| r.contains(i))).collect::<Vec<_>>();
    ui_view! {
        <ul class="chips" aria-label="Circled elements">
            <For each=kept key=|index| *index let(index)>
                <Chip
                    element=elements.with_value(|elements| elements[index].clone())
                    on_remove=move || removed.update(|r| r.push(index))
                />
            </For>
        </ul>
        {composition.captured.unreadable_frames.into_iter().map(|origin| ui_view! { <UnreadableFrame origin /> }).collect_view()}
    }
}

/// How long filing waits for the capture (and its screenshot) to reach the composer:
/// entering a frame of another origin or taking the screenshot again takes a moment,
/// but a page that stopped answering must not hold the filer's text hostage.
const CAPTURE_WAIT_MS: f64 = 10_000.0;

/// How long filing waits for a capture's computed styles to follow it: they come
/// milliseconds after it, and without them an item is still worth filing.
const STYLES_WAIT_MS: f64 = 1_000.0;
/// How often a wait of [`when_here`] looks again.
const LOOK_AGAIN_MS: f64 = 10.0;

/// What `read` finds, as soon as it finds something, or `None` after `wait_ms`: for a
/// filer who files before what the page sends has arrived.
async fn when_here<T>(read: impl Fn() -> Option<T>, wait_ms: f64) -> Option<T> {
    let mut waited = 0.0;
    loop {
        if let Some(value) = read() {
            return Some(value);
        }
        if waited >= wait_ms {
            return None;
        }
        crate::browser::timer::sleep(LOOK_AGAIN_MS).await;
        waited += LOOK_AGAIN_MS;
    }
}

/// Resolves once the next frame has been painted: in a task after that frame's
/// animation callbacks, which run before its paint.
async fn after_next_paint() {
    let frame = js_sys::Promise::new(&mut |resolve, _| {
        let _ = window().request_animation_frame(&resolve);
    });
    let _ = wasm_bindgen_futures::JsFuture::from(frame).await;
    crate::browser::timer::sleep(0.0).await;
}

/// Why a circled frame is filed as the frame element alone: Redline may not look inside
/// a frame of a site the person has not granted it.
#[component]
fn UnreadableFrame(origin: String) -> impl IntoView {
    ui_view! {
        <p class="hint frame-note" role="note">
            "Redline could not look inside the frame from " <strong>{origin}</strong>
            ": it has no access to that site, so the frame itself is filed. Grant Redline that site to capture what is inside."
        </p>
    }
}

/// The crop around the circle as it will be filed, the hidden areas blacked out.
#[component]
fn ShotPreview(shot: std::rc::Rc<Shot>, hidden: ReadSignal<Redactions>) -> impl IntoView {
    let preview = LocalResource::new(move || {
        let (shot, hidden) = (shot.clone(), hidden.get());
        async move { shot.preview(&hidden).await.map(std::rc::Rc::new).map_err(|e| format!("{e:?}")) }
    });
    let alt = "The circled part of the page, as it will be filed";
    move || {
        preview.get().map(|shown| match shown {
            Ok(url) => ui_view! { <img class="shot" src=url.as_str().to_owned() alt=alt /> }.into_any(),
            Err(why) => ui_view! { <p class="hint">"No screenshot: " {why}</p> }.into_any(),
        })
    }
}

/// One circled element, named as `chip::ChipName` says, its anchor and path on hover.
#[component]
fn Chip(element: Element, on_remove: impl Fn() + 'static) -> impl IntoView {
    let ChipName { label, tooltip } = ChipName::of(&element);
    ui_view! {
        <li class="chip" title=(!tooltip.is_empty()).then_some(tooltip)>
            <span>{label.clone()}</span>
            <button type="button" aria-label=format!("Remove {label}") on:click=move |_| on_remove()>"×"</button>
        </li>
    }
}

//! The overlay over the page: draw a lasso, say what is wrong, file, and watch the held
//! batch. It lives in an extension-page iframe, so it runs wasm even on pages whose CSP
//! forbids it; the content script in the page does the DOM reading and the screenshot.

mod tray;

use leptos::ev;
use leptos::prelude::*;
use redline_protocol::rpc::{ResolveStage, ResolveStageInput};
use redline_protocol::{Element, ElementStyles, Point, Rect, ResolvedStage, Viewport};
use serde::Serialize;
use wasm_bindgen::prelude::{Closure, JsCast, JsValue};
use web_sys::{MessageEvent, MessagePort};

use super::ErrorLine;
use super::shot::{self, PageShot, PageShots, Shot};
use crate::api::{ApiError, Client};
use crate::capture::geometry::{Polygon, SIMPLIFY_TOLERANCE};
use crate::chip::ChipName;
use crate::chrome;
use crate::compose;
use crate::messages::{self, Captured, OverlayEvent, PageEvent};
use crate::redact::{Edit, HiddenArea, Redactions};
use crate::sign_in_store;
use crate::tray::TrayItem;
use crate::worker_call::{File, OverlayStarting, Queued, WatchConsole};
use tray::Tray;

/// The page this overlay covers, as the content script named it (`?page=`).
#[derive(Debug, Clone)]
struct Page {
    /// Without query string, fragment or user name and password
    /// (`redline_protocol::kept_url`).
    url: String,
    origin: String,
    /// The match pattern for the page's host (every port), e.g. `https://shop.example/*`.
    host_pattern: String,
    /// The secret the content script handed the capture's channel over with (`?channel=`).
    channel: String,
}

impl Page {
    fn from_location() -> Option<Page> {
        let search = window().location().search().ok()?;
        let params = web_sys::UrlSearchParams::new_with_str(&search).ok()?;
        let url = redline_protocol::kept_url(&params.get("page")?).into_owned();
        let channel = params.get("channel").filter(|c| !c.is_empty())?;
        let parsed = web_sys::Url::new(&url).ok()?;
        let host_pattern = format!("{}//{}/*", parsed.protocol(), parsed.hostname());
        Some(Page { url, origin: parsed.origin(), host_pattern, channel })
    }
}

/// Hands the composer, open since the release, the capture and the screenshot it names
/// from those posted ahead of it; the screenshot is annotated in the composer. A capture
/// that comes after the filer went back to drawing is dropped.
fn show_capture(
    captured: Captured,
    shots: StoredValue<PageShots, LocalStorage>,
    step: RwSignal<Step, LocalStorage>,
) {
    let Step::Capturing { outline } = step.get_untracked() else { return };
    let page_shot = shots.with_value(|shots| shots.named(&captured.screenshot));
    step.set(Step::Composing(Box::new(Composition { outline, captured, page_shot })));
}

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

/// Tells the content script in the embedding page what happened. The page can read
/// these messages too, so they carry nothing it does not already know.
fn tell_page(event: &OverlayEvent, page: &Page) {
    let Some(parent) = window().parent().ok().flatten() else { return };
    if let Ok(message) = event.serialize(&serde_wasm_bindgen::Serializer::json_compatible()) {
        let _ = parent.post_message(&message, &page.origin);
    }
}

/// Where filing goes: the server and the stage this page belongs to.
#[derive(Debug, Clone)]
struct Target {
    client: Client,
    stage: ResolvedStage,
}

async fn find_target(page_url: String) -> Result<Target, String> {
    let settings = sign_in_store::load().await.map_err(|e| e.to_string())?;
    if !settings.is_complete() {
        return Err("Set up Redline first: open its side panel → Settings.".to_owned());
    }
    let client = Client::new(&settings);
    match client.call::<ResolveStage>(ResolveStageInput { url: page_url.clone() }).await {
        Ok(stage) => Ok(Target { client, stage }),
        Err(ApiError::Gone { .. }) => Err(format!(
            "This page is not a stage Redline knows ({page_url}). Circles are kept here; add the stage with `redline stage add` to file them."
        )),
        Err(error) => Err(error.to_string()),
    }
}

/// One circle on its way from the lasso to the composer.
#[derive(Clone)]
enum Step {
    Drawing,
    Capturing { outline: Vec<Point> },
    Composing(Box<Composition>),
}

impl Step {
    /// The released outline the composer is open on: from release on, while the circle
    /// is captured and once it has been.
    fn outline(&self) -> Option<Vec<Point>> {
        match self {
            Step::Drawing => None,
            Step::Capturing { outline } => Some(outline.clone()),
            Step::Composing(composition) => Some(composition.outline.clone()),
        }
    }

    /// What was captured, once the page has handed it over.
    fn composition(&self) -> Option<Composition> {
        match self {
            Step::Composing(composition) => Some((**composition).clone()),
            _ => None,
        }
    }
}

/// What the composer shows and files.
#[derive(Clone)]
struct Composition {
    outline: Vec<Point>,
    captured: Captured,
    /// The page's pixels when it was circled, or why there are none.
    page_shot: Result<PageShot, String>,
}

/// The overlay runs only where Redline's content script mounted it: the worker confirms
/// that the secret in its address is the one the content script of its own tab gave it.
/// Anywhere else (a page framing `overlay.html` itself) it does nothing.
#[component]
pub fn Overlay() -> impl IntoView {
    let Some(page) = Page::from_location() else {
        return view! { <p class="overlay-hint">"Redline: this overlay was opened without its page."</p> }
            .into_any();
    };
    let mounted_here = LocalResource::new({
        let channel = page.channel.clone();
        move || {
            let request = OverlayStarting { channel: channel.clone() };
            async move { crate::ui::call(&request).await }
        }
    });
    view! {
        {move || match mounted_here.get() {
            None => ().into_any(),
            Some(Ok(true)) => view! { <Circling page=page.clone() /> }.into_any(),
            Some(Ok(false)) => view! {
                <p class="overlay-hint">"Redline did not open this overlay here, so it does nothing."</p>
            }.into_any(),
            Some(Err(error)) => view! { <ErrorLine message=error.to_string() /> }.into_any(),
        }}
    }
    .into_any()
}

/// The overlay proper: lasso, composer and tray over the page it was mounted in.
#[component]
fn Circling(page: Page) -> impl IntoView {
    let target = LocalResource::new({
        let url = page.url.clone();
        move || find_target(url.clone())
    });
    let step = RwSignal::new_local(Step::Drawing);
    let draft_text = RwSignal::new(String::new());
    let tray = RwSignal::new(Vec::<TrayItem>::new());

    let on_key = window_event_listener(ev::keydown, {
        let page = page.clone();
        move |event| {
            if event.key() != "Escape" {
                return;
            }
            event.prevent_default();
            // Esc closes the composer first (its text is kept), then the overlay.
            if matches!(step.get_untracked(), Step::Drawing) {
                tell_page(&OverlayEvent::Close, &page);
            } else {
                step.set(Step::Drawing);
            }
        }
    });
    let on_circled = {
        let page = page.clone();
        move |outline: Vec<Point>| {
            tell_page(&OverlayEvent::Circled { stroke: outline.clone() }, &page);
            step.set(Step::Capturing { outline });
        }
    };
    let on_abandoned = {
        let page = page.clone();
        move || tell_page(&OverlayEvent::StrokeAbandoned, &page)
    };
    // The capture's channel from the content script, and its listener kept alive with it.
    let channel = StoredValue::new_local(None::<(MessagePort, Closure<dyn FnMut(MessageEvent)>)>);
    let shots = StoredValue::new_local(PageShots::default());
    // The computed styles of the capture being composed, which follow it.
    let (styles, set_styles) = signal_local(None::<Vec<Option<ElementStyles>>>);
    let on_message = window_event_listener(ev::message, {
        let page = page.clone();
        let (on_circled, on_abandoned) = (on_circled.clone(), on_abandoned.clone());
        move |event| {
            let from_parent = window().parent().ok().flatten().is_some_and(|parent| {
                event.source().is_some_and(|source| JsValue::from(source) == JsValue::from(parent))
            });
            if event.origin() != page.origin || !from_parent {
                return;
            }
            // Any script of the page can post this window messages too: only the channel
            // handed over with the secret from our address carries the capture.
            let Ok(PageEvent::Port { token }) = serde_wasm_bindgen::from_value(event.data()) else { return };
            let Some(port) =
                event.ports().get(0).dyn_into::<MessagePort>().ok().filter(|_| token == page.channel)
            else {
                return;
            };
            let (on_circled, on_abandoned) = (on_circled.clone(), on_abandoned.clone());
            let on_captured = Closure::<dyn FnMut(MessageEvent)>::new(move |event: MessageEvent| {
                if let Some(shot) = PageShot::posted(&event.data()) {
                    shots.update_value(|shots| shots.keep(shot));
                    return;
                }
                match serde_wasm_bindgen::from_value(event.data()) {
                    Ok(PageEvent::Captured(captured)) => {
                        set_styles.set(None);
                        show_capture(*captured, shots, step);
                    }
                    Ok(PageEvent::Styles { elements }) => set_styles.set(Some(elements)),
                    Ok(PageEvent::Drawn { stroke }) if matches!(step.get_untracked(), Step::Drawing) => {
                        release(&stroke, &on_circled, &on_abandoned);
                    }
                    _ => {}
                }
            });
            port.set_onmessage(Some(on_captured.as_ref().unchecked_ref()));
            if let Some(Some((old, _))) = channel.try_update_value(|c| c.replace((port, on_captured))) {
                old.close();
            }
        }
    });
    on_cleanup(move || {
        on_key.remove();
        on_message.remove();
        if let Some(Some((port, _))) = channel.try_update_value(Option::take) {
            port.close();
        }
    });
    // Announced on the next frame, once the view below is in the DOM.
    request_animation_frame({
        let page = page.clone();
        move || tell_page(&OverlayEvent::Ready, &page)
    });

    // The page reads ahead while the person draws (see capture/stroke.rs).
    let on_drawing = {
        let page = page.clone();
        move |stroke: Vec<Point>| tell_page(&OverlayEvent::Drawing { stroke }, &page)
    };
    let on_filed = move |item: TrayItem| {
        draft_text.set(String::new());
        tray.update(|items| items.push(item));
        step.set(Step::Drawing);
    };

    // The composer opens at release, and stays as the capture joins it: the filer can
    // type at once, and what they type is never moved to another text box.
    let open_on = Memo::new(move |_| step.with(Step::outline));
    let capture = Signal::derive_local(move || step.with(Step::composition));
    view! {
        <Lasso drawing=Signal::derive(move || matches!(step.get(), Step::Drawing)) on_drawing on_abandoned on_circled />
        {move || match open_on.get() {
            None => view! {
                <p class="overlay-hint">"Circle what is wrong · " <kbd>"Esc"</kbd> " to leave"</p>
            }.into_any(),
            Some(outline) => view! {
                <Outline points=outline.clone() />
                <Composer outline capture styles target draft_text on_filed />
            }.into_any(),
        }}
        <StageNotice target />
        <ConsoleWatch pattern=page.host_pattern.clone() />
        <Tray items=tray target />
    }
    .into_any()
}

/// The freehand stroke, drawn as the pointer moves (mouse, pen and touch alike).
#[component]
fn Lasso(
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
    view! {
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
fn release(stroke: &[Point], on_circled: &impl Fn(Vec<Point>), on_abandoned: &impl Fn()) {
    let polygon = Polygon::from_stroke(stroke, SIMPLIFY_TOLERANCE);
    if polygon.is_area() {
        on_circled(polygon.points().to_vec());
    } else {
        on_abandoned();
    }
}

/// Where the pointer is, in the overlay's CSS px (the page's viewport).
fn pointer_at(event: &web_sys::PointerEvent) -> Point {
    Point { x: event.client_x() as f64, y: event.client_y() as f64 }
}

/// Sends the rest of this pointer's moves, and its release, to the element it went down
/// on, even once it leaves it.
fn hold_pointer(event: &web_sys::PointerEvent) {
    if let Some(target) = event.current_target() {
        let _ = target.unchecked_into::<web_sys::Element>().set_pointer_capture(event.pointer_id());
    }
}

/// A released outline, closed, while the circle is captured and described.
#[component]
fn Outline(points: Vec<Point>) -> impl IntoView {
    view! {
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

/// Says plainly when filing cannot work here, and why.
#[component]
fn StageNotice(target: LocalResource<Result<Target, String>>) -> impl IntoView {
    move || {
        target.get().and_then(Result::err).map(|message| {
            view! { <p class="notice" role="status">{message}</p> }
        })
    }
}

/// Turns on console-error capture for this stage: asks for the stage's origin (the
/// click is the gesture Chrome wants) and has the worker run the buffer from the next
/// page load on.
#[component]
fn ConsoleWatch(pattern: String) -> impl IntoView {
    let watch = Action::new_local(move |_: &()| {
        let granted = chrome::request_host_permission(std::slice::from_ref(&pattern));
        let pattern = pattern.clone();
        async move {
            if !granted.await.map_err(|e| e.0)? {
                return Err("Console errors need access to this site.".to_owned());
            }
            crate::ui::call(&WatchConsole { pattern }).await.map_err(|e| e.to_string())
        }
    });
    view! {
        <div class="console-watch">
            {move || match watch.value().get() {
                Some(Ok(())) => view! { <span>"Console errors are kept from the next page load."</span> }.into_any(),
                Some(Err(message)) => view! { <ErrorLine message /> }.into_any(),
                None => view! {
                    <button type="button" on:click=move |_| { watch.dispatch(()); }>"Keep this stage's console errors"</button>
                }.into_any(),
            }}
        </div>
    }
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
fn Composer(
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

    view! {
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
                    None => view! { <p class="hint" role="status">"Capturing what you circled…"</p> }.into_any(),
                    Some(composition) => view! { <CircledElements composition removed /> }.into_any(),
                }}
                {move || match screenshot.get().flatten() {
                    None => view! { <p class="hint">"Adding the screenshot…"</p> }.into_any(),
                    Some(Ok(shot)) => view! {
                        <ShotPreview shot hidden />
                        <div class="composer-actions">
                            <button type="button" node_ref=hide_button on:click=move |_| set_redacting.set(true)>
                                "Hide part of the screenshot"
                            </button>
                            <span class="hint">{move || hidden.with(Redactions::summary)}</span>
                        </div>
                    }.into_any(),
                    Some(Err(why)) => view! { <p class="hint">"No screenshot: " {why}</p> }.into_any(),
                }}
                <div class="composer-actions">
                    <span class="hint">"Enter files · Shift+Enter new line · Esc back"</span>
                    <button type="submit" class="primary" disabled=move || file.pending().get()>
                        {move || if file.pending().get() { "Filing…" } else { "File" }}
                    </button>
                </div>
                {move || failure().map(|message| view! { <ErrorLine message /> })}
            </form>
        </div>
        {move || {
            let backdrop = capture.with(|c| c.as_ref().and_then(|c| c.page_shot.clone().ok()));
            let screenshot = backdrop.filter(|_| redacting.get())?.data_url();
            Some(view! { <Redactor screenshot outline=outline.clone() hidden=hidden.get_untracked() on_done=on_hidden /> })
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
    view! {
        <ul class="chips" aria-label="Circled elements">
            <For each=kept key=|index| *index let(index)>
                <Chip
                    element=elements.with_value(|elements| elements[index].clone())
                    on_remove=move || removed.update(|r| r.push(index))
                />
            </For>
        </ul>
        {composition.captured.unreadable_frames.into_iter().map(|origin| view! { <UnreadableFrame origin /> }).collect_view()}
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
        crate::timer::sleep(LOOK_AGAIN_MS).await;
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
    crate::timer::sleep(0.0).await;
}

/// Why a circled frame is filed as the frame element alone: Redline may not look inside
/// a frame of a site the person has not granted it.
#[component]
fn UnreadableFrame(origin: String) -> impl IntoView {
    view! {
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
            Ok(url) => view! { <img class="shot" src=url.as_str().to_owned() alt=alt /> }.into_any(),
            Err(why) => view! { <p class="hint">"No screenshot: " {why}</p> }.into_any(),
        })
    }
}

/// Hides parts of the screenshot: the screenshot at the size of the page it shows, with
/// boxes painted over it by dragging, or added with a button and moved with the arrow
/// keys. Done (or Esc) hands the boxes back to the composer.
#[component]
fn Redactor(
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

    view! {
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
                    view! { <div class="hidden-box drawing" style=box_style(rect) aria-hidden="true"></div> }
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
    view! {
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

/// One circled element, named as `chip::ChipName` says, its anchor and path on hover.
#[component]
fn Chip(element: Element, on_remove: impl Fn() + 'static) -> impl IntoView {
    let ChipName { label, tooltip } = ChipName::of(&element);
    view! {
        <li class="chip" title=(!tooltip.is_empty()).then_some(tooltip)>
            <span>{label.clone()}</span>
            <button type="button" aria-label=format!("Remove {label}") on:click=move |_| on_remove()>"×"</button>
        </li>
    }
}

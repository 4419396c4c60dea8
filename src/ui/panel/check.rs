//! "Check on stage" in an item: a done item the stage now serves is opened in the stage
//! tab at its route, its elements are found again on the new build and outlined, and an
//! after-shot of them is shown beside the filed screenshot's crop (before). The person
//! then says **Fixed** or **Still wrong** (words required), which `verifyChange` records
//! with the after-shot (`uploadShot`). The person may circle the place again on the
//! after-shot: the circle is drawn into the after-shot that goes with the verdict. What
//! is pure is `crate::rules::verify`.

use leptos::prelude::*;
use redline_protocol::rpc::{UploadShot, UploadShotInput, VerifyChange, VerifyChangeInput};
use redline_protocol::{Change, Element, Point, Rect, Verdict, short_sha};

use super::reading::reload;
use super::{Ctx, ErrorLine};
use crate::rules::outbox::Image;
use crate::rules::verify::{self, CssCrop, PageCheck};
use crate::worker_call::{CheckOnStage, Checked};

/// What one check saw.
#[derive(Clone)]
struct Seen {
    /// What the page found, or why the page could not be asked.
    check: Result<PageCheck, String>,
    /// The after-shot (to upload) and a URL showing it, or why there is none.
    after: Result<(Image, String), String>,
}

/// What the item's check saw and the after-shot's key once uploaded: held by the item
/// view, so a re-read of the item (every event re-renders it) keeps them.
#[derive(Clone, Copy)]
pub struct CheckState {
    seen: RwSignal<Option<Seen>>,
    uploaded: StoredValue<Option<String>>,
    /// The person's new circle on the after-shot, in fractions of its width and height.
    circle: RwSignal<Vec<Point>>,
}

impl CheckState {
    pub fn new() -> CheckState {
        CheckState {
            seen: RwSignal::new(None),
            uploaded: StoredValue::new(None),
            circle: RwSignal::new(Vec::new()),
        }
    }
}

#[component]
pub fn CheckOnStage(change: Change, stage_url: Option<String>, state: CheckState) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let Some(url) = verify::check_url(stage_url.as_deref(), change.route.as_deref()) else {
        return ui_view! {
            <p class="hint" data-testid="check">"This item\u{2019}s stage has no URL, so Redline cannot open it to check the fix."</p>
        }
        .into_any();
    };
    let stage_url = stage_url.unwrap_or_default();
    let elements: Vec<Element> = change.capture.as_ref().map(|c| c.elements.clone()).unwrap_or_default();
    let shown_url = url.clone();
    let CheckState { seen, uploaded, circle } = state;
    let run = Action::new_local(move |_: &()| {
        let request = CheckOnStage {
            tab_id: ctx.tab.get_untracked().map(|t| t.0),
            stage_url: stage_url.clone(),
            url: url.clone(),
            elements: elements.clone(),
            again: seen.with_untracked(Option::is_some),
        };
        async move {
            let seen_now = check(request).await?;
            uploaded.set_value(None);
            circle.set(Vec::new());
            if let Some(Seen { after: Ok((_, old)), .. }) = seen.get_untracked() {
                crate::ui::shot::release(&old);
            }
            seen.set(Some(seen_now));
            Ok::<(), String>(())
        }
    });
    let start = move |_| {
        // Asked inside the click, before anything is awaited: access to the stage's
        // origin lets Redline read the tab and take the after-shot. Refused or not, the
        // check goes on (a toolbar click on the tab may still allow it).
        let permission =
            verify::origin_pattern(&shown_url).map(|p| crate::browser::chrome::request_host_permission(&[p]));
        leptos::task::spawn_local(async move {
            if let Some(permission) = permission {
                let _ = permission.await;
            }
            run.dispatch(());
        });
    };
    let before = before_view(&change);
    let build = change.head_commit.clone();
    let change_id = change.change_id.clone();
    let project_id = change.project_id.clone();
    let run_failed = Signal::derive(move || run.value().get().and_then(Result::err));
    let running = Signal::derive(move || run.pending().get());
    ui_view! {
        <section class="check" aria-labelledby="check-heading" data-testid="check">
            <h3 id="check-heading">"Check the fix on the stage"</h3>
            <p class="hint">"The stage now serves "{build.as_deref().map(short_sha).map(|s| format!("commit {s}")).unwrap_or_else(|| "the fix".to_owned())}
                ". Redline opens the page in the stage tab, finds the circled elements, outlines them and takes an after-shot."</p>
            <div class="actions">
                <button type="button" class="primary" on:click=start disabled=move || running.get()>
                    {move || if running.get() { "Checking\u{2026}" } else if seen.with(Option::is_some) { "Check again" } else { "Check on stage" }}
                </button>
            </div>
            {move || run_failed.get().map(|m| ui_view! { <ErrorLine message=m /> })}
            {move || seen.get().map(|s| ui_view! { <CheckResult seen=s before=before.clone() state /> })}
            <Show when=move || seen.with(Option::is_some)>
                <VerdictForm change_id=change_id.clone() project_id=project_id.clone() state />
            </Show>
        </section>
    }
    .into_any()
}

/// Asks the worker to check, then crops the after-shot.
async fn check(request: CheckOnStage) -> Result<Seen, String> {
    let Checked { check, screenshot, .. } = crate::ui::call(&request).await.map_err(|e| e.to_string())?;
    let after = match (&check, screenshot) {
        (_, Err(error)) => Err(error),
        (Ok(page), Ok(data_url)) => crate::ui::shot::crop(&data_url, page.region(), page.device_pixel_ratio)
            .await
            .map_err(|e| crate::browser::chrome::js_error_message(&e)),
        // The page could not be asked: the whole visible tab.
        (Err(_), Ok(data_url)) => crate::ui::shot::crop(
            &data_url,
            redline_protocol::Rect { x: 0.0, y: 0.0, width: 1e6, height: 1e6 },
            1.0,
        )
        .await
        .map_err(|e| crate::browser::chrome::js_error_message(&e)),
    };
    Ok(Seen { check, after })
}

/// The filed screenshot, cropped around the circled elements (CSS, so no pixels are
/// read), or `None` without a screenshot.
fn before_view(change: &Change) -> Option<(String, Option<CssCrop>)> {
    let url = change.screenshot_url.clone()?;
    let crop = verify::before_part(change.capture.as_ref(), change.viewport)
        .and_then(|(part, viewport)| CssCrop::of(part, viewport));
    Some((url, crop))
}

#[component]
fn CheckResult(seen: Seen, before: Option<(String, Option<CssCrop>)>, state: CheckState) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let Seen { check, after } = seen;
    let build = check.as_ref().ok().and_then(|c| c.git_sha.clone());
    let on =
        build.as_deref().map(|s| format!("on {}", short_sha(s))).unwrap_or_else(|| "on the stage".to_owned());
    let located = match &check {
        Ok(page) => ui_view! {
            <ul class="located" data-testid="check-located" aria-live="polite">
                {page.sentences().into_iter().map(|(found, line)| ui_view! {
                    <li class=if found { "found" } else { "missing" }>{line}</li>
                }).collect_view()}
            </ul>
        }
        .into_any(),
        Err(error) => {
            ui_view! { <ErrorLine message=format!("Redline could not look into the stage tab ({error}).") /> }
                .into_any()
        }
    };
    let needs_click = after.as_ref().err().map(|error| {
        ui_view! {
            <ErrorLine testid="needs-toolbar-click"
                message=format!("No after-shot: the browser lets Redline screenshot the stage tab only after a click on Redline\u{2019}s toolbar button there ({error}). Click the toolbar button on the stage tab, press Esc to close the overlay it opens, then press Check again.") />
        }
    });
    let before_figure = match before {
        Some((url, crop)) => {
            let (u, label) = (url.clone(), "Before: the screenshot as filed".to_owned());
            let image = match crop {
                Some(crop) => ui_view! {
                    <span class="crop" style=crop.box_style()>
                        <img src=url alt="" style=crop.image_style() />
                    </span>
                }
                .into_any(),
                None => ui_view! { <img src=url alt="" /> }.into_any(),
            };
            ui_view! {
                <button type="button" class="image-button" aria-label="Before, as filed (enlarge)" data-testid="before"
                    on:click=move |_| ctx.enlarged.set(Some((u.clone(), label.clone())))>{image}</button>
            }
            .into_any()
        }
        None => ui_view! { <p class="hint" data-testid="before">"No screenshot was filed."</p> }.into_any(),
    };
    let after_figure = match after {
        Ok((_, url)) => ui_view! { <AfterShot url label=format!("After, {on}") state /> }.into_any(),
        Err(_) => ui_view! { <p class="hint">"No after-shot yet."</p> }.into_any(),
    };
    ui_view! {
        {located}
        {needs_click}
        <div class="before-after">
            <figure>{before_figure}<figcaption>"Before"</figcaption></figure>
            <figure>{after_figure}<figcaption>{format!("After, {on}")}</figcaption></figure>
        </div>
    }
}

/// The after-shot: a click enlarges it; after "Circle again", dragging on it draws the
/// person's new circle, which goes with the verdict.
#[component]
fn AfterShot(url: String, label: String, state: CheckState) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let CheckState { circle, uploaded, .. } = state;
    let drawing = RwSignal::new(false);
    let pressed = RwSignal::new(false);
    let at = |e: &leptos::ev::PointerEvent| {
        let area: web_sys::Element = event_target::<web_sys::Element>(e)
            .closest(".after-shot")
            .ok()
            .flatten()
            .unwrap_or_else(|| event_target::<web_sys::Element>(e));
        let r = area.get_bounding_client_rect();
        let bounds = Rect { x: r.left(), y: r.top(), width: r.width(), height: r.height() };
        verify::fraction_in(Point { x: e.client_x() as f64, y: e.client_y() as f64 }, bounds)
    };
    let down = move |e: leptos::ev::PointerEvent| {
        if !drawing.get_untracked() {
            return;
        }
        e.prevent_default();
        pressed.set(true);
        // A new circle is a new after-shot to upload.
        uploaded.set_value(None);
        circle.set(vec![at(&e)]);
    };
    let moved = move |e: leptos::ev::PointerEvent| {
        if pressed.get_untracked() {
            let point = at(&e);
            circle.update(|c| verify::extend_circle(c, point));
        }
    };
    let (enlarge_url, enlarge_label) = (url.clone(), label.clone());
    let aria = format!("{label} (enlarge)");
    ui_view! {
        <div class="after-shot" class:drawing=move || drawing.get() data-testid="after"
            on:pointerdown=down on:pointermove=moved on:pointerup=move |_| pressed.set(false)
            on:pointerleave=move |_| pressed.set(false)>
            <button type="button" class="image-button" aria-label=aria disabled=move || drawing.get()
                on:click=move |_| ctx.enlarged.set(Some((enlarge_url.clone(), enlarge_label.clone())))>
                <img src=url alt="" draggable="false" />
            </button>
            <svg class="new-circle" viewBox="0 0 100 100" preserveAspectRatio="none" aria-hidden="true">
                <polygon points=move || circle.with(|c| verify::svg_points(c)) />
            </svg>
        </div>
        <div class="actions">
            <button type="button" aria-pressed=move || drawing.get().to_string()
                on:click=move |_| drawing.update(|d| *d = !*d)>
                {move || if drawing.get() { "Done circling" } else { "Circle again" }}
            </button>
            <Show when=move || circle.with(|c| verify::is_circle(c))>
                <button type="button" on:click=move |_| { uploaded.set_value(None); circle.set(Vec::new()); }>"Clear circle"</button>
            </Show>
        </div>
        <p class="hint" role="status">{move || if drawing.get() {
            "Drag on the after-shot to circle the place again."
        } else if circle.with(|c| verify::is_circle(c)) {
            "Your new circle goes with the verdict."
        } else {
            ""
        }}</p>
    }
}

/// Fixed, or Still wrong with words; the after-shot goes with either.
#[component]
fn VerdictForm(change_id: String, project_id: String, state: CheckState) -> impl IntoView {
    let CheckState { seen, uploaded, circle } = state;
    let ctx = expect_context::<Ctx>();
    let words = RwSignal::new(String::new());
    let send = Action::new_local(move |verdict: &Verdict| {
        let verdict = *verdict;
        let body = verify::check_words(verdict, &words.get_untracked());
        let after = seen.with_untracked(|s| s.as_ref().and_then(|s| s.after.clone().ok()));
        let circle = circle.get_untracked();
        let client = ctx.client.get_value();
        let (change_id, project_id) = (change_id.clone(), project_id.clone());
        async move {
            let body = body.map_err(str::to_owned)?;
            // The after-shot, with the new circle drawn in when there is one.
            let image = match after {
                Some((_, url)) if verify::is_circle(&circle) => Some(
                    crate::ui::shot::with_circle(&url, &circle)
                        .await
                        .map_err(|e| crate::browser::chrome::js_error_message(&e))?,
                ),
                Some((image, _)) => Some(image),
                None => None,
            };
            let screenshot_key = match (uploaded.get_value(), image) {
                (Some(key), _) => Some(key),
                (None, Some(image)) => {
                    let input = UploadShotInput {
                        project_id: project_id.clone(),
                        content_type: image.content_type,
                        image_base64: image.base64,
                    };
                    let key =
                        client.call::<UploadShot>(input).await.map_err(|e| e.to_string())?.screenshot_key;
                    uploaded.set_value(Some(key.clone()));
                    Some(key)
                }
                (None, None) => None,
            };
            let input =
                VerifyChangeInput { change_id, project_id: Some(project_id), verdict, body, screenshot_key };
            client.call::<VerifyChange>(input).await.map_err(|e| e.to_string())?;
            words.set(String::new());
            reload(ctx);
            Ok::<(), String>(())
        }
    });
    let last = StoredValue::new(Verdict::Fixed);
    let pending = move || send.pending().get();
    ui_view! {
        <div class="verdict" data-testid="verdict">
            <label for="verdict-words">"What is still wrong? (needed for Still wrong)"</label>
            <textarea id="verdict-words" rows="3" prop:value=move || words.get()
                on:input=move |e| words.set(event_target_value(&e))></textarea>
            <div class="actions">
                <button type="button" class="primary" disabled=pending
                    on:click=move |_| { last.set_value(Verdict::Fixed); send.dispatch(Verdict::Fixed); }>"Fixed"</button>
                <button type="button" disabled=pending
                    on:click=move |_| { last.set_value(Verdict::StillWrong); send.dispatch(Verdict::StillWrong); }>"Still wrong"</button>
                <Show when=pending><span class="hint" role="status">"Sending\u{2026}"</span></Show>
            </div>
            {move || send.value().get().and_then(Result::err).map(|m| ui_view! {
                <ErrorLine message=m retry=Callback::new(move |_| { send.dispatch(last.get_value()); }) />
            })}
        </div>
    }
}

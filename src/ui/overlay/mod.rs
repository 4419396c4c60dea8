//! The overlay over the page: draw a lasso, say what is wrong, file, and watch the held
//! batch. It lives in an extension-page iframe, so it runs wasm even on pages whose CSP
//! forbids it; the content script in the page does the DOM reading and the screenshot.

mod channel;
mod composer;
mod lasso;
mod redactor;
mod tray;

use leptos::ev;
use leptos::prelude::*;
use redline_protocol::rpc::{ResolveStage, ResolveStageInput};
use redline_protocol::{ElementStyles, Point, ResolvedStage};

use super::ErrorLine;
use super::shot::PageShot;
use crate::browser::api::Client;
use crate::browser::chrome;
use crate::messages::{Captured, OverlayEvent};
use crate::rules::api_error::ApiError;
use crate::rules::settings::Settings;
use crate::rules::tray::TrayItem;
use crate::worker_call::{EnableStage, OverlayStarting};
use channel::{Page, tell_page};
use composer::Composer;
use lasso::{Lasso, Outline};
use tray::Tray;

/// Where filing goes: the server and the stage this page belongs to.
#[derive(Debug, Clone)]
struct Target {
    client: Client,
    stage: ResolvedStage,
}

async fn find_target(sign_in: Result<Settings, String>, page_url: String) -> Result<Target, String> {
    let settings = sign_in?;
    if !settings.is_complete() {
        return Err("Set up Redline first: open its side panel → Settings.".to_owned());
    }
    let client = Client::new(&settings);
    match client.call_parsed_by_browser::<ResolveStage>(ResolveStageInput { url: page_url.clone() }).await {
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

/// The User Timing mark of the overlay posting `ready` to the page.
const READY_MARK: &str = "redline:overlay-ready";

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
        return ui_view! { <p class="overlay-hint">"Redline: this overlay was opened without its page."</p> }
            .into_any();
    };
    let mounted_here = LocalResource::new({
        let channel = page.channel.clone();
        move || {
            let request = OverlayStarting { channel: channel.clone() };
            async move { crate::ui::call(&request).await }
        }
    });
    ui_view! {
        {move || match mounted_here.get() {
            None => ().into_any(),
            Some(Ok(Some(started))) => ui_view! { <Circling page=page.clone() sign_in=started.sign_in /> }.into_any(),
            Some(Ok(None)) => ui_view! {
                <p class="overlay-hint">"Redline did not open this overlay here, so it does nothing."</p>
            }.into_any(),
            Some(Err(error)) => ui_view! { <ErrorLine message=error.to_string() /> }.into_any(),
        }}
    }
    .into_any()
}

/// The overlay proper: lasso, composer and tray over the page it was mounted in, filing
/// with the sign-in the worker handed it.
#[component]
fn Circling(page: Page, sign_in: Result<Settings, String>) -> impl IntoView {
    let target = LocalResource::new({
        let url = page.url.clone();
        move || find_target(sign_in.clone(), url.clone())
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
    // The computed styles of the capture being composed, which follow it.
    let (styles, set_styles) = signal_local(None::<Vec<Option<ElementStyles>>>);
    channel::listen(&page, step, set_styles, on_circled.clone(), on_abandoned.clone());
    on_cleanup(move || on_key.remove());
    // Announced once the view below is in the DOM (effects run after the mount), not a
    // frame later: the page hands the pen's stroke over on it, and the overlay's frame
    // paints its view in the same frame as the page drops the pen.
    Effect::new({
        let page = page.clone();
        move |_| {
            // Where the gesture's wait went (`tests/bench/unheld.mjs`).
            if let Some(performance) = window().performance() {
                let _ = performance.mark(READY_MARK);
            }
            tell_page(&OverlayEvent::Ready, &page)
        }
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
    // One landmark holds it all, so that assistive technology finds every part in one.
    ui_view! {
        <main aria-label="Redline">
        <Lasso drawing=Signal::derive(move || matches!(step.get(), Step::Drawing)) on_drawing on_abandoned on_circled />
        {move || match open_on.get() {
            None => ui_view! {
                <p class="overlay-hint">"Circle what is wrong · " <kbd>"Esc"</kbd> " to leave"</p>
            }.into_any(),
            Some(outline) => ui_view! {
                <Outline points=outline.clone() />
                <Composer outline capture styles target draft_text on_filed />
            }.into_any(),
        }}
        <StageNotice target />
        <StageEnabling pattern=page.host_pattern.clone() />
        <Tray items=tray target />
        </main>
    }
    .into_any()
}

/// Says plainly when filing cannot work here, and why.
#[component]
fn StageNotice(target: LocalResource<Result<Target, String>>) -> impl IntoView {
    move || {
        target.get().and_then(Result::err).map(|message| {
            ui_view! { <p class="notice" role="status">{message}</p> }
        })
    }
}

/// Enables this stage: asks for the stage's origin (the click is the gesture Chrome
/// wants) and has the worker, from the next page load on, keep the page's console errors
/// and put the overlay in the page hidden, ready for a gesture.
#[component]
fn StageEnabling(pattern: String) -> impl IntoView {
    let watch = Action::new_local(move |_: &()| {
        let granted = chrome::request_host_permission(std::slice::from_ref(&pattern));
        let pattern = pattern.clone();
        async move {
            if !granted.await.map_err(|e| e.0)? {
                return Err("Keeping Redline ready needs access to this site.".to_owned());
            }
            crate::ui::call(&EnableStage { pattern }).await.map_err(|e| e.to_string())
        }
    });
    ui_view! {
        <div class="stage-enabling">
            {move || match watch.value().get() {
                Some(Ok(())) => ui_view! {
                    <span>"From the next page load: console errors kept, and Redline opens at once."</span>
                }.into_any(),
                Some(Err(message)) => ui_view! { <ErrorLine message /> }.into_any(),
                None => ui_view! {
                    <button type="button" on:click=move |_| { watch.dispatch(()); }>"Keep Redline ready on this stage"</button>
                }.into_any(),
            }}
        </div>
    }
}

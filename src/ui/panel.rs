//! The side panel: the live queue of the current tab's stage (or the whole project),
//! one item with its thread and the agent's questions, the "Circle" button, and
//! settings with sign-in. Views are a signal, not a router (a router breaks on reload in
//! an extension page).

mod check;
mod item;
mod live;
mod queue;
mod reading;
mod refind;
mod stats;
mod webhooks;
mod workspace;

use super::ErrorLine;
use std::time::Duration;

use leptos::ev;
use leptos::prelude::*;
use redline_protocol::ResolvedStage;
use redline_protocol::rpc::{
    CliAuthStatus, GetSession, GetSessionInput, PollCliAuth, PollCliAuthInput, RequestCliAuth,
    RequestCliAuthInput, ResolveStage, ResolveStageInput,
};
use wasm_bindgen::JsCast;

use crate::browser::api::Client;
use crate::browser::chrome::{self, ChromeError};
use crate::browser::sign_in_store;
use crate::rules::api_error::ApiError;
use crate::rules::connection::Connection;
use crate::rules::notify;
use crate::rules::settings::{self, ApiUrl, Preferences, Settings};
use crate::worker_call::StartCircle;
use queue::Store;
use reading::Filter;
use workspace::Workspace;

/// Which screen the panel shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    Queue,
    Settings,
    Stats,
}

/// What the queue is narrowed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Scope {
    /// The stage of the tab the person is looking at.
    Tab,
    Project,
}

/// What the panel knows about the followed tab's stage.
#[derive(Debug, Clone, PartialEq)]
enum TabStage {
    Unknown,
    /// Chrome does not tell Redline this tab's address (no host permission, no
    /// `activeTab` on it).
    Hidden,
    NotAStage(String),
    Stage(ResolvedStage, String),
    Failed(String),
}

/// What the panel's components share, all `Copy` handles: read handles of what only the
/// workspace changes (the filter, the followed tab, the clock), write handles of what
/// components change and only the workspace reads (the selection, the item shown, the
/// enlarged image; see [`Own`]).
#[derive(Clone, Copy)]
pub struct Ctx {
    client: StoredValue<Client>,
    store: Store,
    filter: ReadSignal<Option<Filter>>,
    /// The followed tab: its id and, when Chrome tells us, its URL.
    tab: ReadSignal<Option<(i32, Option<String>)>>,
    /// The row under the keyboard cursor, and the item shown.
    selected: WriteSignal<Option<String>>,
    open: WriteSignal<Option<String>>,
    /// An image shown large: (url, label).
    enlarged: WriteSignal<Option<(String, String)>>,
    /// The clock, ticking each second, for countdowns and relative times.
    now: ReadSignal<i64>,
    /// The clock in whole minutes, for the rows' relative times.
    minute: Memo<i64>,
    /// Which row is selected, tracked per row (only the rows that change re-render).
    selection: StoredValue<Selector<Option<String>>>,
}

/// The other halves, kept by the workspace: it sets the filter, the tab and the clock,
/// and reads the selection, the item shown and the enlarged image.
#[derive(Clone, Copy)]
struct Own {
    set_filter: WriteSignal<Option<Filter>>,
    set_tab: WriteSignal<Option<(i32, Option<String>)>>,
    set_now: WriteSignal<i64>,
    selected: ReadSignal<Option<String>>,
    open: ReadSignal<Option<String>>,
    enlarged: ReadSignal<Option<(String, String)>>,
}

async fn load_settings() -> Result<Settings, ChromeError> {
    sign_in_store::load().await.map_err(|e| ChromeError(e.to_string()))
}

async fn check_connection(settings: Result<Settings, ChromeError>) -> (Option<Settings>, Connection) {
    match settings {
        Ok(settings) if settings.is_complete() => {
            let result = Client::new(&settings).call::<GetSession>(GetSessionInput {}).await;
            let connection = Connection::from_check(&settings, result);
            (Some(settings), connection)
        }
        Ok(_) => (None, Connection::NotConfigured),
        Err(error) => {
            (None, Connection::Failed { api_url: String::new(), error: ApiError::BadReply(error.0) })
        }
    }
}

/// How often the panel asks who is working the queue, between the re-reads events cause.
const PRESENCE_EVERY_MS: i64 = 10_000;

#[component]
pub fn Panel() -> impl IntoView {
    let (view, set_view) = signal(View::Queue);
    let settings = LocalResource::new(load_settings);
    let connection = LocalResource::new(move || {
        let settings = settings.get();
        async move {
            match settings {
                Some(settings) => Some(check_connection(settings).await),
                None => None,
            }
        }
    });
    let on_saved = move || {
        settings.refetch();
        set_view.set(View::Queue);
    };
    // A click on a notification asks for an item (`worker/badge.rs`); the workspace opens
    // it, so it has to be on screen.
    let asked: StoredValue<Option<chrome::StorageListener>, LocalStorage> =
        StoredValue::new_local(Some(chrome::on_session_key_set(notify::OPEN_ITEM_KEY, move || {
            set_view.set(View::Queue)
        })));
    on_cleanup(move || asked.set_value(None));

    ui_view! {
        <header class="top">
            <h1>"Redline"</h1>
            <CircleButton />
            <ViewButton view set_view shows=View::Stats label="Stats" />
            <ViewButton view set_view shows=View::Settings label="Settings" />
        </header>
        <ConnectionLine connection />
        <main>
            // Kept while another view is shown (hidden), so that its reads in flight and its
            // live link are not cut off, and the queue is as it was on the way back.
            {move || match connection.get().flatten() {
                Some((Some(settings), Connection::Connected { session, .. })) => {
                    let shown = Signal::derive(move || view.get() == View::Queue);
                    ui_view! { <Workspace settings session shown /> }.into_any()
                }
                _ => ().into_any(),
            }}
            {move || match view.get() {
                View::Queue => match connection.get().flatten() {
                    None => ui_view! { <p class="hint" role="status">"Checking the server…"</p> }.into_any(),
                    Some((Some(_), Connection::Connected { .. })) => ().into_any(),
                    Some((_, current)) => ui_view! { <NotConnected current connection /> }.into_any(),
                },
                View::Settings => {
                    let current = settings.get().and_then(Result::ok).unwrap_or_default();
                    ui_view! {
                        <SettingsView current on_saved />
                        {move || match connection.get().flatten() {
                            Some((Some(settings), Connection::Connected { session, .. })) => {
                                ui_view! { <webhooks::Webhooks settings session /> }.into_any()
                            }
                            _ => ().into_any(),
                        }}
                    }
                    .into_any()
                }
                View::Stats => match connection.get().flatten() {
                    None => ui_view! { <p class="hint" role="status">"Checking the server…"</p> }.into_any(),
                    Some((Some(settings), Connection::Connected { session, .. })) => {
                        ui_view! { <stats::StatsView settings session /> }.into_any()
                    }
                    Some((_, current)) => ui_view! { <NotConnected current connection /> }.into_any(),
                },
            }}
        </main>
    }
}

/// A header button that shows one view, and the queue again when pressed a second time.
#[component]
fn ViewButton(
    view: ReadSignal<View>,
    set_view: WriteSignal<View>,
    shows: View,
    label: &'static str,
) -> impl IntoView {
    ui_view! {
        <button
            on:click=move |_| set_view.update(|v| *v = if *v == shows { View::Queue } else { shows })
            aria-pressed=move || (view.get() == shows).to_string()
        >
            {label}
        </button>
    }
}

#[component]
fn ConnectionLine(connection: LocalResource<Option<(Option<Settings>, Connection)>>) -> impl IntoView {
    ui_view! {
        <div class="status-line" aria-live="polite">
            {move || match connection.get().flatten() {
                None => ui_view! { <p class="connection" data-testid="connection-status">"Checking the server…"</p> }.into_any(),
                Some((_, current)) => {
                    let class = match &current {
                        Connection::Connected { .. } => "connection connected",
                        Connection::NotConfigured => "connection",
                        Connection::Failed { .. } => "connection failed",
                    };
                    ui_view! { <p class=class data-testid="connection-status" title=current.detail()>{current.headline()}</p> }.into_any()
                }
            }}
        </div>
    }
}

/// Not set up, signed out or unreachable: what to do, and a retry.
#[component]
fn NotConnected(
    current: Connection,
    connection: LocalResource<Option<(Option<Settings>, Connection)>>,
) -> impl IntoView {
    ui_view! {
        <section class="empty" role=if current.is_connected() { "status" } else { "alert" }>
            <p><strong>{current.headline()}</strong></p>
            <p class="hint">{current.detail()}</p>
            <div class="actions">
                <button on:click=move |_| connection.refetch()>"Check again"</button>
            </div>
        </section>
    }
}

fn scope_line(scope: Scope, stage: &TabStage, project: &str) -> String {
    match (scope, stage) {
        (Scope::Project, _) => format!("Every item of project {project}."),
        (Scope::Tab, TabStage::Stage(stage, url)) => format!("Stage {} · {url}", stage.branch),
        (Scope::Tab, TabStage::Unknown) => "Looking at this tab…".to_owned(),
        (Scope::Tab, TabStage::Hidden) => format!(
            "Redline cannot see this tab\u{2019}s address (click its toolbar button on the tab, or use Circle there); showing all of {project}."
        ),
        (Scope::Tab, TabStage::NotAStage(url)) => {
            format!("{url} is not a stage of {project}; showing the whole project.")
        }
        (Scope::Tab, TabStage::Failed(message)) => {
            format!("Could not tell this tab\u{2019}s stage ({message}); showing the whole project.")
        }
    }
}

/// The tab to follow: the active tab of the last focused window, unless that is this
/// page itself (the panel opened as a tab), in which case the other active tab.
async fn followed_tab() -> Option<(i32, Option<String>)> {
    let own = chrome::current_tab().await.and_then(|t| t.id);
    let tab = chrome::active_tab().await.ok().flatten()?;
    let id = tab.id?;
    if Some(id) == own {
        return None;
    }
    Some((id, tab.url.filter(|u| !u.is_empty())))
}

async fn resolve_tab_stage(ctx: Ctx) -> TabStage {
    let Some((_, url)) = ctx.tab.get_untracked() else { return TabStage::Unknown };
    let Some(url) = url else { return TabStage::Hidden };
    // What Redline keeps of a page's address, as the overlay sends it: the tab's query
    // string, fragment and credentials stay in the browser.
    let url = redline_protocol::kept_url(&url).into_owned();
    let client = ctx.client.get_value();
    match client.call::<ResolveStage>(ResolveStageInput { url: url.clone() }).await {
        Ok(stage) => TabStage::Stage(stage, url),
        Err(ApiError::Gone { .. }) => TabStage::NotAStage(url),
        Err(error) => TabStage::Failed(error.to_string()),
    }
}

/// `j`/`k` move, `Enter` opens, `Esc` closes the enlarged image or the item.
fn on_key(ctx: Ctx, own: Own, event: &web_sys::KeyboardEvent) {
    if event.alt_key() || event.ctrl_key() || event.meta_key() {
        return;
    }
    let typing = event
        .target()
        .and_then(|t| t.dyn_into::<web_sys::Element>().ok())
        .is_some_and(|e| matches!(e.tag_name().as_str(), "INPUT" | "TEXTAREA" | "SELECT"));
    match event.key().as_str() {
        "Escape" => {
            if own.enlarged.get_untracked().is_some() {
                ctx.enlarged.set(None);
            } else if own.open.get_untracked().is_some() && !typing {
                ctx.open.set(None);
                focus_selected(own, Scroll::Kept);
            }
        }
        "j" | "k" if !typing && own.open.get_untracked().is_none() => {
            let order = ctx.store.visible_order();
            let delta = if event.key() == "j" { 1 } else { -1 };
            let next =
                crate::rules::queue::move_selection(&order, own.selected.get_untracked().as_deref(), delta);
            ctx.selected.set(next);
            focus_selected(own, Scroll::IntoView);
            event.prevent_default();
        }
        "Enter" if !typing && own.open.get_untracked().is_none() => {
            let focused_row =
                document().active_element().is_some_and(|e| e.class_list().contains("row-main"));
            if let (Some(id), false) = (own.selected.get_untracked(), focused_row) {
                ctx.open.set(Some(id));
                event.prevent_default();
            }
        }
        _ => {}
    }
}

/// The queue stays built, hidden, while an item is open, so going back shows its rows
/// as they were rather than building a long list again; the page's scroll is the item's
/// while it is open and the queue's again after.
fn keep_queue_place(own: Own) {
    // Where the queue was scrolled to, noted while it is shown (an item opening hides it,
    // and the page's scroll then no longer says where it was).
    let queue_scroll = StoredValue::new(0.0);
    let scrolls = window_event_listener(ev::scroll, move |_| {
        if own.open.with_untracked(Option::is_none) {
            queue_scroll.set_value(window().scroll_y().unwrap_or(0.0));
        }
    });
    on_cleanup(move || scrolls.remove());
    Effect::new(move |was_open: Option<bool>| {
        let is_open = own.open.with(Option::is_some);
        match (was_open, is_open) {
            (Some(false), true) => window().scroll_to_with_x_and_y(0.0, 0.0),
            // After the queue is shown again, so that its height is there to scroll in.
            (Some(true), false) => {
                let y = queue_scroll.get_value();
                set_timeout(move || window().scroll_to_with_x_and_y(0.0, y), Duration::ZERO);
            }
            _ => {}
        }
        is_open
    });
}

/// Whether focusing a row may scroll the page to it.
enum Scroll {
    /// The row moved to: bring it into view.
    IntoView,
    /// Back from an item: the queue is where the person left it, which is kept.
    Kept,
}

/// Moves the focus to the selected row once it is rendered (a timeout rather than an
/// animation frame: frames do not run while the panel is hidden).
fn focus_selected(own: Own, scroll: Scroll) {
    set_timeout(
        move || {
            let Some(id) = own.selected.get_untracked() else { return };
            let selector = format!("[data-change-id=\"{}\"] .row-main", id.replace('"', ""));
            if let Ok(Some(element)) = document().query_selector(&selector)
                && let Ok(element) = element.dyn_into::<web_sys::HtmlElement>()
            {
                let options = web_sys::FocusOptions::new();
                options.set_prevent_scroll(matches!(scroll, Scroll::Kept));
                let _ = element.focus_with_options(&options);
            }
        },
        Duration::ZERO,
    );
}

/// An image shown large; `Esc`, a click or Close dismisses it.
#[component]
fn Lightbox(enlarged: ReadSignal<Option<(String, String)>>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    ui_view! {
        {move || enlarged.get().map(|(url, label)| {
            let (aria, alt) = (label.clone(), label.clone());
            ui_view! {
            <div class="lightbox" role="dialog" aria-modal="true" aria-label=aria on:click=move |_| ctx.enlarged.set(None)>
                <img src=url alt=alt />
                <p>{label}</p>
                <button type="button" autofocus on:click=move |_| ctx.enlarged.set(None)>"Close"</button>
            </div>
            }
        })}
    }
}

/// Starts circling in the active tab, through the worker that holds `scripting`.
#[component]
fn CircleButton() -> impl IntoView {
    let start = Action::new_local(|_: &()| async move {
        crate::ui::call(&StartCircle {}).await.map_err(|e| e.to_string())
    });
    let failure = move || start.value().get().and_then(Result::err);
    ui_view! {
        <button class="primary" on:click=move |_| { start.dispatch(()); } disabled=move || start.pending().get()>
            "Circle"
        </button>
        {move || failure().map(|message| ui_view! { <ErrorLine message /> })}
    }
}

/// Requests access to the API's origin; call inside the click's gesture.
fn request_api_permission(
    api_url: &str,
) -> Option<impl std::future::Future<Output = Result<bool, ChromeError>> + use<>> {
    ApiUrl::parse(api_url).ok().map(|url| chrome::request_host_permission(&[url.permission_pattern()]))
}

#[component]
fn SettingsView(current: Settings, on_saved: impl Fn() + Copy + Send + Sync + 'static) -> impl IntoView {
    let api_url = RwSignal::new(current.api_url);
    let token = RwSignal::new(current.token);
    let save = Action::new_local(move |form: &(String, String)| {
        let parsed = Settings::from_form(&form.0, &form.1);
        // Requested now, inside the click's user gesture, before anything is awaited.
        let permission = parsed.as_ref().ok().and_then(|s| request_api_permission(&s.api_url));
        async move {
            let settings = parsed.map_err(|e| e.to_string())?;
            if let Some(permission) = permission {
                let granted = permission.await.map_err(|e| e.0)?;
                if !granted {
                    return Err(format!(
                        "Redline needs access to {} to talk to the server.",
                        settings.api_url
                    ));
                }
            }
            sign_in_store::save(&settings).await.map_err(|e| e.to_string())?;
            on_saved();
            Ok(())
        }
    });
    let failure = move || save.value().get().and_then(Result::err);

    ui_view! {
        <form on:submit=move |event| {
            event.prevent_default();
            save.dispatch((api_url.get_untracked(), token.get_untracked()));
        }>
            <label for="api-url">"API URL"</label>
            <input id="api-url" type="url" bind:value=api_url autocomplete="off" spellcheck="false" />
            <p class="hint">"Your Redline server, or Pikku Fabric's API. Plain http only for this machine."</p>
            <label for="token">"Token"</label>
            <input id="token" type="password" bind:value=token autocomplete="off" />
            <p class="hint">"From `redline token create`, or printed by `cargo xtask start`."</p>
            <div class="actions">
                <button class="primary" type="submit" disabled=move || save.pending().get()>"Save"</button>
            </div>
            {move || failure().map(|message| ui_view! { <ErrorLine message /> })}
        </form>
        <DeviceSignIn api_url on_saved />
        <NotifySwitch />
    }
}

/// Browser notifications on or off, saved as soon as it is switched.
#[component]
fn NotifySwitch() -> impl IntoView {
    let stored = LocalResource::new(|| async {
        chrome::storage_get::<Preferences>(settings::PREFERENCES_KEY).await.map(Option::unwrap_or_default)
    });
    let save = Action::new_local(|notify: &bool| {
        let preferences = Preferences { notify: *notify };
        async move { chrome::storage_set(settings::PREFERENCES_KEY, &preferences).await.map_err(|e| e.0) }
    });
    let failure = move || {
        save.value().get().and_then(Result::err).or_else(|| stored.get().and_then(|s| s.err()).map(|e| e.0))
    };
    ui_view! {
        <section class="preferences" aria-labelledby="notify-heading">
            <h2 id="notify-heading">"Notifications"</h2>
            <label class="switch">
                <input type="checkbox" data-testid="notify-switch"
                    prop:checked=move || stored.get().and_then(Result::ok).is_none_or(|p| p.notify)
                    disabled=move || stored.get().is_none()
                    on:change=move |event| { save.dispatch(event_target_checked(&event)); } />
                " Notify me when an agent asks me something or a fix of mine is live to check"
            </label>
            {move || failure().map(|message| ui_view! { <ErrorLine message=format!("Could not keep this: {message}") /> })}
        </section>
    }
}

/// Where the device-code sign-in stands.
#[derive(Debug, Clone, PartialEq)]
enum SignIn {
    Idle,
    Waiting { code: String, verify_url: String },
    Failed(String),
}

/// Sign in without pasting a token: ask the server for a code, have it approved
/// (`redline auth approve CODE …` on the server host, or the verify page), and wait.
#[component]
fn DeviceSignIn(
    api_url: RwSignal<String>,
    on_saved: impl Fn() + Copy + Send + Sync + 'static,
) -> impl IntoView {
    let state = RwSignal::new(SignIn::Idle);
    let attempt = StoredValue::new(0u32);
    let start = move |_| {
        let url = api_url.get_untracked();
        let permission = request_api_permission(&url);
        attempt.update_value(|a| *a += 1);
        let mine = attempt.get_value();
        leptos::task::spawn_local(async move {
            let result = device_flow(url, permission, state, move || attempt.get_value() == mine).await;
            match result {
                Ok(Some(settings)) => match sign_in_store::save(&settings).await {
                    Ok(()) => {
                        state.set(SignIn::Idle);
                        on_saved();
                    }
                    Err(error) => state.set(SignIn::Failed(error.to_string())),
                },
                Ok(None) => {}
                Err(message) => state.set(SignIn::Failed(message)),
            }
        });
    };
    ui_view! {
        <section class="sign-in" aria-labelledby="sign-in-heading">
            <h2 id="sign-in-heading">"Or sign in with a code"</h2>
            {move || match state.get() {
                SignIn::Idle => ui_view! {
                    <p class="hint">"Redline asks the server at the API URL above for a one-time code for you to approve."</p>
                    <button type="button" on:click=start>"Get a sign-in code"</button>
                }.into_any(),
                SignIn::Waiting { code, verify_url } => ui_view! {
                    <p>"Your code: "<strong class="code" data-testid="sign-in-code">{code.clone()}</strong></p>
                    <p class="hint">"Approve it at "<code>{verify_url}</code>", or on the server host: "
                        <code>{format!("redline auth approve {code} --project P --scope changes:project:read,changes:project:file --name NAME")}</code></p>
                    <p class="hint" role="status">"Waiting for approval…"</p>
                    <button type="button" on:click=move |_| { attempt.update_value(|a| *a += 1); state.set(SignIn::Idle); }>"Cancel"</button>
                }.into_any(),
                SignIn::Failed(message) => ui_view! {
                    <ErrorLine message />
                    <button type="button" on:click=start>"Try again"</button>
                }.into_any(),
            }}
        </section>
    }
}

async fn device_flow(
    api_url: String,
    permission: Option<impl std::future::Future<Output = Result<bool, ChromeError>>>,
    state: RwSignal<SignIn>,
    current: impl Fn() -> bool,
) -> Result<Option<Settings>, String> {
    let url = ApiUrl::parse(&api_url).map_err(|e| e.to_string())?;
    if let Some(permission) = permission
        && !permission.await.map_err(|e| e.0)?
    {
        return Err(format!("Redline needs access to {} to talk to the server.", url.as_str()));
    }
    let client = Client::new(&Settings { api_url: url.as_str().to_owned(), token: String::new() });
    let request = client.call::<RequestCliAuth>(RequestCliAuthInput {}).await.map_err(|e| e.to_string())?;
    state.set(SignIn::Waiting { code: request.code.clone(), verify_url: request.verify_url.clone() });
    loop {
        crate::browser::timer::sleep(2_000.0).await;
        if !current() {
            return Ok(None);
        }
        let poll = client
            .call::<PollCliAuth>(PollCliAuthInput {
                code: request.code.clone(),
                device_secret: request.device_secret.clone(),
            })
            .await;
        match poll {
            Ok(poll) => match (poll.status, poll.token) {
                (CliAuthStatus::Confirmed, Some(token)) => {
                    return Settings::from_form(url.as_str(), &token).map(Some).map_err(|e| e.to_string());
                }
                (CliAuthStatus::Pending, _) | (CliAuthStatus::Confirmed, None) => {}
                (CliAuthStatus::Expired, _) => {
                    return Err("The code expired before it was approved.".to_owned());
                }
                (CliAuthStatus::Rejected, _) => return Err("The code was rejected.".to_owned()),
            },
            Err(error) if error.is_transient() => {}
            Err(error) => return Err(error.to_string()),
        }
    }
}

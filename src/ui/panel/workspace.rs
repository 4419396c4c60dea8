//! The signed-in panel's workspace: the wiring of what it shares ([`Ctx`]) and a `use_*`
//! function for each thing it keeps in step with the outside world (the followed tab,
//! the live link, the clock, the keys, an item a notification asked for), each owning
//! its listener and removing it on cleanup.

use std::time::Duration;

use leptos::ev;
use leptos::prelude::*;
use redline_protocol::{Session, Timestamp};

use super::live::{self, LinkState};
use super::queue::{self, Store};
use super::reading::{self, Filter};
use super::{
    Ctx, Lightbox, Own, PRESENCE_EVERY_MS, Scope, TabStage, followed_tab, item, keep_queue_place, on_key,
    refind, resolve_tab_stage, scope_line,
};
use crate::browser::api::Client;
use crate::browser::chrome::{self, TabListeners};
use crate::rules::notify;
use crate::rules::settings::Settings;

/// The signed-in panel: scope, live queue, the open item; hidden (and deaf to the keys)
/// unless `shown`.
#[component]
pub(super) fn Workspace(settings: Settings, session: Session, shown: Signal<bool>) -> impl IntoView {
    let Some(project) = session.projects.first().cloned() else {
        return ui_view! { <p class="empty" role="alert">"This token sees no project. Create one with `redline token create --project P`."</p> }.into_any();
    };
    let (ctx, own) = use_shared(&settings, &session);
    let (scope, set_scope) = signal(Scope::Tab);
    let (tab_stage, set_tab_stage) = signal(TabStage::Unknown);
    let refind_now = use_refind(ctx, tab_stage);
    let apply_scope =
        use_followed_tab(ctx, own, project.project_id.clone(), scope, set_tab_stage, refind_now);
    let link = use_live_link(ctx, settings, project.project_id.clone());
    use_clock(ctx, own);
    use_keys(ctx, own, shown);
    use_asked_item(ctx);
    keep_queue_place(own);

    ui_view! {
        <div class="workspace" hidden=move || !shown.get()>
            <div class="scope-bar">
                <div class="scope" role="group" aria-label="Show items of">
                    <button type="button" aria-pressed=move || (scope.get() == Scope::Tab).to_string()
                        on:click=move |_| { set_scope.set(Scope::Tab); apply_scope(); }>"This tab\u{2019}s stage"</button>
                    <button type="button" aria-pressed=move || (scope.get() == Scope::Project).to_string()
                        on:click=move |_| { set_scope.set(Scope::Project); apply_scope(); }>"Whole project"</button>
                </div>
                <p class="hint" data-testid="scope-line">
                    {move || scope_line(scope.get(), &tab_stage.get(), &project.name)}
                </p>
                <p class=move || format!("hint link {}", if link.get() == LinkState::Live { "live" } else { "" }) data-testid="link-state">
                    {move || link.get().label()}
                </p>
            </div>
            {move || own.open.get().map(|change_id| ui_view! { <item::ItemView change_id /> })}
            <div hidden=move || own.open.with(Option::is_some)>
                <queue::QueueView />
            </div>
            <Lightbox enlarged=own.enlarged />
        </div>
    }
    .into_any()
}

/// What the workspace's components share, provided as context, and the halves only the
/// workspace holds.
fn use_shared(settings: &Settings, session: &Session) -> (Ctx, Own) {
    let (now, set_now) = signal(js_sys::Date::now() as i64);
    let (selected, set_selected) = signal(None::<String>);
    let (filter, set_filter) = signal(None);
    let (tab, set_tab) = signal(None);
    let (open, set_open) = signal(None);
    let (enlarged, set_enlarged) = signal(None);
    let ctx = Ctx {
        client: StoredValue::new(Client::new(settings)),
        store: Store::new(session.name.clone()),
        filter,
        tab,
        selected: set_selected,
        open: set_open,
        enlarged: set_enlarged,
        now,
        minute: Memo::new(move |_| now.get() / 60_000),
        selection: StoredValue::new(Selector::new(move || selected.get())),
    };
    provide_context(ctx);
    (ctx, Own { set_filter, set_tab, set_now, selected, open, enlarged })
}

/// The items of the page in view are looked for again on a build new to them: when the
/// tab's stage is known, after every read of the queue, and when the tab changes (a
/// reload may bring a new build to the same address). Returns that look, for the tab
/// follower.
fn use_refind(ctx: Ctx, tab_stage: ReadSignal<TabStage>) -> impl Fn() + Copy + 'static {
    let found = refind::Found::new();
    provide_context(found);
    let refind_now = move || {
        if let TabStage::Stage(stage, _) = tab_stage.get_untracked() {
            refind::look(ctx, found, stage);
        }
    };
    Effect::new(move |_| {
        ctx.store.version.track();
        tab_stage.track();
        refind_now();
    });
    refind_now
}

/// Follows the active tab (Chrome's tab events, removed on cleanup) and narrows the queue
/// to the scope. Returns what narrows it again, for a change of scope; a new filter
/// starts from an empty list.
fn use_followed_tab(
    ctx: Ctx,
    own: Own,
    project_id: String,
    scope: ReadSignal<Scope>,
    set_tab_stage: WriteSignal<TabStage>,
    refind_now: impl Fn() + Copy + 'static,
) -> impl Fn() + Copy + 'static {
    let project_id = StoredValue::new(project_id);
    let apply_scope = move || {
        leptos::task::spawn_local(async move {
            let project = project_id.get_value();
            let stage_id = match scope.get_untracked() {
                Scope::Project => None,
                Scope::Tab => {
                    let found = resolve_tab_stage(ctx).await;
                    let stage_id = match &found {
                        TabStage::Stage(stage, _) if stage.project_id == project => {
                            Some(stage.stage_id.clone())
                        }
                        _ => None,
                    };
                    set_tab_stage.set(found);
                    stage_id
                }
            };
            let filter = Some(Filter { project_id: project, stage_id });
            if ctx.filter.get_untracked() != filter {
                ctx.store.clear();
                own.set_filter.set(filter);
                reading::reload(ctx);
            }
        });
    };
    let follow = move || {
        leptos::task::spawn_local(async move {
            if let Some(tab) = followed_tab().await
                && ctx.tab.get_untracked() != Some(tab.clone())
            {
                own.set_tab.set(Some(tab));
                apply_scope();
            } else {
                refind_now();
            }
        });
    };
    follow();
    apply_scope();
    let listeners: StoredValue<Option<TabListeners>, LocalStorage> =
        StoredValue::new_local(Some(chrome::on_tab_change(follow)));
    on_cleanup(move || listeners.set_value(None));
    apply_scope
}

/// The live link to the server's events, stopped on cleanup; its state, for the scope bar.
fn use_live_link(ctx: Ctx, settings: Settings, project_id: String) -> ReadSignal<LinkState> {
    let (link, set_link) = signal(LinkState::Connecting);
    let stream = live::start(
        settings,
        project_id,
        move |hints| reading::hint(ctx, hints),
        move |state| set_link.set(state),
    );
    let stream: StoredValue<Option<live::Link>, LocalStorage> = StoredValue::new_local(Some(stream));
    on_cleanup(move || stream.set_value(None));
    link
}

/// The clock, each second until cleanup; a hold that ran out or a lease that lapsed moves
/// rows between sections.
fn use_clock(ctx: Ctx, own: Own) {
    let last_check = StoredValue::new(0i64);
    let last_presence = StoredValue::new(js_sys::Date::now() as i64);
    if let Ok(handle) = set_interval_with_handle(
        move || {
            let now = js_sys::Date::now() as i64;
            own.set_now.set(now);
            let stamp = Timestamp::from_unix_millis(now);
            if now - last_check.get_value() > 2_000 {
                last_check.set_value(now);
                if ctx.store.hold_ended(stamp) {
                    reading::reload(ctx);
                }
                ctx.store.resection(stamp);
            }
            // Whether an agent waits changes with no queue event: read it now and then.
            if now - last_presence.get_value() > PRESENCE_EVERY_MS {
                last_presence.set_value(now);
                if let Some(filter) = ctx.filter.get_untracked() {
                    leptos::task::spawn_local(async move { reading::read_agents(ctx, &filter).await });
                }
            }
        },
        Duration::from_secs(1),
    ) {
        on_cleanup(move || handle.clear());
    }
}

/// The workspace's keys (`on_key`), heard while it is `shown`, until cleanup.
fn use_keys(ctx: Ctx, own: Own, shown: Signal<bool>) {
    let keys = window_event_listener(ev::keydown, move |event| {
        if shown.get_untracked() {
            on_key(ctx, own, &event);
        }
    });
    on_cleanup(move || keys.remove());
}

/// Opens the item a click on a notification asked for: asked before this panel was open,
/// or while it is (heard until cleanup).
fn use_asked_item(ctx: Ctx) {
    let open_asked = move || {
        leptos::task::spawn_local(async move {
            if let Ok(Some(change_id)) = chrome::session_get::<String>(notify::OPEN_ITEM_KEY).await {
                let _ = chrome::session_remove(notify::OPEN_ITEM_KEY).await;
                ctx.open.set(Some(change_id));
            }
        });
    };
    open_asked();
    let asked: StoredValue<Option<chrome::StorageListener>, LocalStorage> =
        StoredValue::new_local(Some(chrome::on_session_key_set(notify::OPEN_ITEM_KEY, open_asked)));
    on_cleanup(move || asked.set_value(None));
}

//! The queue in the side panel: a keyed store of rows (one signal per item, so an event
//! re-renders only the rows that changed) and the sections that list them.

use std::collections::HashMap;

use leptos::prelude::*;
use redline_protocol::rpc::{
    ListAgents, ListAgentsInput, ListChanges, ListChangesInput, ListChangesOutput, ReleaseChanges,
    ReleaseChangesInput,
};
use redline_protocol::{AgentPresence, ChangeStatus, Timestamp};

use super::{Ctx, ErrorLine};
use crate::api::Client;
use crate::messages::{WorkerReply, WorkerRequest};
use crate::outbox::OutboxItem;
use crate::queue::{self, Queue, Row, Section};
use crate::tray::{self, TrayItem};
use crate::ui::held;

/// Whether the list has been read.
#[derive(Debug, Clone, PartialEq)]
pub enum Load {
    Loading,
    Ready,
    Failed(String),
}

/// The queue the panel shows: the pure [`Queue`], one signal per row, and the ids of
/// each section (what the `<For>`s iterate).
#[derive(Clone, Copy)]
pub struct Store {
    queue: StoredValue<Queue>,
    rows: StoredValue<HashMap<String, ArcRwSignal<Row>>>,
    pub sections: RwSignal<Vec<(Section, Vec<String>)>>,
    pub load: RwSignal<Load>,
    pub me: RwSignal<String>,
    pub show_dismissed: RwSignal<bool>,
    /// The project's agents as `listAgents` last said (the presence line, the claim lines).
    pub agents: RwSignal<Vec<AgentPresence>>,
    /// Bumped on every re-read, so an open item reads its thread again.
    pub version: RwSignal<u64>,
    /// A re-read is running, and whether another was asked for meanwhile.
    reading: StoredValue<(bool, bool)>,
}

impl Store {
    pub fn new(me: String) -> Store {
        Store {
            queue: StoredValue::new(Queue::default()),
            rows: StoredValue::new(HashMap::new()),
            sections: RwSignal::new(Vec::new()),
            load: RwSignal::new(Load::Loading),
            me: RwSignal::new(me),
            show_dismissed: RwSignal::new(false),
            agents: RwSignal::new(Vec::new()),
            version: RwSignal::new(0),
            reading: StoredValue::new((false, false)),
        }
    }

    /// Takes a fresh list: rows that changed are set, new ones added, gone ones dropped,
    /// and the sections recomputed.
    pub fn apply(&self, list: ListChangesOutput, now: Timestamp) {
        let diff = self.queue.try_update_value(|q| q.replace(list.changes, &list.groups)).unwrap_or_default();
        self.queue.with_value(|q| {
            self.rows.update_value(|rows| {
                for id in &diff.removed {
                    rows.remove(id);
                }
                for id in &diff.added {
                    if let Some(row) = q.get(id) {
                        rows.insert(id.clone(), ArcRwSignal::new(row.clone()));
                    }
                }
                for id in &diff.changed {
                    if let (Some(signal), Some(row)) = (rows.get(id), q.get(id)) {
                        signal.set(row.clone());
                    }
                }
            });
        });
        self.resection(now);
        self.load.set(Load::Ready);
        self.version.update(|v| *v += 1);
    }

    /// Recomputes the sections (a lease may have lapsed); sets them only if they moved.
    pub fn resection(&self, now: Timestamp) {
        let me = self.me.get_untracked();
        let show = self.show_dismissed.get_untracked();
        let sections = self.queue.with_value(|q| q.sections(&me, now, show));
        if self.sections.with_untracked(|s| *s != sections) {
            self.sections.set(sections);
        }
    }

    pub fn row(&self, id: &str) -> Option<ArcRwSignal<Row>> {
        self.rows.with_value(|rows| rows.get(id).cloned())
    }

    pub fn needs_answer_count(&self) -> usize {
        let me = self.me.get_untracked();
        self.queue.with_value(|q| q.needs_answer_count(&me))
    }

    pub fn check_count(&self) -> usize {
        let me = self.me.get_untracked();
        self.queue.with_value(|q| q.check_count(&me))
    }

    /// A held item's hold has run out by the local clock: worth a re-read.
    pub fn hold_ended(&self, now: Timestamp) -> bool {
        self.queue.with_value(|q| {
            q.rows().any(|r| {
                r.change.held
                    && r.change.held_until.is_some_and(|u| u.unix_millis() + 500 < now.unix_millis())
            })
        })
    }

    /// The ids in the order they are shown (for `j`/`k`).
    pub fn visible_order(&self) -> Vec<String> {
        self.sections.with(|s| s.iter().flat_map(|(_, ids)| ids.iter().cloned()).collect())
    }

    pub fn clear(&self) {
        self.queue.set_value(Queue::default());
        self.rows.set_value(HashMap::new());
        self.sections.set(Vec::new());
        self.load.set(Load::Loading);
    }
}

/// What the list is narrowed to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Filter {
    pub project_id: String,
    /// `None`: the whole project.
    pub stage_id: Option<String>,
}

/// Re-reads the list (coalescing: a call during a read makes one more read after it).
pub fn reload(ctx: Ctx) {
    let store = ctx.store;
    let busy = store.reading.with_value(|(running, _)| *running);
    if busy {
        store.reading.update_value(|r| r.1 = true);
        return;
    }
    store.reading.set_value((true, false));
    leptos::task::spawn_local(async move {
        while let Some(filter) = ctx.filter.get_untracked() {
            let client = ctx.client.get_value();
            match read(&client, &filter).await {
                Ok(list) => {
                    // The filter may have moved while we read.
                    if ctx.filter.get_untracked().as_ref() == Some(&filter) {
                        store.apply(list, now());
                        let (text, title) =
                            crate::verify::badge(store.needs_answer_count(), store.check_count());
                        leptos::task::spawn_local(async move {
                            let _ = crate::chrome::set_badge(&text).await;
                            let _ = crate::chrome::set_action_title(&title).await;
                        });
                    }
                }
                Err(message) => store.load.set(Load::Failed(message)),
            }
            read_agents(ctx, &filter).await;
            let again = store.reading.with_value(|(_, again)| *again);
            if again {
                store.reading.set_value((true, false));
            } else {
                break;
            }
        }
        store.reading.set_value((false, false));
    });
}

/// Reads who is working the queue (set only when it changed, so rows re-render only
/// then). A server without `listAgents` (Fabric) shows no presence.
pub async fn read_agents(ctx: Ctx, filter: &Filter) {
    let input = ListAgentsInput { project_id: filter.project_id.clone() };
    if let Ok(out) = ctx.client.get_value().call::<ListAgents>(input).await
        && ctx.store.agents.with_untracked(|a| *a != out.agents)
    {
        ctx.store.agents.set(out.agents);
    }
}

async fn read(client: &Client, filter: &Filter) -> Result<ListChangesOutput, String> {
    let input = ListChangesInput {
        project_id: filter.project_id.clone(),
        stage_id: filter.stage_id.clone(),
        include_done: true,
        limit: Some(redline_protocol::LIST_LIMIT_MAX),
        ..ListChangesInput::default()
    };
    client.call::<ListChanges>(input).await.map_err(|e| e.to_string())
}

pub fn now() -> Timestamp {
    Timestamp::from_unix_millis(js_sys::Date::now() as i64)
}

/// The whole list: sections in order, or an empty state that says what to do.
#[component]
pub fn QueueView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let store = ctx.store;
    let outbox = RwSignal::new(Vec::<OutboxItem>::new());
    let refresh_outbox = move || {
        leptos::task::spawn_local(async move {
            if let Ok(WorkerReply::Outbox { items, .. }) =
                crate::chrome::send_message::<_, WorkerReply>(&WorkerRequest::OutboxStatus).await
                && outbox.with_untracked(|o| *o != items)
            {
                outbox.set(items);
            }
        });
    };
    refresh_outbox();
    if let Ok(handle) = set_interval_with_handle(refresh_outbox, std::time::Duration::from_secs(3)) {
        on_cleanup(move || handle.clear());
    }
    intern_row_strings();
    let has_held = move || store.sections.with(|s| s.iter().any(|(section, _)| *section == Section::Held));
    let empty = move || store.sections.with(Vec::is_empty) && outbox.with(Vec::is_empty);

    view! {
        <p class="hint presence" data-testid="presence-line">
            {move || {
                let now = Timestamp::from_unix_millis(ctx.minute.get() * 60_000);
                store.agents.with(|agents| queue::presence_line(agents, now))
            }}
        </p>
        {move || match store.load.get() {
            Load::Loading if empty() => view! { <p class="hint" role="status">"Reading the queue…"</p> }.into_any(),
            Load::Failed(message) => view! {
                <ErrorLine message=format!("Could not read the queue: {message}") retry=Callback::new(move |_| reload(ctx)) />
            }.into_any(),
            _ => ().into_any(),
        }}
        <Show when=move || empty() && store.load.get() == Load::Ready>
            <div class="empty" data-testid="queue-empty">
                <p><strong>"Nothing here yet."</strong></p>
                <p class="hint">"Press Circle (or Alt+Shift+C on the page), draw around what is wrong and say why. Items you file appear here, and so do the agent\u{2019}s questions."</p>
            </div>
        </Show>
        <Show when=move || !has_held() && !outbox.with(Vec::is_empty)>
            <HeldSection outbox />
        </Show>
        <For each=move || store.sections.with(|s| s.iter().map(|(section, _)| *section).collect::<Vec<_>>()) key=|section| *section let(section)>
            {if section == Section::Held {
                view! { <HeldSection outbox /> }.into_any()
            } else {
                view! { <QueueSection section /> }.into_any()
            }}
        </For>
        <label class="toggle">
            <input type="checkbox" prop:checked=move || store.show_dismissed.get()
                on:change=move |e| {
                    store.show_dismissed.set(event_target_checked(&e));
                    store.resection(now());
                } />
            "Show dismissed"
        </label>
    }
}

/// Interns the strings every row sends to the DOM (attribute names and the fixed
/// values and texts of [`QueueRow`]), so that each crosses to JavaScript once rather
/// than being decoded again for every row: on a 1,000-item queue that decoding was the
/// largest single cost of the render. Tag and event names Leptos interns itself.
fn intern_row_strings() {
    let fixed = [
        "class",
        "type",
        "data-testid",
        "data-change-id",
        "aria-current",
        "true",
        "button",
        "row-main",
        "row check",
        "number",
        "title",
        "row-title",
        "queue-row",
        "hint row-line",
        "live",
        " · ",
    ];
    for text in fixed {
        wasm_bindgen::intern(text);
    }
    for status in ChangeStatus::ALL {
        wasm_bindgen::intern(queue::row_class(status));
    }
}

/// The ids of one section, as a signal of its own.
fn section_ids(store: Store, section: Section) -> Memo<Vec<String>> {
    Memo::new(move |_| {
        store
            .sections
            .with(|s| s.iter().find(|(s, _)| *s == section).map(|(_, ids)| ids.clone()).unwrap_or_default())
    })
}

#[component]
fn QueueSection(section: Section) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let ids = section_ids(ctx.store, section);
    let heading = format!("section-{}", section.slug());
    let labelled_by = heading.clone();
    view! {
        <section class=format!("queue-section {}", section.slug()) aria-labelledby=labelled_by data-testid=format!("section-{}", section.slug())>
            <h2 id=heading>{section.title()}" "<span class="count">{move || ids.with(Vec::len)}</span></h2>
            <ul role="list">
                <For each=move || ids.get() key=|id| id.clone() let(id)>
                    <QueueRow id />
                </For>
            </ul>
        </section>
    }
}

/// Your held batch: countdown, edit, withdraw, send now; and what is still in the
/// outbox ("waiting to send").
#[component]
fn HeldSection(outbox: RwSignal<Vec<OutboxItem>>) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let ids = section_ids(ctx.store, Section::Held);
    let send_now = Action::new_local(move |_: &()| {
        let mut stages: Vec<String> = ids
            .get_untracked()
            .iter()
            .filter_map(|id| ctx.store.row(id).map(|r| r.with_untracked(|r| r.change.stage_id.clone())))
            .collect();
        stages.sort();
        stages.dedup();
        let client = ctx.client.get_value();
        async move {
            for stage_id in stages {
                client
                    .call::<ReleaseChanges>(ReleaseChangesInput { stage_id })
                    .await
                    .map_err(|e| e.to_string())?;
            }
            reload(ctx);
            Ok::<(), String>(())
        }
    });
    let has_held = move || ids.with(|ids| !ids.is_empty());
    view! {
        <section class="queue-section held" aria-labelledby="section-held" data-testid="section-held">
            <h2 id="section-held">{Section::Held.title()}
                {move || tray::waiting_label(outbox.with(|o| o.len() as u32)).map(|l| view! { <span class="hint">" · "{l}</span> })}
            </h2>
            <Show when=has_held>
                <div class="actions">
                    <button type="button" on:click=move |_| { send_now.dispatch(()); } disabled=move || send_now.pending().get()>
                        {move || if send_now.pending().get() { "Sending…" } else { "Send now" }}
                    </button>
                </div>
            </Show>
            {move || send_now.value().get().and_then(Result::err).map(|m| view! {
                <ErrorLine message=m retry=Callback::new(move |_| { send_now.dispatch(()); }) />
            })}
            <ul role="list">
                <For each=move || outbox.get() key=|item| (item.change_id.clone(), item.message.clone()) let(item)>
                    <li class="row outbox" data-testid="outbox-row">
                        <span class="title">{item.title.clone()}</span>
                        <span class="hint">"waiting to send"{item.message.clone().map(|m| format!(" · {m}"))}</span>
                    </li>
                </For>
                <For each=move || ids.get() key=|id| id.clone() let(id)>
                    <HeldRow id />
                </For>
            </ul>
        </section>
    }
}

#[component]
fn HeldRow(id: String) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let Some(row) = ctx.store.row(&id) else { return ().into_any() };
    let status = {
        let row = row.clone();
        Signal::derive(move || {
            let mut item = TrayItem::queued(String::new(), String::new());
            row.with(|r| item.update(&r.change));
            item.status_line(ctx.now.get())
        })
    };
    let title = Signal::derive(move || row.with(|r| r.change.title.clone()));
    let (open_id, change_id) = (id.clone(), id.clone());
    view! {
        <li class="row held" data-testid="queue-row" data-change-id=id>
            <held::HeldItem change_id title status held=true
                client=Signal::derive_local(move || Ok(ctx.client.get_value()))
                on_changed=Callback::new(move |_| reload(ctx))
                on_open=Callback::new(move |_| ctx.open.set(Some(open_id.clone()))) />
        </li>
    }
    .into_any()
}

/// One item in a section: number, title (text, never HTML), and the line that matters
/// for its section. What changes is bound piece by piece, so an event touches only the
/// text that changed: the class, the title and the line follow the item's signal (the
/// line also the minute), `aria-current` the selection (a `Selector`, so `j`/`k`
/// touches two rows); the number and the button never change.
#[component]
fn QueueRow(id: String) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let Some(row) = ctx.store.row(&id) else { return ().into_any() };
    let number = row.with_untracked(Row::number);
    let selected = {
        let key = Some(id.clone());
        move || ctx.selection.with_value(|s| s.selected(&key)).then_some("true")
    };
    let class = {
        let row = row.clone();
        move || row.with(Row::class)
    };
    let title = {
        let row = row.clone();
        move || row.with(|r| r.change.title.clone())
    };
    let line = move || {
        let now = Timestamp::from_unix_millis(ctx.minute.get() * 60_000);
        let (line, live) =
            ctx.store.agents.with(|agents| row.with(|r| (row_line(r, now, agents), r.is_live())));
        view! { {line}{live.then(|| view! { " · " <span class="live">"live"</span> })} }
    };
    let open_id = id.clone();
    let open = move |_| {
        ctx.selected.set(Some(open_id.clone()));
        ctx.open.set(Some(open_id.clone()));
    };
    view! {
        <li class=class data-testid="queue-row" data-change-id=id aria-current=selected>
            <button type="button" class="row-main" on:click=open>
                <span class="number">{number}</span>
                <span class="title" data-testid="row-title">{title}</span>
            </button>
            <span class="hint row-line">{line}</span>
        </li>
    }
    .into_any()
}

/// The second line of a row: build, question, claim or hold, and when it was filed.
fn row_line(r: &Row, now: Timestamp, agents: &[AgentPresence]) -> String {
    let mut parts: Vec<String> = Vec::new();
    match r.change.status {
        ChangeStatus::Done => {
            parts.extend(r.build_line());
            if let Some(verified) = r.change.verified_at {
                let by = r.change.verified_by.as_deref().unwrap_or("someone");
                parts.push(format!("checked by {by} {}", queue::relative_time(verified, now)));
            }
        }
        ChangeStatus::NeedsAnswer => parts.push("the agent asks you something".to_owned()),
        _ => {
            if let Some(claim) = r.claim_line(now, agents) {
                parts.push(claim);
            } else if r.change.held {
                parts.push(format!("held by {}", r.change.filed_by.as_deref().unwrap_or("its filer")));
            }
        }
    }
    parts.push(queue::relative_time(r.change.created_at, now));
    parts.join(" · ")
}

//! The queue in the side panel: a keyed store of rows (one signal per item, so an event
//! re-renders only the rows that changed) and the sections that list them, cut to the rows
//! shown; the end of the list reads more as it comes into view (`reading.rs` reads).

use std::collections::HashMap;

use leptos::prelude::*;
use redline_protocol::rpc::{ReleaseChanges, ReleaseChangesInput};
use redline_protocol::{AgentPresence, ChangeStatus, Timestamp};

use super::reading::{Load, more, now, reload};
use super::{Ctx, ErrorLine};
use crate::rules::outbox::OutboxItem;
use crate::rules::pages::{self, Hints, Pages, Part};
use crate::rules::queue::{self, Diff, Queue, Row, Section};
use crate::rules::tray::{self, TrayItem};
use crate::ui::held;

/// The queue the panel shows: the pure [`Queue`] of the rows read so far, one signal per
/// row, how far the list has been read ([`Pages`]), and the ids of each section cut to
/// the rows shown (what the `<For>`s iterate).
#[derive(Clone, Copy)]
pub struct Store {
    queue: StoredValue<Queue>,
    rows: StoredValue<HashMap<String, ArcRwSignal<Row>>>,
    pub(super) pages: StoredValue<Pages>,
    pub sections: RwSignal<Vec<(Section, Vec<String>)>>,
    /// Each section's heading count: the rows read (`50+` while pages are left).
    counts: RwSignal<Vec<(Section, String)>>,
    /// Rows are left to show or to read.
    more: RwSignal<bool>,
    loaded: StoredValue<usize>,
    /// A further page is being read.
    pub(super) reading_more: RwSignal<bool>,
    pub load: RwSignal<Load>,
    pub me: RwSignal<String>,
    pub show_dismissed: RwSignal<bool>,
    /// The project's agents as `listAgents` last said (the presence line, the claim lines).
    pub agents: RwSignal<Vec<AgentPresence>>,
    /// Bumped on every read, so an open item reads its thread again.
    pub version: RwSignal<u64>,
    /// A read is running, and what was asked for meanwhile (done after it).
    pub(super) work: StoredValue<(bool, Hints)>,
}

impl Store {
    pub fn new(me: String) -> Store {
        Store {
            queue: StoredValue::new(Queue::default()),
            rows: StoredValue::new(HashMap::new()),
            pages: StoredValue::new(Pages::default()),
            sections: RwSignal::new(Vec::new()),
            counts: RwSignal::new(Vec::new()),
            more: RwSignal::new(false),
            loaded: StoredValue::new(0),
            reading_more: RwSignal::new(false),
            load: RwSignal::new(Load::Loading),
            me: RwSignal::new(me),
            show_dismissed: RwSignal::new(false),
            agents: RwSignal::new(Vec::new()),
            version: RwSignal::new(0),
            work: StoredValue::new((false, Hints::default())),
        }
    }

    /// Changes the held rows with `change` (a page merged, a row read again, a first page
    /// refreshed) and sets the signals of the rows it touched: changed ones are set, new
    /// ones added, gone ones dropped.
    pub(super) fn change(&self, change: impl FnOnce(&mut Queue) -> Diff) {
        let diff = self.queue.try_update_value(change).unwrap_or_default();
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
    }

    /// Recomputes the sections (a lease may have lapsed, rows came or are shown) and cuts
    /// them to the rows shown; sets what moved.
    pub fn resection(&self, now: Timestamp) {
        let me = self.me.get_untracked();
        let show = self.show_dismissed.get_untracked();
        let all = self.queue.with_value(|q| q.sections(&me, now, show));
        let all = self.pages.with_value(|p| p.showable(all));
        let loaded = all.iter().map(|(_, ids)| ids.len()).sum();
        self.loaded.set_value(loaded);
        let (sections, counts, more) = self.pages.with_value(|p| {
            let counts = all
                .iter()
                .map(|(s, ids)| {
                    (*s, pages::count_label(ids.len(), p.reading(Part::of_section(*s)).has_more()))
                })
                .collect::<Vec<_>>();
            (pages::window(&all, p.shown), counts, p.has_more(loaded))
        });
        if self.sections.with_untracked(|s| *s != sections) {
            self.sections.set(sections);
        }
        if self.counts.with_untracked(|c| *c != counts) {
            self.counts.set(counts);
        }
        if self.more.get_untracked() != more {
            self.more.set(more);
        }
    }

    /// How many rows the sections hold (read, not necessarily shown), as last resectioned.
    pub(super) fn loaded(&self) -> usize {
        self.loaded.get_value()
    }

    pub fn row(&self, id: &str) -> Option<ArcRwSignal<Row>> {
        self.rows.with_value(|rows| rows.get(id).cloned())
    }

    /// Whether the row of `change_id`, as held now, counts on the toolbar badge.
    pub(super) fn on_badge(&self, change_id: &str) -> bool {
        let me = self.me.get_untracked();
        self.queue.with_value(|q| {
            q.get(change_id).is_some_and(|r| {
                queue::needs_my_answer(&r.change, &me)
                    || crate::rules::verify::waits_for_my_check(&r.change, &me)
            })
        })
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

    /// Empties the store for a new filter, which is read from its first page.
    pub fn clear(&self) {
        self.queue.set_value(Queue::default());
        self.rows.set_value(HashMap::new());
        self.pages.set_value(Pages::default());
        self.work.update_value(|(_, hints)| *hints = Hints::default());
        self.sections.set(Vec::new());
        self.counts.set(Vec::new());
        self.more.set(false);
        self.load.set(Load::Loading);
    }
}

/// The whole list: sections in order, or an empty state that says what to do.
#[component]
pub fn QueueView() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let store = ctx.store;
    let published = crate::ui::outbox::use_published();
    let outbox =
        Memo::new(move |_| published.with(|p| p.as_ref().map(|p| p.items.clone()).unwrap_or_default()));
    intern_row_strings();
    let has_held = move || store.sections.with(|s| s.iter().any(|(section, _)| *section == Section::Held));
    let empty = move || store.sections.with(Vec::is_empty) && outbox.with(Vec::is_empty);

    ui_view! {
        <p class="hint presence" data-testid="presence-line">
            {move || {
                let now = Timestamp::from_unix_millis(ctx.minute.get() * 60_000);
                store.agents.with(|agents| queue::presence_line(agents, now))
            }}
        </p>
        {move || match store.load.get() {
            Load::Loading if empty() => ui_view! { <p class="hint" role="status">"Reading the queue…"</p> }.into_any(),
            Load::Failed(message) => ui_view! {
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
                ui_view! { <HeldSection outbox /> }.into_any()
            } else {
                ui_view! { <QueueSection section /> }.into_any()
            }}
        </For>
        <More />
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

/// How far ahead of the view the end of the list starts reading more, in CSS px.
const AHEAD_PX: f64 = 800.0;

/// The end of the list while more is left: comes into view (or near it, on a scroll),
/// and the next rows are shown or read; a button does the same for the keyboard and
/// for assistive technology, and the region says it is busy while a page is read.
#[component]
fn More() -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let store = ctx.store;
    let end = NodeRef::<leptos::html::Div>::new();
    // The queue hidden (another view shown) lays nothing out: no size, nothing read.
    let near = move || {
        end.get_untracked().is_some_and(|end| {
            let rect = end.get_bounding_client_rect();
            let height = window().inner_height().ok().and_then(|h| h.as_f64()).unwrap_or(0.0);
            rect.height() > 0.0 && rect.top() < height + AHEAD_PX
        })
    };
    let check = move || {
        if store.more.get_untracked() && near() {
            more(ctx);
        }
    };
    let scroll = window_event_listener(leptos::ev::scroll, move |_| check());
    on_cleanup(move || scroll.remove());
    // Rows shown or read may leave the end in view already: look again once laid out.
    Effect::new(move |_| {
        store.sections.track();
        store.reading_more.track();
        set_timeout(check, std::time::Duration::ZERO);
    });
    let busy = move || store.reading_more.get();
    ui_view! {
        <Show when=move || store.more.get()>
            <div class="more" node_ref=end aria-busy=move || busy().to_string() data-testid="queue-more">
                <button type="button" on:click=move |_| more(ctx) disabled=busy>
                    {move || if busy() { "Reading more…" } else { "Show more" }}
                </button>
            </div>
        </Show>
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

/// A section's heading count.
fn count(store: Store, section: Section) -> String {
    store.counts.with(|c| c.iter().find(|(s, _)| *s == section).map(|(_, n)| n.clone()).unwrap_or_default())
}

#[component]
fn QueueSection(section: Section) -> impl IntoView {
    let ctx = expect_context::<Ctx>();
    let ids = section_ids(ctx.store, section);
    let heading = format!("section-{}", section.slug());
    let labelled_by = heading.clone();
    ui_view! {
        <section class=format!("queue-section {}", section.slug()) aria-labelledby=labelled_by data-testid=format!("section-{}", section.slug())>
            <h2 id=heading>{section.title()}" "<span class="count">{move || count(ctx.store, section)}</span></h2>
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
fn HeldSection(outbox: Memo<Vec<OutboxItem>>) -> impl IntoView {
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
    ui_view! {
        <section class="queue-section held" aria-labelledby="section-held" data-testid="section-held">
            <h2 id="section-held">{Section::Held.title()}
                {move || tray::waiting_label(outbox.with(|o| o.len() as u32)).map(|l| ui_view! { <span class="hint">" · "{l}</span> })}
            </h2>
            <Show when=has_held>
                <div class="actions">
                    <button type="button" on:click=move |_| { send_now.dispatch(()); } disabled=move || send_now.pending().get()>
                        {move || if send_now.pending().get() { "Sending…" } else { "Send now" }}
                    </button>
                </div>
            </Show>
            {move || send_now.value().get().and_then(Result::err).map(|m| ui_view! {
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
    ui_view! {
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
        ui_view! { {line}{live.then(|| ui_view! { " · " <span class="live">"live"</span> })} }
    };
    let open_id = id.clone();
    let (mark_id, mark_number) = (id.clone(), number.clone());
    let open = move |_| {
        ctx.selected.set(Some(open_id.clone()));
        ctx.open.set(Some(open_id.clone()));
    };
    ui_view! {
        <li class=class data-testid="queue-row" data-change-id=id aria-current=selected>
            <button type="button" class="row-main" on:click=open>
                <span class="number">{number}</span>
                <span class="title" data-testid="row-title">{title}</span>
            </button>
            <span class="hint row-line">{line}</span>
            <super::refind::RowMark change_id=mark_id number=mark_number />
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

//! The overlay's tray: this batch, each item from "waiting to send" to "sent to the
//! agent", with edit, withdraw and send now while held. Reads the server only when
//! `tray.rs` says an item may have moved, never on a timer.

use leptos::prelude::*;
use redline_protocol::Change;
use redline_protocol::rpc::{GetChange, GetChangeInput, ReleaseChanges, ReleaseChangesInput};

use super::Target;
use crate::browser::api::Client;
use crate::rules::tray::{self, TrayItem};
use crate::ui::{ErrorLine, held};

/// This batch: each item with where it stands and, while held, edit, withdraw and send
/// now. An item is read from the server when it leaves the outbox (which the worker
/// publishes), when its hold ends and after the filer changed it (`tray.rs` says which);
/// only the countdown runs every second, on the filer's clock.
#[component]
pub(super) fn Tray(
    items: RwSignal<Vec<TrayItem>>,
    target: LocalResource<Result<Target, String>>,
) -> impl IntoView {
    let now = RwSignal::new(js_sys::Date::now() as i64);
    if let Ok(handle) = set_interval_with_handle(
        move || now.set(js_sys::Date::now() as i64),
        std::time::Duration::from_secs(1),
    ) {
        on_cleanup(move || handle.clear());
    }
    let reading = StoredValue::new(Vec::<String>::new());
    let read = move |ids: Vec<String>| read_items(ids, items, target, reading);
    let published = crate::ui::outbox::use_published();
    Effect::new(move |_| {
        published.with(|published| {
            if let Some(published) = published {
                read(items.with(|items| tray::left_outbox(items, &published.items)));
            }
        })
    });
    let hold_end = StoredValue::new_local(None::<TimeoutHandle>);
    Effect::new(move |_| {
        let wait = items.with(|items| tray::next_hold_end_in(items, js_sys::Date::now() as i64));
        if let Some(Some(timer)) = hold_end.try_update_value(Option::take) {
            timer.clear();
        }
        let at_end =
            move || read(items.with_untracked(|items| tray::hold_ended(items, js_sys::Date::now() as i64)));
        let timer = wait
            .and_then(|ms| set_timeout_with_handle(at_end, std::time::Duration::from_millis(ms as u64)).ok());
        hold_end.set_value(timer);
    });
    on_cleanup(move || {
        if let Some(Some(timer)) = hold_end.try_update_value(Option::take) {
            timer.clear();
        }
    });
    let waiting = move || published.with(|p| p.as_ref().map_or(0, |p| p.items.len() as u32));
    let send_now = Action::new_local(move |_: &()| async move {
        let target = target.await?;
        let input = ReleaseChangesInput { stage_id: target.stage.stage_id.clone() };
        let released =
            target.client.call_parsed_by_browser::<ReleaseChanges>(input).await.map_err(|e| e.to_string())?;
        items.update(|all| released.changes.iter().for_each(|change| tray::take_in(all, change)));
        // A server that answers without the items (Fabric) has them read.
        read(items.with_untracked(|all| tray::hold_ended(all, i64::MAX)));
        Ok::<(), String>(())
    });

    ui_view! {
        <Show when=move || !items.get().is_empty()>
            <section class="tray" aria-label="This batch">
                <header>
                    <strong>"This batch"</strong>
                    {move || tray::waiting_label(waiting()).map(|l| ui_view! { <span class="hint">{l}</span> })}
                    <Show when=move || items.get().iter().any(TrayItem::is_held)>
                        <button type="button" on:click=move |_| { send_now.dispatch(()); }>"Send now"</button>
                    </Show>
                </header>
                <ul>
                    <For each=move || items.get() key=|item| (item.change_id.clone(), item.title.clone(), item.state.clone()) let(item)>
                        <TrayRow item=item now target on_changed=Callback::new(move |id| read(vec![id])) />
                    </For>
                </ul>
                {move || send_now.value().get().and_then(Result::err).map(|m| ui_view! {
                    <ErrorLine message=m retry=Callback::new(move |_| { send_now.dispatch(()); }) />
                })}
            </section>
        </Show>
    }
}

/// Reads the items named from the server, each once at a time (one already being read is
/// left to that read), and takes in what it says ([`tray::take_in`]). A read the server
/// could not answer now is tried again a few times; an item it does not have yet (the
/// outbox's write outran its delivery) is read again when it leaves the outbox.
fn read_items(
    ids: Vec<String>,
    items: RwSignal<Vec<TrayItem>>,
    target: LocalResource<Result<Target, String>>,
    reading: StoredValue<Vec<String>>,
) {
    let ids: Vec<String> = ids
        .into_iter()
        .filter(|id| {
            reading
                .try_update_value(|r| (!r.contains(id)).then(|| r.push(id.clone())).is_some())
                .unwrap_or(false)
        })
        .collect();
    if ids.is_empty() {
        return;
    }
    leptos::task::spawn_local(async move {
        let client = target.await.map(|t| t.client);
        for id in ids {
            let found = match &client {
                Ok(client) => read_change(client, &id).await,
                Err(_) => None,
            };
            reading.try_update_value(|r| r.retain(|other| *other != id));
            if let Some(change) = found {
                items.try_update(|all| tray::take_in(all, &change));
            }
        }
    });
}

/// How often, and how far apart, a read the server could not answer now is tried.
const READ_ATTEMPTS: u32 = 5;
const READ_RETRY_MS: f64 = 3_000.0;

async fn read_change(client: &Client, change_id: &str) -> Option<Change> {
    for _ in 0..READ_ATTEMPTS {
        let input = GetChangeInput { change_id: change_id.to_owned(), ..GetChangeInput::default() };
        match client.call_parsed_by_browser::<GetChange>(input).await {
            Ok(found) => return Some(found.change),
            Err(error) if error.is_transient() => crate::browser::timer::sleep(READ_RETRY_MS).await,
            Err(_) => return None,
        }
    }
    None
}

#[component]
fn TrayRow(
    item: TrayItem,
    now: RwSignal<i64>,
    target: LocalResource<Result<Target, String>>,
    /// After the filer edited or withdrew the item (its id).
    on_changed: Callback<String>,
) -> impl IntoView {
    let status = {
        let item = item.clone();
        Signal::derive(move || item.status_line(now.get()))
    };
    let change_id = item.change_id.clone();
    let client = Signal::derive_local(move || match target.get() {
        Some(Ok(target)) => Ok(target.client),
        Some(Err(error)) => Err(error),
        None => Err("not connected yet".to_owned()),
    });
    ui_view! {
        <li class="tray-item">
            <held::HeldItem change_id=item.change_id.clone() title=item.title.clone() status
                held=item.is_held() client on_changed=Callback::new(move |_| on_changed.run(change_id.clone())) />
        </li>
    }
}

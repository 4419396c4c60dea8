//! What a filer may do to an item while it is held, from the overlay's tray and the
//! panel's held section alike: the calls, and the row body both show ([`HeldItem`]).

use leptos::prelude::*;
use redline_protocol::rpc::{UpdateChange, UpdateChangeInput, WithdrawChange, WithdrawChangeInput};

use super::ErrorLine;
use crate::browser::api::Client;

/// Gives a held item a new title (`updateChange`).
pub async fn retitle(client: &Client, change_id: String, title: String) -> Result<(), String> {
    let input = UpdateChangeInput { change_id, project_id: None, title: Some(title), body: None };
    client.call_parsed_by_browser::<UpdateChange>(input).await.map(drop).map_err(|e| e.to_string())
}

/// Withdraws a held item before it reaches the agent (`withdrawChange`).
pub async fn withdraw(client: &Client, change_id: String) -> Result<(), String> {
    let input = WithdrawChangeInput { change_id, project_id: None };
    client.call_parsed_by_browser::<WithdrawChange>(input).await.map(drop).map_err(|e| e.to_string())
}

/// A held item's row: its title (Edit turns it into a field: Enter sends the new title,
/// Esc leaves it), where its hold stands, Edit and Withdraw while it is held, and what
/// failed with a Retry. The caller says which client to call, what to do once an edit or
/// withdrawal went through, and what a click on the title does.
#[component]
pub fn HeldItem(
    change_id: String,
    /// The title as last read.
    #[prop(into)]
    title: Signal<String>,
    /// Where the item stands ("held · goes to the agent in 42 s").
    #[prop(into)]
    status: Signal<String>,
    /// Whether it is still held: Edit and Withdraw only then.
    #[prop(into)]
    held: Signal<bool>,
    /// The server's client, or why there is none (yet).
    client: Signal<Result<Client, String>, LocalStorage>,
    /// After an edit or a withdrawal went through.
    #[prop(optional)]
    on_changed: Option<Callback<()>>,
    /// Opens the item; without it the title is plain text.
    #[prop(optional)]
    on_open: Option<Callback<()>>,
) -> impl IntoView {
    let editing = RwSignal::new(false);
    let draft = RwSignal::new(title.get_untracked());
    // The title last sent, so Retry sends the same one.
    let sent_title = StoredValue::new(String::new());
    let edit = Action::new_local({
        let change_id = change_id.clone();
        move |new_title: &String| {
            sent_title.set_value(new_title.clone());
            let (client, change_id, new_title) =
                (client.get_untracked(), change_id.clone(), new_title.clone());
            async move {
                retitle(&client?, change_id, new_title).await?;
                if let Some(changed) = on_changed {
                    changed.run(());
                }
                Ok::<(), String>(())
            }
        }
    });
    let withdraw = Action::new_local(move |_: &()| {
        let (client, change_id) = (client.get_untracked(), change_id.clone());
        async move {
            self::withdraw(&client?, change_id).await?;
            if let Some(changed) = on_changed {
                changed.run(());
            }
            Ok::<(), String>(())
        }
    });
    let start_editing = move |_| {
        if !editing.get_untracked() {
            draft.set(title.get_untracked());
        }
        editing.update(|e| *e = !*e);
    };
    ui_view! {
        {move || if editing.get() {
            ui_view! {
                <input aria-label="Title" prop:value=move || draft.get()
                    on:input=move |e| draft.set(event_target_value(&e))
                    on:keydown=move |e| if e.key() == "Enter" {
                        e.prevent_default();
                        edit.dispatch(draft.get_untracked());
                        editing.set(false);
                    } else if e.key() == "Escape" {
                        e.stop_propagation();
                        editing.set(false);
                    } />
            }.into_any()
        } else {
            match on_open {
                Some(open) => ui_view! {
                    <button type="button" class="row-main held-title" on:click=move |_| open.run(())>
                        <span class="title">{move || title.get()}</span>
                    </button>
                }.into_any(),
                None => ui_view! { <span class="held-title">{move || title.get()}</span> }.into_any(),
            }
        }}
        <span class="hint held-status" data-testid="hold-status">{move || status.get()}</span>
        <Show when=move || held.get()>
            <span class="row-actions">
                <button type="button" on:click=start_editing>"Edit"</button>
                <button type="button" on:click=move |_| { withdraw.dispatch(()); } disabled=move || withdraw.pending().get()>"Withdraw"</button>
            </span>
        </Show>
        {move || edit.value().get().and_then(Result::err).map(|m| ui_view! {
            <ErrorLine message=format!("Could not edit: {m}")
                retry=Callback::new(move |_| { edit.dispatch(sent_title.get_value()); })
                pending=Signal::derive(move || edit.pending().get()) />
        })}
        {move || withdraw.value().get().and_then(Result::err).map(|m| ui_view! {
            <ErrorLine message=format!("Could not withdraw: {m}")
                retry=Callback::new(move |_| { withdraw.dispatch(()); })
                pending=Signal::derive(move || withdraw.pending().get()) />
        })}
    }
}

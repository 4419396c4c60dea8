//! The project's webhooks in Settings, for admins (`listWebhooks`, scope
//! `changes:project:admin`): where each sends, which events, in which format, what waits
//! and what failed, and how the latest delivery went. Anyone else sees nothing: the call
//! is made only with the admin scope, and a refusal (403) or a server without it (404)
//! shows nothing either. Everything from the server is text.

use leptos::prelude::*;
use redline_protocol::rpc::{ListWebhooks, ListWebhooksInput};
use redline_protocol::{SCOPE_ADMIN, Session, Timestamp, Webhook};

use super::ErrorLine;
use crate::browser::api::Client;
use crate::rules::api_error::ApiError;
use crate::rules::settings::Settings;
use crate::rules::stats;

#[component]
pub fn Webhooks(settings: Settings, session: Session) -> impl IntoView {
    let admin = session.scopes.iter().any(|s| s == SCOPE_ADMIN);
    let (Some(project), true) = (session.projects.first().cloned(), admin) else {
        return ().into_any();
    };
    let client = StoredValue::new(Client::new(&settings));
    let read = LocalResource::new(move || {
        let client = client.get_value();
        let input = ListWebhooksInput { project_id: project.project_id.clone() };
        async move { client.call::<ListWebhooks>(input).await }
    });
    (move || match read.get() {
        None | Some(Err(ApiError::SignIn { status: 403, .. } | ApiError::Gone { .. })) => ().into_any(),
        Some(Ok(output)) => ui_view! { <List webhooks=output.webhooks /> }.into_any(),
        Some(Err(error)) => ui_view! {
            <section class="webhooks" aria-labelledby="webhooks-heading">
                <h2 id="webhooks-heading">"Webhooks"</h2>
                <ErrorLine message=format!("Could not read the webhooks: {error}") retry=Callback::new(move |_| read.refetch()) />
            </section>
        }
        .into_any(),
    })
    .into_any()
}

#[component]
fn List(webhooks: Vec<Webhook>) -> impl IntoView {
    let now = Timestamp::from_unix_millis(js_sys::Date::now() as i64);
    ui_view! {
        <section class="webhooks" aria-labelledby="webhooks-heading">
            <h2 id="webhooks-heading">"Webhooks"</h2>
            {webhooks.is_empty().then(|| ui_view! {
                <p class="hint">"None. Add one on the server host: redline webhook add."</p>
            })}
            <ul class="webhook-list">
                {webhooks.into_iter().map(|webhook| {
                    let failing = webhook.last_attempt.as_ref().is_some_and(|a| !a.ok);
                    let attempt = stats::last_attempt_line(&webhook, now);
                    ui_view! {
                        <li data-testid="webhook">
                            <p><code>{webhook.target.clone()}</code>" \u{b7} "{webhook.format.clone()}</p>
                            <p class="hint">"Events: "{webhook.events.join(", ")}</p>
                            <p class="hint" data-testid="webhook-deliveries">{stats::deliveries_line(&webhook)}</p>
                            <p class=if failing { "hint failing" } else { "hint" } data-testid="webhook-last">{attempt}</p>
                        </li>
                    }
                }).collect_view()}
            </ul>
        </section>
    }
}

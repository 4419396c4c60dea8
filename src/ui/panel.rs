//! The side panel: whether the server is reachable, the "Circle" button, and settings.
//! Later issues add the live queue here.

use leptos::prelude::*;

use crate::api::{ApiError, Client};
use crate::chrome::{self, ChromeError};
use crate::connection::Connection;
use crate::messages::{WorkerReply, WorkerRequest};
use crate::settings::{self, ApiUrl, Settings};
use redline_protocol::rpc::{GetSession, GetSessionInput};

/// Which screen the panel shows. A signal instead of a router: a router breaks on
/// reload in an extension page.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum View {
    Status,
    Settings,
}

async fn load_settings() -> Result<Settings, ChromeError> {
    Ok(chrome::storage_get::<Settings>(settings::STORAGE_KEY).await?.unwrap_or_default())
}

async fn check_connection(settings: Result<Settings, ChromeError>) -> Connection {
    match settings {
        Ok(settings) if settings.is_complete() => {
            let result = Client::new(&settings).call::<GetSession>(GetSessionInput {}).await;
            Connection::from_check(&settings, result)
        }
        Ok(_) => Connection::NotConfigured,
        Err(error) => Connection::Failed { api_url: String::new(), error: ApiError::BadReply(error.0) },
    }
}

#[component]
pub fn Panel() -> impl IntoView {
    let (view, set_view) = signal(View::Status);
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
        set_view.set(View::Status);
    };

    view! {
        <header>
            <h1>"Redline"</h1>
            <button
                on:click=move |_| set_view.update(|v| *v = if *v == View::Status { View::Settings } else { View::Status })
                aria-pressed=move || (view.get() == View::Settings).to_string()
            >
                "Settings"
            </button>
        </header>
        <main>
            {move || match view.get() {
                View::Status => view! { <StatusView connection=connection /> }.into_any(),
                View::Settings => {
                    let current = settings.get().and_then(Result::ok).unwrap_or_default();
                    view! { <SettingsView current on_saved /> }.into_any()
                }
            }}
        </main>
    }
}

#[component]
fn StatusView(connection: LocalResource<Option<Connection>>) -> impl IntoView {
    let state = move || connection.get().flatten();
    view! {
        <section aria-live="polite">
            {move || match state() {
                None => view! { <p class="connection">"Checking the server…"</p> }.into_any(),
                Some(current) => {
                    let class = match &current {
                        Connection::Connected { .. } => "connection connected",
                        Connection::NotConfigured => "connection",
                        Connection::Failed { .. } => "connection failed",
                    };
                    view! {
                        <p class=class data-testid="connection-status">{current.headline()}</p>
                        <p class="hint">{current.detail()}</p>
                    }
                    .into_any()
                }
            }}
            <div class="actions">
                <CircleButton />
                <button on:click=move |_| connection.refetch()>"Check again"</button>
            </div>
        </section>
    }
}

/// Starts circling in the active tab, through the worker that holds `scripting`.
#[component]
fn CircleButton() -> impl IntoView {
    let start = Action::new_local(|_: &()| async move {
        match chrome::send_message::<_, WorkerReply>(&WorkerRequest::StartCircle).await {
            Ok(WorkerReply::CircleStarted) => Ok(()),
            Ok(WorkerReply::Error { message }) => Err(message),
            Ok(other) => Err(format!("unexpected answer: {other:?}")),
            Err(error) => Err(error.0),
        }
    });
    let failure = move || start.value().get().and_then(Result::err);
    view! {
        <button class="primary" on:click=move |_| { start.dispatch(()); } disabled=move || start.pending().get()>
            "Circle"
        </button>
        {move || failure().map(|message| view! { <p class="error" role="alert">{message}</p> })}
    }
}

#[component]
fn SettingsView(current: Settings, on_saved: impl Fn() + Copy + 'static) -> impl IntoView {
    let api_url = RwSignal::new(current.api_url);
    let token = RwSignal::new(current.token);
    let save = Action::new_local(move |form: &(String, String)| {
        let parsed = Settings::from_form(&form.0, &form.1);
        // Requested now, inside the click's user gesture, before anything is awaited.
        let permission = parsed
            .as_ref()
            .ok()
            .and_then(|s| ApiUrl::parse(&s.api_url).ok())
            .map(|url| chrome::request_host_permission(&[url.permission_pattern()]));
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
            chrome::storage_set(settings::STORAGE_KEY, &settings).await.map_err(|e| e.0)?;
            on_saved();
            Ok(())
        }
    });
    let failure = move || save.value().get().and_then(Result::err);

    view! {
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
            {move || failure().map(|message| view! { <p class="error" role="alert">{message}</p> })}
        </form>
    }
}

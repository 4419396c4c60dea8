//! `redline webhook`: a project's events sent to a URL, signed JSON or Slack messages.

use std::path::{Path, PathBuf};

use anyhow::Context;
use clap::{Subcommand, ValueEnum};
use redline_server::Clock;
use redline_server::webhooks::{self, payload::Format, sender::Addresses};

use crate::data::StoreArgs;
use crate::output::print;

#[derive(Clone, Copy, ValueEnum)]
pub enum WebhookFormatArg {
    Json,
    Slack,
}

#[derive(Subcommand)]
pub enum WebhookCommand {
    /// Add a webhook; a secret it signs with is made and printed once unless given.
    Add {
        /// Project name or id.
        #[arg(long)]
        project: String,
        /// Where to send (http or https).
        url: String,
        /// Comma-separated event types: filed, released, claimed, asked, answered,
        /// replied, shot, done, live (an item's fix became live), verified, or all.
        #[arg(long, value_delimiter = ',', required = true)]
        events: Vec<String>,
        /// `json` (signed, docs/webhooks.md) or `slack` (a Slack message).
        #[arg(long, value_enum, default_value = "json")]
        format: WebhookFormatArg,
        /// A file holding the signing secret (`whsec_…`, or any text).
        #[arg(long, value_name = "FILE")]
        secret_file: Option<PathBuf>,
        /// Accept a URL on a loopback or private address (the server sends to it only if
        /// it runs with `--allow-private-webhooks` too).
        #[arg(long)]
        allow_private_webhooks: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List webhooks: what each waits to send, what failed and its last error.
    List {
        /// Only this project's (name or id).
        #[arg(long)]
        project: Option<String>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Remove a webhook and what it still had to send.
    Remove {
        webhook_id: String,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Send a signed `ping` to a webhook now and say how it went.
    Test {
        webhook_id: String,
        #[arg(long)]
        allow_private_webhooks: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
}

impl WebhookCommand {
    pub async fn run(self, json: bool) -> anyhow::Result<()> {
        match self {
            WebhookCommand::Add {
                project,
                url,
                events,
                format,
                secret_file,
                allow_private_webhooks,
                store,
            } => {
                let spec = webhooks::WebhookSpec {
                    project: &project,
                    url: &url,
                    events: webhooks::parse_events(&events)?,
                    format: match format {
                        WebhookFormatArg::Json => Format::Json,
                        WebhookFormatArg::Slack => Format::Slack,
                    },
                    secret: secret_file.as_deref().map(read_secret).transpose()?,
                };
                add(spec, addresses(allow_private_webhooks), &store, json).await
            }
            WebhookCommand::List { project, store } => list(project.as_deref(), &store, json).await,
            WebhookCommand::Remove { webhook_id, store } => {
                let w = webhooks::remove_webhook(&store.open().await?, &webhook_id).await?;
                print(json, &w, || format!("removed webhook {} ({})", w.webhook_id, w.url));
                Ok(())
            }
            WebhookCommand::Test { webhook_id, allow_private_webhooks, store } => {
                test(&webhook_id, addresses(allow_private_webhooks), &store, json).await
            }
        }
    }
}

/// Where the server may send: `--allow-private-webhooks` lets it reach its own network.
pub fn addresses(allow_private: bool) -> Addresses {
    match allow_private {
        true => Addresses::AllowPrivate,
        false => Addresses::PublicOnly,
    }
}

/// The signing secret in `file`, trimmed; refused when too short to be one.
fn read_secret(file: &Path) -> anyhow::Result<String> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let secret = text.trim().to_owned();
    anyhow::ensure!(secret.len() >= 16, "the secret in {} is shorter than 16 characters", file.display());
    Ok(secret)
}

async fn add(
    spec: webhooks::WebhookSpec<'_>,
    to: Addresses,
    store: &StoreArgs,
    json: bool,
) -> anyhow::Result<()> {
    let w = webhooks::add_webhook(&store.open().await?, spec, to, Clock::System.now()).await?;
    print(json, &w, || {
        let mut text = format!("webhook {} added: {}", w.webhook_id, webhook_line(&w));
        if let Some(secret) = &w.secret {
            text.push_str(&format!("\nsigning secret (shown once, give it to the receiver): {secret}"));
        }
        text
    });
    Ok(())
}

async fn list(project: Option<&str>, store: &StoreArgs, json: bool) -> anyhow::Result<()> {
    let all = webhooks::list_webhooks(&store.open().await?, project).await?;
    print(json, &all, || {
        if all.is_empty() {
            return "no webhooks".to_owned();
        }
        all.iter().map(|w| format!("{}  {}", w.webhook_id, webhook_line(w))).collect::<Vec<_>>().join("\n")
    });
    Ok(())
}

async fn test(webhook_id: &str, to: Addresses, store: &StoreArgs, json: bool) -> anyhow::Result<()> {
    let attempt = webhooks::test_webhook(&store.open().await?, webhook_id, to, Clock::System.now()).await?;
    let answer = serde_json::json!({ "ok": attempt.error.is_none(), "status": attempt.status, "error": attempt.error });
    print(json, &answer, || match (&attempt.error, attempt.status) {
        (None, Some(status)) => format!("delivered: the receiver answered {status}"),
        (Some(error), _) => format!("not delivered: {error}"),
        (None, None) => "delivered".to_owned(),
    });
    anyhow::ensure!(attempt.error.is_none(), "the test ping was not delivered");
    Ok(())
}

/// One webhook as `webhook list` prints it: where, what, and how its deliveries go.
fn webhook_line(w: &webhooks::WebhookInfo) -> String {
    let mut line =
        format!("{} {} [{}] {} pending, {} failed", w.url, w.format, w.events.join(","), w.pending, w.failed);
    if w.dropped > 0 {
        line.push_str(&format!(", {} dropped (the oldest, past the backlog's cap)", w.dropped));
    }
    if let Some(at) = w.next_attempt_at.filter(|_| w.last_attempt.as_ref().is_some_and(|a| !a.ok)) {
        line.push_str(&format!("; next attempt {at}"));
    }
    if let Some(last) = &w.last_attempt {
        match &last.error {
            None => line.push_str(&format!("; last sent {} ok", last.at)),
            Some(error) => line.push_str(&format!("; last attempt {}: {error}", last.at)),
        }
    }
    if let Some(failure) = &w.last_failure {
        line.push_str(&format!("; last given up: {failure}"));
    }
    line
}

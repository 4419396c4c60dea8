//! `redline auth`: an operator decides the sign-in codes devices asked for
//! (`requestCliAuth` / `pollCliAuth`).

use clap::Subcommand;
use redline_protocol::Scope;
use redline_server::{Clock, signin};

use crate::admin::parse_scope;
use crate::data::StoreArgs;
use crate::output::print;

#[derive(Subcommand)]
pub enum AuthCommand {
    /// Let the device showing CODE in: its next poll gets a token with these scopes.
    Approve {
        code: String,
        /// Project name or id.
        #[arg(long)]
        project: String,
        /// Comma-separated scopes, as for `token create`.
        #[arg(long, value_delimiter = ',', required = true, value_parser = parse_scope)]
        scope: Vec<Scope>,
        /// The person signing in.
        #[arg(long)]
        name: String,
        /// The token lasts this many days.
        #[arg(long, default_value_t = signin::SIGN_IN_TOKEN_DAYS,
              value_parser = clap::value_parser!(u32).range(1..=3650))]
        expires_in_days: u32,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// The codes waiting for a decision: where and when each was asked for.
    List {
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Refuse CODE.
    Reject {
        code: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

impl AuthCommand {
    pub async fn run(self, json: bool) -> anyhow::Result<()> {
        match self {
            AuthCommand::Approve { code, project, scope, name, expires_in_days, store } => {
                let grant = signin::SignInGrant {
                    project: &project,
                    scopes: &scope,
                    name: &name,
                    token_days: expires_in_days,
                };
                approve(&code, grant, &store, json).await
            }
            AuthCommand::List { store } => list(&store, json).await,
            AuthCommand::Reject { code, store } => {
                signin::reject_sign_in(&store.open().await?, &code, Clock::System.now()).await?;
                print(json, &serde_json::json!({ "code": code, "approved": false }), || {
                    format!("rejected {code}")
                });
                Ok(())
            }
        }
    }
}

async fn approve(
    code: &str,
    grant: signin::SignInGrant<'_>,
    store: &StoreArgs,
    json: bool,
) -> anyhow::Result<()> {
    let a = signin::approve_sign_in(&store.open().await?, code, grant, Clock::System.now()).await?;
    print(json, &a, || {
        format!(
            "approved {} (asked for from {} at {}): the device gets its token on its next poll; \
             it lasts {} days",
            a.code,
            a.requested_from.as_deref().unwrap_or("an unknown address"),
            a.requested_at,
            a.token_expires_in_days
        )
    });
    Ok(())
}

async fn list(store: &StoreArgs, json: bool) -> anyhow::Result<()> {
    let pending = signin::pending_sign_ins(&store.open().await?, Clock::System.now()).await?;
    print(json, &pending, || {
        if pending.is_empty() {
            return "no sign-in code waits for a decision".to_owned();
        }
        pending
            .iter()
            .map(|p| {
                format!(
                    "{}  asked for from {} at {}, expires {}",
                    p.code,
                    p.requested_from.as_deref().unwrap_or("an unknown address"),
                    p.requested_at,
                    p.expires_at
                )
            })
            .collect::<Vec<_>>()
            .join("\n")
    });
    Ok(())
}

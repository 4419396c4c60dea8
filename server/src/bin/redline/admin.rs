//! `redline project`, `stage` and `token`: what an operator sets up before anyone files.

use clap::{Subcommand, ValueEnum};
use redline_protocol::{Scope, StageType};
use redline_server::Clock;
use redline_server::admin::{self, StageSpec};

use crate::data::StoreArgs;
use crate::output::print;

#[derive(Subcommand)]
pub enum ProjectCommand {
    /// Add a project.
    Add {
        name: String,
        /// How long a filed item stays held (the grace window), in seconds.
        #[arg(long)]
        grace_seconds: Option<i64>,
        #[command(flatten)]
        store: StoreArgs,
    },
}

impl ProjectCommand {
    pub async fn run(self, json: bool) -> anyhow::Result<()> {
        let ProjectCommand::Add { name, grace_seconds, store } = self;
        let p = admin::add_project(&store.open().await?, &name, grace_seconds, Clock::System.now()).await?;
        print(json, &p, || {
            format!("project {} added (id {}, grace {} s)", p.name, p.project_id, p.grace_seconds)
        });
        Ok(())
    }
}

#[derive(Clone, Copy, ValueEnum)]
pub enum StageTypeArg {
    Production,
    Environment,
    Preview,
}

#[derive(Subcommand)]
pub enum StageCommand {
    /// Add a stage, or update the stage of that branch.
    Add {
        /// Project name or id.
        #[arg(long)]
        project: String,
        #[arg(long)]
        branch: String,
        #[arg(long)]
        url: String,
        /// Defaults to production for `main`, preview otherwise.
        #[arg(long = "type", value_enum)]
        stage_type: Option<StageTypeArg>,
        /// The commit the stage now serves.
        #[arg(long)]
        sha: Option<String>,
        /// Whether people may file items on the stage (a new stage: true).
        #[arg(long, value_name = "BOOL")]
        changes_enabled: Option<bool>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Record the build a stage now serves, and mark the done items it contains as live
    /// (checked with git in the checkout this runs in).
    Deploy {
        #[command(flatten)]
        args: redline_server::deploy::DeployArgs,
        #[command(flatten)]
        store: StoreArgs,
    },
}

impl StageCommand {
    pub async fn run(self, json: bool) -> anyhow::Result<()> {
        match self {
            StageCommand::Add { project, branch, url, stage_type, sha, changes_enabled, store } => {
                let spec = StageSpec {
                    project: &project,
                    branch: &branch,
                    url: &url,
                    stage_type: stage_type.map(StageType::from),
                    git_sha: sha.as_deref(),
                    changes_enabled,
                };
                add_stage(spec, &store, json).await
            }
            StageCommand::Deploy { args, store } => {
                redline_server::deploy::run(&store.open().await?, args, json).await
            }
        }
    }
}

impl From<StageTypeArg> for StageType {
    fn from(arg: StageTypeArg) -> StageType {
        match arg {
            StageTypeArg::Production => StageType::Production,
            StageTypeArg::Environment => StageType::Environment,
            StageTypeArg::Preview => StageType::Preview,
        }
    }
}

async fn add_stage(spec: StageSpec<'_>, store: &StoreArgs, json: bool) -> anyhow::Result<()> {
    let s = admin::add_stage(&store.open().await?, spec, Clock::System.now()).await?;
    print(json, &s, || {
        format!(
            "stage {} ({}) {} → {} (id {})",
            s.branch,
            s.stage_type.as_str(),
            s.git_sha.as_deref().unwrap_or("no sha"),
            s.url.as_deref().unwrap_or(""),
            s.stage_id
        )
    });
    Ok(())
}

#[derive(Subcommand)]
pub enum TokenCommand {
    /// Create a token; the secret is printed once.
    Create {
        /// Project name or id.
        #[arg(long)]
        project: String,
        /// Comma-separated: changes:project:read, changes:project:write, changes:project:file.
        #[arg(long, value_delimiter = ',', required = true, value_parser = parse_scope)]
        scope: Vec<Scope>,
        /// The person the token belongs to.
        #[arg(long)]
        name: String,
        /// Refuse the token this many days from now (default: it does not expire).
        #[arg(long, value_parser = clap::value_parser!(u32).range(1..))]
        expires_in_days: Option<u32>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List tokens (never their secrets, which are not stored).
    List {
        /// Only this project's (name or id).
        #[arg(long)]
        project: Option<String>,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Revoke a token, named by its id (see `token list`) or its secret; a running
    /// server refuses it within a second.
    Revoke {
        token: String,
        #[command(flatten)]
        store: StoreArgs,
    },
}

impl TokenCommand {
    pub async fn run(self, json: bool) -> anyhow::Result<()> {
        match self {
            TokenCommand::Create { project, scope, name, expires_in_days, store } => {
                create_token(&project, &scope, &name, expires_in_days, &store, json).await
            }
            TokenCommand::List { project, store } => {
                let tokens = admin::list_tokens(&store.open().await?, project.as_deref()).await?;
                print(json, &tokens, || tokens.iter().map(token_line).collect::<Vec<_>>().join("\n"));
                Ok(())
            }
            TokenCommand::Revoke { token, store } => {
                let t = admin::revoke_token(&store.open().await?, &token, Clock::System.now()).await?;
                print(json, &t, || format!("revoked: {}", token_line(&t)));
                Ok(())
            }
        }
    }
}

async fn create_token(
    project: &str,
    scope: &[Scope],
    name: &str,
    expires_in_days: Option<u32>,
    store: &StoreArgs,
    json: bool,
) -> anyhow::Result<()> {
    let now = Clock::System.now();
    let expires_at = expires_in_days.map(|days| now.plus_minutes(i64::from(days) * 24 * 60));
    let t = admin::create_token(&store.open().await?, project, scope, name, expires_at, now).await?;
    print(json, &t, || {
        let scopes: Vec<&str> = t.scopes.iter().map(|s| s.as_str()).collect();
        let until = t.expires_at.map(|end| format!(", until {end}")).unwrap_or_default();
        format!(
            "{}\n(token {} for {} with {}{until}; shown once, store it now)",
            t.token,
            t.token_id,
            t.name,
            scopes.join(",")
        )
    });
    Ok(())
}

/// A scope as `--scope` takes it: its wire name.
pub fn parse_scope(s: &str) -> Result<Scope, String> {
    Scope::from_wire(s.trim()).ok_or_else(|| {
        let all: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
        format!("unknown scope {s:?} (expected one of {})", all.join(", "))
    })
}

/// One token as `token list` prints it.
fn token_line(t: &admin::TokenInfo) -> String {
    let scopes: Vec<&str> = t.scopes.iter().map(|s| s.as_str()).collect();
    let state = match (t.revoked_at, t.expires_at) {
        (Some(at), _) => format!("revoked {at}"),
        (None, Some(end)) => format!("expires {end}"),
        (None, None) => "does not expire".to_owned(),
    };
    format!(
        "{}  {}  {}  {}  created {}, {state}",
        t.token_id,
        t.project,
        t.name,
        scopes.join(","),
        t.created_at
    )
}

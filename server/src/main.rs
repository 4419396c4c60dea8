//! `redline`: the changes server (`redline serve`) and its admin commands.

use std::io::{IsTerminal, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context;
use clap::builder::TypedValueParser;
use clap::{Args, Parser, Subcommand, ValueEnum};
use redline_protocol::{Scope, StageType};
use redline_server::admin::{self, StageSpec};
use redline_server::limit::RateLimit;
use redline_server::store::blobs::{BlobStore, BlobStoreSpec};
use redline_server::webhooks::{self, payload::Format};
use redline_server::{AppState, Clock, Store};
use redline_server::{backup, signin};
use serde::Serialize;

#[derive(Parser)]
#[command(
    name = "redline",
    version,
    about = "Redline: the changes server, its admin commands, and the agent CLI",
    after_help = "An agent works the queue with (Fabric's `changes` forms; an item may also be\n\
                  given as the first argument, `redline show 2`):\n  \
                  redline login --api-url URL\n  \
                  redline wait --claim --claimed-by NAME             (waits for work and claims it)\n  \
                  redline show --change-id N\n  \
                  redline ask --change-id N --question Q --option A --option B --option-image A=a.png\n  \
                  redline shot --change-id N --label A --kind option --image a.png\n  \
                  redline reply --change-id N -m TEXT [--image F --image-label L]\n  \
                  redline done --change-id N --note TEXT             (records the commit naming #N)\n  \
                  redline run --exec CMD --once --claimed-by NAME    (a fresh agent per changeset, then merges)\n\
                  `redline skill` prints the whole loop for an agent; `redline mcp` serves it over MCP.\n\
                  `redline doctor` checks that an agent can work here and says how to fix what is missing.\n\
                  Agent commands exit 0 with work printed, 2 when there was nothing (timeout, --once),\n\
                  3 when the session is refused (sign in again), 1 otherwise."
)]
struct Cli {
    /// Print the result as JSON.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(Args)]
struct StoreArgs {
    /// The data directory: SQLite database `redline.db` and uploaded images.
    #[arg(long, global = true, default_value = ".redline", env = "REDLINE_DATA")]
    data: PathBuf,
    /// A database URL instead of `DIR/redline.db` (`sqlite://…`).
    #[arg(long, global = true, env = "REDLINE_DATABASE_URL")]
    database_url: Option<String>,
}

impl StoreArgs {
    async fn open(&self) -> anyhow::Result<Store> {
        match &self.database_url {
            Some(url) => Store::open_url(url).await,
            None => Store::open_dir(&self.data).await,
        }
    }
}

#[derive(Args)]
struct BlobArgs {
    /// Where uploaded images are kept: `folder` (DIR/blobs), `database` (in the
    /// database itself) or `s3://bucket/prefix` (S3-compatible storage, configured by the
    /// usual AWS_* variables: AWS_ENDPOINT_URL, AWS_REGION, AWS_ACCESS_KEY_ID, …).
    /// Default: database on Postgres, folder on SQLite. Every server process of one
    /// database must name the same.
    #[arg(long, global = true, env = "REDLINE_BLOB_STORE", value_name = "STORE",
          value_parser = |s: &str| BlobStoreSpec::parse(s).map_err(|e| e.to_string()))]
    blob_store: Option<BlobStoreSpec>,
}

impl BlobArgs {
    async fn open(&self, store: &Store, data: &std::path::Path) -> anyhow::Result<Arc<dyn BlobStore>> {
        BlobStoreSpec::open(self.blob_store.as_ref(), store, data.join("blobs")).await
    }
}

#[derive(Subcommand)]
enum Command {
    /// Serve the changes API.
    Serve {
        #[arg(long, default_value = "127.0.0.1:7878")]
        addr: SocketAddr,
        /// The URL clients reach this server at, for links in answers (signed image
        /// URLs). Defaults to the host each client called.
        #[arg(long)]
        public_url: Option<String>,
        /// Behind a reverse proxy: the header it names the client's address in (e.g.
        /// `X-Forwarded-For`, whose last entry counts). The sign-in calls are
        /// rate-limited per client address; without this, the peer's.
        #[arg(long, value_name = "HEADER")]
        client_ip_header: Option<axum::http::HeaderName>,
        /// How many event streams one token may hold open at once; more are answered
        /// 429 with Retry-After.
        #[arg(long, default_value_t = redline_server::http::events::MAX_STREAMS_PER_TOKEN,
              value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
        max_streams_per_token: usize,
        /// How many images `/blobs` reads at once; a request beyond waits up to 5 s
        /// for its turn, then is answered 503 with Retry-After.
        #[arg(long, default_value_t = redline_server::http::blobs::MAX_READS,
              value_parser = clap::value_parser!(u32).range(1..).map(|n| n as usize))]
        max_blob_reads: usize,
        /// The most each project may store (its screenshots, images and what its
        /// filings captured), in MiB; a write past it is refused with 413.
        #[arg(long, default_value_t = redline_server::DEFAULT_PROJECT_QUOTA_MB, value_parser = clap::value_parser!(u64).range(1..=(1 << 40)))]
        project_quota_mb: u64,
        #[command(flatten)]
        transport: redline_server::http::transport::TransportArgs,
        /// How many calls a second each token may make (RPCs and event streams), in
        /// bursts of up to ten seconds' worth; more are answered 429 with Retry-After.
        #[arg(long, default_value_t = RateLimit::default().per_second,
              value_parser = positive_rate)]
        calls_per_second: f64,
        /// Let webhooks be sent to loopback, private and link-local addresses (by
        /// default refused, so a webhook cannot make the server probe its own network).
        #[arg(long)]
        allow_private_webhooks: bool,
        /// Serve `GET /metrics` (Prometheus) on this loopback address, e.g.
        /// 127.0.0.1:9090; without it there is no /metrics. The API's address never
        /// serves it.
        #[arg(long, value_name = "ADDR", value_parser = redline_server::http::metrics::loopback_only)]
        metrics_addr: Option<SocketAddr>,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        blobs: BlobArgs,
    },
    /// Manage uploaded images.
    Blobs {
        #[command(subcommand)]
        command: BlobsCommand,
    },
    /// Manage projects.
    Project {
        #[command(subcommand)]
        command: ProjectCommand,
    },
    /// Manage stages (where a project is deployed).
    Stage {
        #[command(subcommand)]
        command: StageCommand,
    },
    /// Manage bearer tokens.
    Token {
        #[command(subcommand)]
        command: TokenCommand,
    },
    /// Send a project's events to a URL: signed JSON or Slack messages.
    Webhook {
        #[command(subcommand)]
        command: WebhookCommand,
    },
    /// Decide sign-in codes (requestCliAuth / pollCliAuth).
    Auth {
        #[command(subcommand)]
        command: AuthCommand,
    },
    /// Copy the SQLite store to FILE, consistently, while a server may be serving from
    /// it (images in the default folder store, DIR/blobs, are copied separately; Postgres:
    /// use pg_dump).
    Backup {
        /// The copy to write; must not exist.
        #[arg(long, value_name = "FILE")]
        to: PathBuf,
        #[command(flatten)]
        store: StoreArgs,
    },
    #[command(flatten)]
    Agent(redline_agent::AgentCommand),
}

#[derive(Subcommand)]
enum BlobsCommand {
    /// Delete the images nothing refers to (uploaded but never filed or attached, or
    /// stored by a write that failed) once they are older than --older-than. A running
    /// server does the same every hour for images a day old.
    Gc {
        /// How old an image nothing refers to must be to go (`36h`, `2days`, `90m`).
        #[arg(long, default_value = "24h", value_parser = humantime::parse_duration)]
        older_than: std::time::Duration,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        blobs: BlobArgs,
    },
    /// Copy every image of another store that this one lacks: before moving a
    /// deployment's images (e.g. a Postgres deployment from before images were kept in
    /// the database: `--from folder`, into the default store).
    Copy {
        /// The store to copy from: folder, database or s3://bucket/prefix.
        #[arg(long, value_name = "STORE",
              value_parser = |s: &str| BlobStoreSpec::parse(s).map_err(|e| e.to_string()))]
        from: BlobStoreSpec,
        #[command(flatten)]
        store: StoreArgs,
        #[command(flatten)]
        blobs: BlobArgs,
    },
}

#[derive(Clone, Copy, ValueEnum)]
enum WebhookFormatArg {
    Json,
    Slack,
}

#[derive(Subcommand)]
enum WebhookCommand {
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

#[derive(Subcommand)]
enum AuthCommand {
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

#[derive(Subcommand)]
enum ProjectCommand {
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

#[derive(Clone, Copy, ValueEnum)]
enum StageTypeArg {
    Production,
    Environment,
    Preview,
}

#[derive(Subcommand)]
enum StageCommand {
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

#[derive(Subcommand)]
enum TokenCommand {
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

/// A rate: a positive, finite number.
fn positive_rate(s: &str) -> Result<f64, String> {
    match s.parse::<f64>() {
        Ok(rate) if rate.is_finite() && rate > 0.0 => Ok(rate),
        _ => Err(format!("{s:?} is not a positive number")),
    }
}

fn parse_scope(s: &str) -> Result<Scope, String> {
    Scope::from_wire(s.trim()).ok_or_else(|| {
        let all: Vec<&str> = Scope::ALL.iter().map(|s| s.as_str()).collect();
        format!("unknown scope {s:?} (expected one of {})", all.join(", "))
    })
}

fn main() -> ExitCode {
    // A usage error exits 1, not clap's 2: for the agent commands 2 means "no work".
    let cli = Cli::try_parse().unwrap_or_else(|e| {
        let _ = e.print();
        std::process::exit(if e.use_stderr() { 1 } else { 0 })
    });
    // The agent commands (and `redline mcp`, whose client shows its stderr) say what
    // matters themselves: their log shows warnings only unless RUST_LOG asks for more.
    let default_filter =
        if matches!(cli.command, Command::Agent(_)) { "warn" } else { "info,sqlx=warn,tower_http=info" };
    tracing_subscriber::fmt()
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| default_filter.into()),
        )
        .init();
    let runtime = tokio::runtime::Runtime::new().expect("starting the async runtime");
    match runtime.block_on(run(cli)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("redline: {e:#}");
            ExitCode::FAILURE
        }
    }
}

async fn run(cli: Cli) -> anyhow::Result<()> {
    let clock = Clock::System;
    match cli.command {
        Command::Serve {
            addr,
            public_url,
            client_ip_header,
            max_streams_per_token,
            max_blob_reads,
            project_quota_mb,
            transport,
            calls_per_second,
            allow_private_webhooks,
            metrics_addr,
            store: args,
            blobs,
        } => {
            let store = args.open().await?;
            let images = blobs.open(&store, &args.data).await?;
            tracing::info!(store = images.describe(), "images");
            let mut state = AppState::with_blob_store(store, clock, images).await?;
            state.public_url = public_url.clone();
            state.client_ip_header = client_ip_header;
            state.max_streams_per_token = max_streams_per_token;
            state.blob_reads = redline_server::http::blobs::ReadLimit::new(max_blob_reads);
            state.project_quota_bytes = (project_quota_mb * 1024 * 1024) as i64;
            transport.apply(&mut state);
            state.rate_limit = RateLimit::per_second(calls_per_second);
            let listener =
                tokio::net::TcpListener::bind(addr).await.with_context(|| format!("binding {addr}"))?;
            if let Some(metrics_addr) = metrics_addr {
                let metrics = tokio::net::TcpListener::bind(metrics_addr)
                    .await
                    .with_context(|| format!("binding {metrics_addr}"))?;
                tracing::info!(local = %metrics.local_addr()?, "serving /metrics");
                tokio::spawn(redline_server::serve_metrics(metrics, state.clone()));
            }
            let local = listener.local_addr()?;
            // The build tooling waits for this line on stdout.
            println!("listening on http://{local}");
            std::io::stdout().flush()?;
            tracing::info!(%local, "serving");
            webhooks::sender::spawn(
                state.clone(),
                addresses(allow_private_webhooks),
                public_url.unwrap_or_else(|| format!("http://{local}")),
            );
            redline_server::serve(listener, state).await?;
        }
        Command::Project { command: ProjectCommand::Add { name, grace_seconds, store } } => {
            let p = admin::add_project(&store.open().await?, &name, grace_seconds, clock.now()).await?;
            print(cli.json, &p, || {
                format!("project {} added (id {}, grace {} s)", p.name, p.project_id, p.grace_seconds)
            });
        }
        Command::Stage {
            command: StageCommand::Add { project, branch, url, stage_type, sha, changes_enabled, store },
        } => {
            let stage_type = stage_type.map(|t| match t {
                StageTypeArg::Production => StageType::Production,
                StageTypeArg::Environment => StageType::Environment,
                StageTypeArg::Preview => StageType::Preview,
            });
            let spec = StageSpec {
                project: &project,
                branch: &branch,
                url: &url,
                stage_type,
                git_sha: sha.as_deref(),
                changes_enabled,
            };
            let s = admin::add_stage(&store.open().await?, spec, clock.now()).await?;
            print(cli.json, &s, || {
                format!(
                    "stage {} ({}) {} → {} (id {})",
                    s.branch,
                    s.stage_type.as_str(),
                    s.git_sha.as_deref().unwrap_or("no sha"),
                    s.url.as_deref().unwrap_or(""),
                    s.stage_id
                )
            });
        }
        Command::Stage { command: StageCommand::Deploy { args, store } } => {
            redline_server::deploy::run(&store.open().await?, args, cli.json).await?;
        }
        Command::Blobs { command: BlobsCommand::Gc { older_than, store: args, blobs } } => {
            let store = args.open().await?;
            let images = blobs.open(&store, &args.data).await?;
            let place = images.describe();
            let gone = redline_server::store::blobs::Blobs::open(&store, images)
                .await?
                .collect(&store, clock.now(), older_than)
                .await?;
            print(cli.json, &gone, || {
                format!(
                    "deleted {} images nothing referred to and {} stored without a record, from {place}",
                    gone.unreferenced, gone.orphans
                )
            });
        }
        Command::Blobs { command: BlobsCommand::Copy { from, store: args, blobs } } => {
            let store = args.open().await?;
            let source = BlobStoreSpec::open(Some(&from), &store, args.data.join("blobs")).await?;
            let target = blobs.open(&store, &args.data).await?;
            let copied = redline_server::store::blobs::copy_missing(&*source, &*target).await?;
            print(cli.json, &serde_json::json!({ "copied": copied }), || {
                format!("copied {copied} images from {} to {}", source.describe(), target.describe())
            });
        }
        Command::Backup { to, store } => {
            let source = match &store.database_url {
                Some(url) => backup::Source::Url(url),
                None => backup::Source::Dir(&store.data),
            };
            let b = backup::run(source, &to).await?;
            print(cli.json, &b, || {
                format!("backed up {} items to {} ({} bytes)", b.changes, b.file.display(), b.bytes)
            });
        }
        Command::Agent(command) => std::process::exit(redline_agent::run(command, cli.json).await),
        Command::Token { command: TokenCommand::Create { project, scope, name, expires_in_days, store } } => {
            let now = clock.now();
            let expires_at = expires_in_days.map(|days| now.plus_minutes(i64::from(days) * 24 * 60));
            let t =
                admin::create_token(&store.open().await?, &project, &scope, &name, expires_at, now).await?;
            print(cli.json, &t, || {
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
        }
        Command::Token { command: TokenCommand::List { project, store } } => {
            let tokens = admin::list_tokens(&store.open().await?, project.as_deref()).await?;
            print(cli.json, &tokens, || tokens.iter().map(token_line).collect::<Vec<_>>().join("\n"));
        }
        Command::Token { command: TokenCommand::Revoke { token, store } } => {
            let t = admin::revoke_token(&store.open().await?, &token, clock.now()).await?;
            print(cli.json, &t, || format!("revoked: {}", token_line(&t)));
        }
        Command::Webhook {
            command:
                WebhookCommand::Add { project, url, events, format, secret_file, allow_private_webhooks, store },
        } => {
            let secret = match secret_file {
                Some(file) => {
                    let text = std::fs::read_to_string(&file)
                        .with_context(|| format!("reading {}", file.display()))?;
                    let secret = text.trim().to_owned();
                    anyhow::ensure!(
                        secret.len() >= 16,
                        "the secret in {} is shorter than 16 characters",
                        file.display()
                    );
                    Some(secret)
                }
                None => None,
            };
            let spec = webhooks::WebhookSpec {
                project: &project,
                url: &url,
                events: webhooks::parse_events(&events)?,
                format: match format {
                    WebhookFormatArg::Json => Format::Json,
                    WebhookFormatArg::Slack => Format::Slack,
                },
                secret,
            };
            let w = webhooks::add_webhook(
                &store.open().await?,
                spec,
                addresses(allow_private_webhooks),
                clock.now(),
            )
            .await?;
            print(cli.json, &w, || {
                let mut text = format!("webhook {} added: {}", w.webhook_id, webhook_line(&w));
                if let Some(secret) = &w.secret {
                    text.push_str(&format!(
                        "\nsigning secret (shown once, give it to the receiver): {secret}"
                    ));
                }
                text
            });
        }
        Command::Webhook { command: WebhookCommand::List { project, store } } => {
            let all = webhooks::list_webhooks(&store.open().await?, project.as_deref()).await?;
            print(cli.json, &all, || {
                if all.is_empty() {
                    return "no webhooks".to_owned();
                }
                all.iter()
                    .map(|w| format!("{}  {}", w.webhook_id, webhook_line(w)))
                    .collect::<Vec<_>>()
                    .join("\n")
            });
        }
        Command::Webhook { command: WebhookCommand::Remove { webhook_id, store } } => {
            let w = webhooks::remove_webhook(&store.open().await?, &webhook_id).await?;
            print(cli.json, &w, || format!("removed webhook {} ({})", w.webhook_id, w.url));
        }
        Command::Webhook { command: WebhookCommand::Test { webhook_id, allow_private_webhooks, store } } => {
            let store = store.open().await?;
            let attempt =
                webhooks::test_webhook(&store, &webhook_id, addresses(allow_private_webhooks), clock.now())
                    .await?;
            let json = serde_json::json!({ "ok": attempt.error.is_none(), "status": attempt.status, "error": attempt.error });
            print(cli.json, &json, || match (&attempt.error, attempt.status) {
                (None, Some(status)) => format!("delivered: the receiver answered {status}"),
                (Some(error), _) => format!("not delivered: {error}"),
                (None, None) => "delivered".to_owned(),
            });
            anyhow::ensure!(attempt.error.is_none(), "the test ping was not delivered");
        }
        Command::Auth {
            command: AuthCommand::Approve { code, project, scope, name, expires_in_days, store },
        } => {
            let grant = signin::SignInGrant {
                project: &project,
                scopes: &scope,
                name: &name,
                token_days: expires_in_days,
            };
            let a = signin::approve_sign_in(&store.open().await?, &code, grant, clock.now()).await?;
            print(cli.json, &a, || {
                format!(
                    "approved {} (asked for from {} at {}): the device gets its token on its next poll; \
                     it lasts {} days",
                    a.code,
                    a.requested_from.as_deref().unwrap_or("an unknown address"),
                    a.requested_at,
                    a.token_expires_in_days
                )
            });
        }
        Command::Auth { command: AuthCommand::List { store } } => {
            let pending = signin::pending_sign_ins(&store.open().await?, clock.now()).await?;
            print(cli.json, &pending, || {
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
        }
        Command::Auth { command: AuthCommand::Reject { code, store } } => {
            signin::reject_sign_in(&store.open().await?, &code, clock.now()).await?;
            print(cli.json, &serde_json::json!({ "code": code, "approved": false }), || {
                format!("rejected {code}")
            });
        }
    }
    Ok(())
}

fn addresses(allow_private: bool) -> webhooks::sender::Addresses {
    match allow_private {
        true => webhooks::sender::Addresses::AllowPrivate,
        false => webhooks::sender::Addresses::PublicOnly,
    }
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

fn print<T: Serialize>(json: bool, value: &T, line: impl FnOnce() -> String) {
    if json {
        println!("{}", serde_json::to_string(value).expect("admin records serialise"));
    } else {
        println!("{}", line());
    }
}

//! `redline`: the changes server (`redline serve`), its admin commands, and the agent
//! commands of `redline-agent`. This file is the command tree; each command group's
//! arguments and work live in a module of their own.

mod admin;
mod auth;
mod data;
mod output;
mod serve;
mod webhook;

use std::io::IsTerminal;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use crate::admin::{ProjectCommand, StageCommand, TokenCommand};
use crate::auth::AuthCommand;
use crate::data::{BlobsCommand, StoreArgs};
use crate::serve::Serve;
use crate::webhook::WebhookCommand;

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

#[derive(Subcommand)]
enum Command {
    /// Serve the changes API.
    Serve(Serve),
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
    let json = cli.json;
    match cli.command {
        Command::Serve(serve) => serve.run().await,
        Command::Blobs { command } => command.run(json).await,
        Command::Project { command } => command.run(json).await,
        Command::Stage { command } => command.run(json).await,
        Command::Token { command } => command.run(json).await,
        Command::Webhook { command } => command.run(json).await,
        Command::Auth { command } => command.run(json).await,
        Command::Backup { to, store } => data::back_up(&to, &store, json).await,
        Command::Agent(command) => std::process::exit(redline_agent::run(command, json).await),
    }
}

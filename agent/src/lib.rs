//! The agent side of Redline: the client a coding agent works the queue with, used by
//! the CLI (`redline login|wait|claim|show|ask|reply|shot|done|list|file|merge|release|run|stats`) and
//! by the MCP server (`redline mcp`); `redline doctor` checks an agent's set-up. It
//! depends on the protocol crate only, never on the server.
//!
//! `cli` is the command line (the clap tree, turned into domain types), `commands` runs
//! it. The commands mirror Fabric's `pikku changes …`. Pure decisions live in [`rules`], [`format`](mod@format),
//! [`sse`]'s parser and [`anchors`]' diff mapping (unit-tested); the rest talks to the server through [`client`].

pub mod anchors;
pub mod changeset;
mod cli;
pub mod client;
mod commands;
pub mod config;
mod doctor;
pub mod forge;
pub mod format;
pub mod git;
pub mod guard;
pub mod images;
mod mcp;
mod next;
pub mod rules;
mod run;
mod session;
pub mod skill;
pub mod sse;
pub mod writes;

use std::io::Write;

pub use self::cli::AgentCommand;
use self::client::Error;
pub use self::client::exit;

/// Runs an agent command; returns the process's exit code (see [`exit`]).
pub async fn run(command: AgentCommand, json: bool) -> i32 {
    let code = match commands::run(command, json).await {
        Ok(code) => code,
        Err(e) => {
            report(&e, json);
            e.exit_code()
        }
    };
    let _ = std::io::stdout().flush();
    code
}

/// Prints an error: a line on stderr, and with `--json` the protocol's error body on
/// stdout.
fn report(e: &Error, json: bool) {
    format::warn(&e.to_string());
    if let (true, Error::Api { body, .. }) = (json, e) {
        println!("{}", serde_json::to_string(body).expect("error bodies serialise"));
    }
}

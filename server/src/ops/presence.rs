//! Which agents are about (`listAgents`, docs/protocol-additions.md, "Presence"): an
//! agent is waiting while a wait stream that names it is open (`GET
//! /events/changes:P?claimedBy=NAME`), and was last seen at its latest wait or write.
//! Kept in the database (`agent_presence`), so every server process of one database
//! answers the same: a stream's process marks its agent waiting a little ahead of now,
//! again and again while the stream is open, and not waiting when it closes.

use std::time::Duration;

use redline_protocol::*;
use sqlx::Row;

use super::{Ctx, Op};
use crate::AppState;
use crate::error::ApiError;
use crate::filter::{Bind, Filter};
use crate::queue::ProjectWrite;

/// How often an open wait stream says its agent is still waiting.
const HEARTBEAT: Duration = Duration::from_secs(10);
/// How far ahead of now a heartbeat marks the agent waiting: a stream whose process
/// died stops counting after this.
const WAITING_AHEAD_MS: i64 = 30_000;

/// The statement that records agents as seen at `now` (and, with `waiting_until`, as
/// waiting until then), in the write `conn` belongs to.
pub async fn seen(
    conn: &mut sqlx::AnyConnection,
    project_id: &str,
    names: &[&str],
    now: Timestamp,
    waiting_until: Option<i64>,
) -> Result<(), sqlx::Error> {
    let mut names: Vec<&str> = names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()).collect();
    names.sort_unstable();
    names.dedup();
    if names.is_empty() {
        return Ok(());
    }
    let mut upsert =
        Filter::new("INSERT INTO agent_presence (project_id, name, waiting_until, last_seen_at)".to_owned());
    upsert.values(names.iter().map(|name| {
        vec![
            Bind::Text(project_id.to_owned()),
            Bind::Text((*name).to_owned()),
            Bind::Int(waiting_until.unwrap_or(0)),
            Bind::Int(now.unix_millis()),
        ]
    }));
    let waiting = if waiting_until.is_some() { ", waiting_until = excluded.waiting_until" } else { "" };
    upsert.push(
        &format!(
            " ON CONFLICT (project_id, name) DO UPDATE SET last_seen_at = excluded.last_seen_at{waiting}"
        ),
        [],
    );
    upsert.execute(conn).await
}

/// Records the agents a queue write is made by as seen now, in that write.
pub async fn seen_writing(w: &mut ProjectWrite<'_>, names: &[&str]) -> Result<(), ApiError> {
    let (project_id, now) = (w.project_id().to_owned(), w.now());
    Ok(seen(w.conn(), &project_id, names, now, None).await?)
}

/// Held by an open wait stream that names its agent: marks the agent waiting now and
/// every [`HEARTBEAT`], and not waiting once dropped (the stream closed).
pub struct Waiting {
    state: AppState,
    project_id: String,
    name: String,
    beat: tokio::task::JoinHandle<()>,
}

impl Waiting {
    /// Marks the agent waiting before the stream is answered (so a client that saw it
    /// connect sees the agent waiting), then keeps it so.
    pub async fn start(state: &AppState, project_id: &str, name: &str) -> Result<Waiting, ApiError> {
        let beat_once = async |state: &AppState, project: &str, agent: &str| {
            let now = state.clock.now();
            mark(state, project, agent, now, Some(now.unix_millis() + WAITING_AHEAD_MS)).await
        };
        beat_once(state, project_id, name).await?;
        let (beat_state, project, agent) = (state.clone(), project_id.to_owned(), name.to_owned());
        let beat = tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT).await;
                if let Err(e) = beat_once(&beat_state, &project, &agent).await {
                    tracing::warn!(error = %e, "recording an agent as waiting");
                }
            }
        });
        Ok(Waiting { state: state.clone(), project_id: project_id.to_owned(), name: name.to_owned(), beat })
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.beat.abort();
        let (state, project, agent) =
            (self.state.clone(), std::mem::take(&mut self.project_id), std::mem::take(&mut self.name));
        // A drop cannot wait: the stream's end is recorded in the background.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let now = state.clock.now();
                if let Err(e) = mark(&state, &project, &agent, now, Some(now.unix_millis())).await {
                    tracing::warn!(error = %e, "recording that an agent stopped waiting");
                }
            });
        }
    }
}

/// [`seen`] in a statement of its own, outside any queue write.
async fn mark(
    state: &AppState,
    project_id: &str,
    name: &str,
    now: Timestamp,
    waiting_until: Option<i64>,
) -> Result<(), sqlx::Error> {
    let mut conn = state.store.pool().acquire().await?;
    seen(&mut conn, project_id, &[name], now, waiting_until).await
}

impl Op for ListAgents {
    type Answer = ListAgentsOutput;

    async fn run(ctx: &Ctx<'_>, input: ListAgentsInput) -> Result<Self::Answer, ApiError> {
        ctx.who.require_project(&input.project_id)?;
        let since = ctx.now.unix_millis() - AGENTS_SEEN_DAYS * 24 * 3_600_000;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT name, waiting_until, last_seen_at FROM agent_presence \
             WHERE project_id = $1 AND last_seen_at > $2 ORDER BY last_seen_at DESC, name LIMIT {AGENTS_MAX}"
        )))
        .bind(&input.project_id)
        .bind(since)
        .fetch_all(ctx.state.store.pool())
        .await?;
        let now = ctx.now.unix_millis();
        let agents = rows
            .iter()
            .map(|row| {
                Ok(AgentPresence {
                    name: row.try_get("name")?,
                    waiting: row.try_get::<i64, _>("waiting_until")? > now,
                    last_seen_at: Some(Timestamp::from_unix_millis(row.try_get("last_seen_at")?)),
                })
            })
            .collect::<Result<_, sqlx::Error>>()?;
        Ok(ListAgentsOutput { agents })
    }
}

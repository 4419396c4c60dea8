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
use crate::auth::Principal;
use crate::error::ApiError;
use crate::filter::{Bind, Filter};
use crate::queue::ProjectWrite;
use crate::services::Services;

/// How often an open wait stream says its agent is still waiting.
const HEARTBEAT: Duration = Duration::from_secs(10);
/// How far ahead of now a heartbeat marks the agent waiting: a stream whose process
/// died stops counting after this.
const WAITING_AHEAD_MS: i64 = 30_000;

/// The statement that records agents as seen at `now`, each named by a write of the
/// person `(name, user_id)` pairs give, who then owns the name: only their tokens' wait
/// streams mark it waiting ([`Waiting::start`]). In the write `conn` belongs to.
pub async fn seen(
    conn: &mut sqlx::AnyConnection,
    project_id: &str,
    named: &[(&str, &str)],
    now: Timestamp,
) -> Result<(), sqlx::Error> {
    let mut named: Vec<(&str, &str)> =
        named.iter().map(|(n, u)| (n.trim(), *u)).filter(|(n, _)| !n.is_empty()).collect();
    // One row per name (a statement may not update a row twice): the last writer's.
    named.reverse();
    named.sort_by_key(|(n, _)| *n);
    named.dedup_by_key(|(n, _)| *n);
    if named.is_empty() {
        return Ok(());
    }
    let mut upsert = Filter::new(
        "INSERT INTO agent_presence (project_id, name, waiting_until, last_seen_at, user_id)".to_owned(),
    );
    upsert.values(named.iter().map(|(name, user_id)| {
        vec![
            Bind::Text(project_id.to_owned()),
            Bind::Text((*name).to_owned()),
            Bind::Int(0),
            Bind::Int(now.unix_millis()),
            Bind::Text((*user_id).to_owned()),
        ]
    }));
    upsert.push(
        " ON CONFLICT (project_id, name) DO UPDATE SET last_seen_at = excluded.last_seen_at, \
         user_id = excluded.user_id",
        [],
    );
    upsert.execute(conn).await
}

/// Records the agents a queue write of `user_id` names as seen now, in that write.
pub async fn seen_writing(w: &mut ProjectWrite<'_>, user_id: &str, names: &[&str]) -> Result<(), ApiError> {
    let (project_id, now) = (w.project_id().to_owned(), w.now());
    let named: Vec<(&str, &str)> = names.iter().map(|n| (*n, user_id)).collect();
    Ok(seen(w.conn(), &project_id, &named, now).await?)
}

/// Held by an open wait stream that names its agent: marks the agent waiting now and
/// every [`HEARTBEAT`], and not waiting once dropped (the stream closed).
pub struct Waiting {
    state: Services,
    project_id: String,
    name: String,
    /// The person whose token opened the stream.
    user_id: String,
    beat: tokio::task::JoinHandle<()>,
}

impl Waiting {
    /// Marks the agent waiting before the stream is answered (so a client that saw it
    /// connect sees the agent waiting), then keeps it so. Only a token that may write
    /// marks an agent, and only one its person's writes named (or nobody's yet): 403
    /// naming `claimedBy` otherwise, so no token can mark another's agent away.
    pub async fn start(state: &Services, who: &Principal, name: &str) -> Result<Waiting, ApiError> {
        if who.require(Scope::Write).is_err() {
            return Err(ApiError::forbidden(format!(
                "claimedBy: marking an agent waiting needs the scope {}",
                Scope::Write.as_str()
            )));
        }
        let beat_once = async |state: &Services, project: &str, agent: &str, user: &str| {
            let now = state.clock.now();
            mark(state, project, agent, user, now, now.unix_millis() + WAITING_AHEAD_MS).await
        };
        if !beat_once(state, &who.project_id, name, &who.user_id).await? {
            return Err(ApiError::forbidden(format!(
                "claimedBy: {name} is an agent of another person's writes; wait under a name of your own"
            )));
        }
        let (beat_state, project, agent, user) =
            (state.clone(), who.project_id.clone(), name.to_owned(), who.user_id.clone());
        let beat = tokio::spawn(async move {
            loop {
                tokio::time::sleep(HEARTBEAT).await;
                if let Err(e) = beat_once(&beat_state, &project, &agent, &user).await {
                    tracing::warn!(error = %e, "recording an agent as waiting");
                }
            }
        });
        Ok(Waiting {
            state: state.clone(),
            project_id: who.project_id.clone(),
            name: name.to_owned(),
            user_id: who.user_id.clone(),
            beat,
        })
    }
}

impl Drop for Waiting {
    fn drop(&mut self) {
        self.beat.abort();
        let (state, project, agent, user) = (
            self.state.clone(),
            std::mem::take(&mut self.project_id),
            std::mem::take(&mut self.name),
            std::mem::take(&mut self.user_id),
        );
        // A drop cannot wait: the stream's end is recorded in the background.
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let now = state.clock.now();
                if let Err(e) = mark(&state, &project, &agent, &user, now, now.unix_millis()).await {
                    tracing::warn!(error = %e, "recording that an agent stopped waiting");
                }
            });
        }
    }
}

/// Marks agent `name` seen now and waiting until `waiting_until`, for a stream of
/// `user_id`'s token, in a statement of its own: only if no one owns the name or
/// `user_id` does (taking it when no one does). False when another person owns it.
async fn mark(
    state: &Services,
    project_id: &str,
    name: &str,
    user_id: &str,
    now: Timestamp,
    waiting_until: i64,
) -> Result<bool, sqlx::Error> {
    let marked = sqlx::query(
        "INSERT INTO agent_presence (project_id, name, waiting_until, last_seen_at, user_id) \
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT (project_id, name) DO UPDATE SET \
         waiting_until = excluded.waiting_until, last_seen_at = excluded.last_seen_at, \
         user_id = excluded.user_id \
         WHERE agent_presence.user_id IS NULL OR agent_presence.user_id = excluded.user_id",
    )
    .bind(project_id)
    .bind(name)
    .bind(waiting_until)
    .bind(now.unix_millis())
    .bind(user_id)
    .execute(state.store.pool())
    .await?;
    Ok(marked.rows_affected() > 0)
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

//! `redline stage deploy --stage S --sha SHA`: records the build a stage now serves and
//! marks each done item on it `live` when its `headCommit` is contained in that build,
//! as the git checkout the command runs in says. An admin command: it works on the
//! store (`--data` / `--database-url`), like `stage add`. Each item whose `live` it
//! changes gets a `status` event in the same transaction, so open panels re-read at
//! once (the servers on that store notice events written by another process; see
//! `crate::store::event_log`).

use std::path::Path;

use anyhow::{Context, bail};
use clap::Args;
use redline_protocol::{ChangeEventType, Stage, commit_sha};
use serde::Serialize;
use sqlx::Row;

use crate::Clock;
use crate::store::Store;
use crate::store::event_log;
use crate::store::rows::{STAGE_COLUMNS, STAGE_SELECT_BY_ID, stage_from_row};
use redline_agent::git;

#[derive(Args, Debug)]
pub struct DeployArgs {
    /// The stage: its id, its branch, or its URL.
    #[arg(long)]
    pub stage: String,
    /// The commit the stage now serves (any revision the checkout knows, e.g. HEAD).
    #[arg(long)]
    pub sha: String,
    /// The project (name or id), when several have a stage on that branch.
    #[arg(long)]
    pub project: Option<String>,
    /// The deployment's id, if the host gives one.
    #[arg(long)]
    pub deployment_id: Option<String>,
}

/// What `stage deploy` did (printed with `--json`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Deployed {
    pub stage: Stage,
    /// Short ids of the done items now live.
    pub live: Vec<String>,
    /// Short ids of done items whose commit this build does not contain.
    pub not_live: Vec<String>,
    /// Short ids of done items whose commit this checkout does not know (left as they were).
    pub unknown: Vec<String>,
}

/// Whether a done item's `head` is in the deployed `sha` (a commit id): the same commit
/// (either may be abbreviated), else what git says. A `head` that is no commit id (one
/// stored before they were checked) is not asked about.
fn contained(dir: &Path, sha: &str, head: &str) -> Option<bool> {
    let head = commit_sha(head)?;
    if sha.starts_with(&head) || head.starts_with(sha) {
        return Some(true);
    }
    git::contains(dir, sha, &head)
}

pub async fn run(store: &Store, args: DeployArgs, json: bool) -> anyhow::Result<()> {
    let dir = std::env::current_dir().context("reading the current directory")?;
    let sha = git::resolve(&dir, args.sha.trim()).unwrap_or_else(|| args.sha.trim().to_owned());
    let Some(sha) = commit_sha(&sha) else {
        bail!("--sha must name a commit: a revision this checkout knows, or 7 to 40 hex digits");
    };
    let stage = find_stage(store, &args.stage, args.project.as_deref()).await?;
    let rows = sqlx::query(
        "SELECT short_id, head_commit FROM changes \
         WHERE stage_id = $1 AND status = 'done' AND head_commit IS NOT NULL ORDER BY short_id",
    )
    .bind(&stage.stage_id)
    .fetch_all(store.pool())
    .await?;
    let mut out = Deployed { stage: stage.clone(), live: vec![], not_live: vec![], unknown: vec![] };
    let mut verdicts = Vec::new();
    for row in rows {
        let short: i64 = row.try_get("short_id")?;
        let head: String = row.try_get("head_commit")?;
        let verdict = contained(&dir, &sha, &head);
        match verdict {
            Some(true) => out.live.push(short.to_string()),
            Some(false) => out.not_live.push(short.to_string()),
            None => out.unknown.push(short.to_string()),
        }
        verdicts.push((short, verdict));
    }
    let mut tx = store.write(&stage.project_id).await?.context("the project vanished")?;
    sqlx::query(
        "UPDATE stages SET git_sha = $2, deployment_id = COALESCE($3, deployment_id) WHERE stage_id = $1",
    )
    .bind(&stage.stage_id)
    .bind(&sha)
    .bind(args.deployment_id.as_deref())
    .execute(&mut *tx)
    .await?;
    let mut turned = Vec::new();
    for (short, verdict) in verdicts {
        let Some(live) = verdict else { continue };
        let changed = sqlx::query(
            "UPDATE changes SET live = $3 WHERE stage_id = $1 AND short_id = $2 \
             AND (live IS NULL OR live <> $3) RETURNING change_id",
        )
        .bind(&stage.stage_id)
        .bind(short)
        .bind(i64::from(live))
        .fetch_optional(&mut *tx)
        .await?;
        if let Some(row) = changed {
            turned.push((row.try_get::<String, _>("change_id")?, short));
        }
    }
    let (backend, status, now) = (store.backend(), ChangeEventType::Status, Clock::System.now());
    let keys: Vec<_> =
        turned.iter().map(|(id, short)| event_log::ChangeKey { change_id: id, short_id: *short }).collect();
    event_log::record_all(&mut tx, backend, &stage.project_id, status, &keys, now).await?;
    out.stage =
        stage_from_row(&sqlx::query(STAGE_SELECT_BY_ID).bind(&stage.stage_id).fetch_one(&mut *tx).await?)?;
    tx.commit().await?;
    if json {
        println!("{}", serde_json::to_string(&out)?);
    } else {
        let ids = |v: &[String]| v.iter().map(|s| format!("#{s}")).collect::<Vec<_>>().join(", ");
        println!("stage {} now serves {}", out.stage.branch, redline_protocol::short_sha(&sha));
        if !out.live.is_empty() {
            println!("live: {}", ids(&out.live));
        }
        if !out.not_live.is_empty() {
            println!("not in this build: {}", ids(&out.not_live));
        }
        if !out.unknown.is_empty() {
            println!("unknown to this checkout (left as they were): {}", ids(&out.unknown));
        }
    }
    Ok(())
}

/// A stage by id, branch (within `--project`) or URL.
async fn find_stage(store: &Store, wanted: &str, project: Option<&str>) -> anyhow::Result<Stage> {
    let wanted = wanted.trim();
    let project_id = match project {
        Some(p) => Some(
            crate::admin::find_project(store, p)
                .await?
                .with_context(|| format!("no project {p:?}"))?
                .project_id,
        ),
        None => None,
    };
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {STAGE_COLUMNS} FROM stages WHERE stage_id = $1 OR branch = $1 OR url = $1 OR url = $2"
    )))
    .bind(wanted)
    .bind(wanted.trim_end_matches('/'))
    .fetch_all(store.pool())
    .await?;
    let stages: Vec<Stage> = rows
        .iter()
        .map(stage_from_row)
        .collect::<Result<Vec<_>, _>>()?
        .into_iter()
        .filter(|s| project_id.as_deref().is_none_or(|p| s.project_id == p))
        .collect();
    match stages.as_slice() {
        [] => bail!("no stage {wanted:?} (give its id, branch or URL)"),
        [one] => Ok(one.clone()),
        _ => bail!("several stages match {wanted:?}: name the project with --project"),
    }
}

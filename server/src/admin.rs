//! Admin commands on the store (`redline project add`, `stage add`, `token create`,
//! `token list`, `token revoke`).
//! They return records that the CLI prints as JSON or as a readable line.

use anyhow::{Context, bail};
use redline_protocol::{ChangeEventType, DEFAULT_GRACE_SECONDS, Scope, Stage, StageType, Timestamp};
use serde::Serialize;
use sqlx::Row;

use crate::auth::{generate_token, hash_token, stored_scopes};
use crate::filter::{Bind, Filter};
use crate::store::event_log;
use crate::store::rows::{opt_ts, stage_from_row};
use crate::store::{Store, new_id};

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Project {
    pub project_id: String,
    pub name: String,
    pub grace_seconds: i64,
    pub created_at: Timestamp,
}

/// `token create` output; `token` is the secret, shown once.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CreatedToken {
    pub token: String,
    pub token_id: String,
    pub project_id: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub expires_at: Option<Timestamp>,
}

/// A token as `token list` and `token revoke` show it: never its secret, which is not
/// stored.
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TokenInfo {
    pub token_id: String,
    pub project: String,
    pub name: String,
    pub scopes: Vec<Scope>,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
}

pub async fn add_project(
    store: &Store,
    name: &str,
    grace_seconds: Option<i64>,
    now: Timestamp,
) -> anyhow::Result<Project> {
    let name = name.trim();
    if name.is_empty() {
        bail!("a project needs a name");
    }
    let grace_seconds = grace_seconds.unwrap_or(DEFAULT_GRACE_SECONDS);
    if grace_seconds < 0 {
        bail!("--grace-seconds must not be negative");
    }
    if find_project(store, name).await?.is_some() {
        bail!("a project named {name:?} already exists");
    }
    let project = Project { project_id: new_id(), name: name.to_owned(), grace_seconds, created_at: now };
    sqlx::query("INSERT INTO projects (project_id, name, grace_seconds, created_at) VALUES ($1, $2, $3, $4)")
        .bind(&project.project_id)
        .bind(&project.name)
        .bind(project.grace_seconds)
        .bind(now.unix_millis())
        .execute(store.pool())
        .await?;
    Ok(project)
}

/// A project by id or by name.
pub async fn find_project(store: &Store, id_or_name: &str) -> anyhow::Result<Option<Project>> {
    let row = sqlx::query(
        "SELECT project_id, name, grace_seconds, created_at FROM projects WHERE project_id = $1 OR name = $1",
    )
    .bind(id_or_name)
    .fetch_optional(store.pool())
    .await?;
    row.map(|r| {
        Ok(Project {
            project_id: r.try_get("project_id")?,
            name: r.try_get("name")?,
            grace_seconds: r.try_get("grace_seconds")?,
            created_at: Timestamp::from_unix_millis(r.try_get("created_at")?),
        })
    })
    .transpose()
}

pub(crate) async fn project(store: &Store, id_or_name: &str) -> anyhow::Result<Project> {
    find_project(store, id_or_name).await?.with_context(|| format!("no project {id_or_name:?}"))
}

pub struct StageSpec<'a> {
    pub project: &'a str,
    pub branch: &'a str,
    pub url: &'a str,
    pub stage_type: Option<StageType>,
    pub git_sha: Option<&'a str>,
    /// Whether people may file items on the stage; a new stage allows it.
    pub changes_enabled: Option<bool>,
}

/// Adds a stage, or updates the stage of that branch (its url, type and, if given, its
/// gitSha — a deploy — and whether changes may be filed on it). "Production maps to
/// branch `main`": the type defaults to production for `main` and preview otherwise.
/// A new gitSha marks done items whose `headCommit` it is as `live`.
pub async fn add_stage(store: &Store, spec: StageSpec<'_>, now: Timestamp) -> anyhow::Result<Stage> {
    let project = project(store, spec.project).await?;
    let branch = spec.branch.trim();
    if branch.is_empty() {
        bail!("a stage needs a branch");
    }
    let is_main = branch == "main";
    let stage_type =
        spec.stage_type.unwrap_or(if is_main { StageType::Production } else { StageType::Preview });
    if (stage_type == StageType::Production) != is_main {
        bail!("production maps to branch main (and only main is production)");
    }
    let url = spec.url.trim();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        bail!("--url must be an http(s) URL");
    }
    // Compared with items' `headCommit`s, which are such ids.
    let git_sha = match spec.git_sha {
        Some(sha) => Some(
            redline_protocol::commit_sha(sha)
                .with_context(|| format!("--sha {sha:?} is not a commit id (7 to 40 hex digits)"))?,
        ),
        None => None,
    };
    let mut tx = store.write(&project.project_id).await?.context("the project vanished")?;
    let existing: Option<String> =
        sqlx::query("SELECT stage_id FROM stages WHERE project_id = $1 AND branch = $2")
            .bind(&project.project_id)
            .bind(branch)
            .fetch_optional(&mut *tx)
            .await?
            .map(|r| r.try_get("stage_id"))
            .transpose()?;
    let stage_id = match existing {
        Some(stage_id) => {
            sqlx::query(
                "UPDATE stages SET stage_type = $2, url = $3, git_sha = COALESCE($4, git_sha), \
                 changes_enabled = COALESCE($5, changes_enabled) WHERE stage_id = $1",
            )
            .bind(&stage_id)
            .bind(stage_type.as_str())
            .bind(url)
            .bind(git_sha.as_deref())
            .bind(spec.changes_enabled.map(i64::from))
            .execute(&mut *tx)
            .await?;
            stage_id
        }
        None => {
            let stage_id = new_id();
            sqlx::query(
                "INSERT INTO stages (stage_id, project_id, branch, stage_type, url, git_sha, created_at, \
                 changes_enabled) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
            )
            .bind(&stage_id)
            .bind(&project.project_id)
            .bind(branch)
            .bind(stage_type.as_str())
            .bind(url)
            .bind(git_sha.as_deref())
            .bind(now.unix_millis())
            .bind(i64::from(spec.changes_enabled.unwrap_or(true)))
            .execute(&mut *tx)
            .await?;
            stage_id
        }
    };
    if let Some(sha) = &git_sha {
        // Each item that turns live gets a `status` event, as with `stage deploy`.
        let turned = sqlx::query(
            "UPDATE changes SET live = 1 WHERE stage_id = $1 AND head_commit = $2 \
             AND (live IS NULL OR live <> 1) RETURNING change_id, short_id",
        )
        .bind(&stage_id)
        .bind(sha)
        .fetch_all(&mut *tx)
        .await?;
        let keys = turned.iter().map(event_log::ChangeKey::from_row).collect::<Result<Vec<_>, _>>()?;
        let (backend, status) = (store.backend(), ChangeEventType::Status);
        event_log::record_all(&mut tx, backend, &project.project_id, status, &keys, now).await?;
    }
    let row = sqlx::query(crate::store::rows::STAGE_SELECT_BY_ID).bind(&stage_id).fetch_one(&mut *tx).await?;
    let stage = stage_from_row(&row)?;
    tx.commit().await?;
    Ok(stage)
}

/// Creates a token for the person `name` (created on first use) on `project`.
pub async fn create_token(
    store: &Store,
    project: &str,
    scopes: &[Scope],
    name: &str,
    expires_at: Option<Timestamp>,
    now: Timestamp,
) -> anyhow::Result<CreatedToken> {
    let project = self::project(store, project).await?;
    let name = name.trim();
    if name.is_empty() {
        bail!("a token needs the name of its person (--name)");
    }
    if scopes.is_empty() {
        bail!("a token needs at least one scope");
    }
    if expires_at.is_some_and(|end| end <= now) {
        bail!("a token's expiry must be in the future");
    }
    let mut tx = store.begin_write().await?;
    let user_id: Option<String> = sqlx::query("SELECT user_id FROM users WHERE name = $1")
        .bind(name)
        .fetch_optional(&mut *tx)
        .await?
        .map(|r| r.try_get("user_id"))
        .transpose()?;
    let user_id = match user_id {
        Some(id) => id,
        None => {
            let id = new_id();
            sqlx::query("INSERT INTO users (user_id, name, created_at) VALUES ($1, $2, $3)")
                .bind(&id)
                .bind(name)
                .bind(now.unix_millis())
                .execute(&mut *tx)
                .await?;
            id
        }
    };
    let token = generate_token();
    let token_id = new_id();
    let scope_names: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
    sqlx::query(
        "INSERT INTO tokens (token_id, token_hash, project_id, user_id, scopes, created_at, expires_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&token_id)
    .bind(hash_token(&token))
    .bind(&project.project_id)
    .bind(&user_id)
    .bind(scope_names.join(" "))
    .bind(now.unix_millis())
    .bind(expires_at.map(Timestamp::unix_millis))
    .execute(&mut *tx)
    .await?;
    tx.commit().await?;
    Ok(CreatedToken {
        token,
        token_id,
        project_id: project.project_id,
        name: name.to_owned(),
        scopes: scopes.to_vec(),
        expires_at,
    })
}

const TOKEN_INFO_SELECT: &str = "SELECT t.token_id, p.name AS project, u.name, t.scopes, t.created_at, \
     t.expires_at, t.revoked_at \
     FROM tokens t JOIN projects p ON p.project_id = t.project_id JOIN users u ON u.user_id = t.user_id";

fn token_info(row: &sqlx::any::AnyRow) -> Result<TokenInfo, sqlx::Error> {
    Ok(TokenInfo {
        token_id: row.try_get("token_id")?,
        project: row.try_get("project")?,
        name: row.try_get("name")?,
        scopes: stored_scopes(&row.try_get::<String, _>("scopes")?),
        created_at: Timestamp::from_unix_millis(row.try_get("created_at")?),
        expires_at: opt_ts(row, "expires_at")?,
        revoked_at: opt_ts(row, "revoked_at")?,
    })
}

/// Every token (of `project`, if given), oldest first.
pub async fn list_tokens(store: &Store, project: Option<&str>) -> anyhow::Result<Vec<TokenInfo>> {
    let mut select = Filter::new(format!("{TOKEN_INFO_SELECT} WHERE 1 = 1"));
    if let Some(project) = project {
        let project = self::project(store, project).await?;
        select.and("t.project_id = ?", [Bind::Text(project.project_id)]);
    }
    select.push(" ORDER BY t.created_at, t.token_id", []);
    let mut conn = store.pool().acquire().await?;
    Ok(select.fetch(&mut conn).await?.iter().map(token_info).collect::<Result<_, _>>()?)
}

/// Revokes the token named by its id (from `token list`) or by its secret. A server
/// refuses it from at most [`crate::auth::CHECK_REUSE_MS`] later. Revoking a revoked
/// token changes nothing (its `revokedAt` stays the first one).
pub async fn revoke_token(store: &Store, id_or_secret: &str, now: Timestamp) -> anyhow::Result<TokenInfo> {
    let id_or_secret = id_or_secret.trim();
    let (column, key) = match id_or_secret.starts_with("rl_") {
        true => ("token_hash", hash_token(id_or_secret)),
        false => ("token_id", id_or_secret.to_ascii_lowercase()),
    };
    sqlx::query(sqlx::AssertSqlSafe(format!(
        "UPDATE tokens SET revoked_at = $2 WHERE {column} = $1 AND revoked_at IS NULL"
    )))
    .bind(&key)
    .bind(now.unix_millis())
    .execute(store.pool())
    .await?;
    let row = sqlx::query(sqlx::AssertSqlSafe(format!("{TOKEN_INFO_SELECT} WHERE t.{column} = $1")))
        .bind(&key)
        .fetch_optional(store.pool())
        .await?;
    match row {
        Some(row) => Ok(token_info(&row)?),
        // Never echo what was given: it may be a secret.
        None => bail!("no token has this id or secret (see `redline token list`)"),
    }
}

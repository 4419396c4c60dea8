//! Mapping stored rows to the protocol's records. Instants are stored as epoch
//! milliseconds, flags as 0/1 and structured values as JSON text (see 0001_init.sql).

use std::collections::HashMap;

use redline_protocol::{
    Attachment, AuthorKind, Change, ChangeStatus, Group, Message, Source, Stage, StageType, Timestamp,
    is_held,
};
use serde::de::DeserializeOwned;
use sqlx::any::AnyRow;
use sqlx::{AnyPool, Row};

use crate::filter::{Bind, Filter, placeholders};

macro_rules! stage_columns {
    () => {
        "stage_id, project_id, branch, stage_type, url, git_sha, deployment_id, changes_enabled, created_at"
    };
}
pub const STAGE_COLUMNS: &str = stage_columns!();
pub const STAGE_SELECT_BY_ID: &str = concat!("SELECT ", stage_columns!(), " FROM stages WHERE stage_id = $1");

/// The columns of a change, each prefixed with `$p` (the table's alias, or nothing).
macro_rules! change_columns {
    ($p:literal) => {
        change_columns!($p; "change_id", "project_id", "short_id", "stage_id", "group_id", "title", "body",
            "status", "route", "git_sha", "deployment_id", "locale", "viewport", "screenshot_key",
            "source", "filed_by", "branch", "head_commit", "resolved_at", "live", "created_at",
            "held_until")
    };
    ($p:literal; $first:literal $(, $column:literal)*) => {
        concat!($p, $first $(, ", ", $p, $column)*)
    };
}
/// The columns of a change with what was captured at filing, for statements that name
/// the table `changes c` and join [`CAPTURED_JOIN`].
pub const CHANGE_COLUMNS: &str = concat!(change_columns!("c."), ", k.capture, k.console_errors");
pub const CAPTURED_JOIN: &str = "LEFT JOIN change_captures k ON k.change_id = c.change_id";
/// The columns of a change for `RETURNING`, which takes no table alias on SQLite and
/// no join: the write's answer adds what was captured with [`Captured::of_rows`].
pub const CHANGE_RETURNING: &str = change_columns!("");

pub const GROUP_COLUMNS: &str =
    "group_id, project_id, title, claimed_by, claim_expires_at, fence, created_at";

pub const MESSAGE_COLUMNS: &str =
    "message_id, change_id, author_kind, author_name, body, attachments, chosen_option, created_at";

fn decode_err(what: &str, value: &str) -> sqlx::Error {
    sqlx::Error::Decode(format!("stored {what} {value:?} is not valid").into())
}

fn ts(row: &AnyRow, col: &str) -> Result<Timestamp, sqlx::Error> {
    Ok(Timestamp::from_unix_millis(row.try_get(col)?))
}

pub fn opt_ts(row: &AnyRow, col: &str) -> Result<Option<Timestamp>, sqlx::Error> {
    Ok(row.try_get::<Option<i64>, _>(col)?.map(Timestamp::from_unix_millis))
}

fn parse_json<T: DeserializeOwned>(text: &str) -> Result<T, sqlx::Error> {
    serde_json::from_str(text).map_err(|e| sqlx::Error::Decode(Box::new(e)))
}

fn json<T: DeserializeOwned>(row: &AnyRow, col: &str) -> Result<T, sqlx::Error> {
    parse_json(&row.try_get::<String, _>(col)?)
}

fn opt_json<T: DeserializeOwned>(row: &AnyRow, col: &str) -> Result<Option<T>, sqlx::Error> {
    row.try_get::<Option<String>, _>(col)?.as_deref().map(parse_json).transpose()
}

/// JSON text of a value that is always serialisable (plain data).
pub fn to_json<T: serde::Serialize>(value: &T) -> String {
    serde_json::to_string(value).expect("protocol records serialise")
}

pub fn status_of(row: &AnyRow) -> Result<ChangeStatus, sqlx::Error> {
    let s: String = row.try_get("status")?;
    ChangeStatus::from_wire(&s).ok_or_else(|| decode_err("status", &s))
}

pub fn stage_from_row(row: &AnyRow) -> Result<Stage, sqlx::Error> {
    let stage_type: String = row.try_get("stage_type")?;
    Ok(Stage {
        stage_id: row.try_get("stage_id")?,
        project_id: row.try_get("project_id")?,
        branch: row.try_get("branch")?,
        stage_type: StageType::from_wire(&stage_type).ok_or_else(|| decode_err("stage type", &stage_type))?,
        url: row.try_get("url")?,
        git_sha: row.try_get("git_sha")?,
        deployment_id: row.try_get("deployment_id")?,
        changes_enabled: row.try_get::<i64, _>("changes_enabled")? != 0,
        created_at: ts(row, "created_at")?,
    })
}

/// What the page gave at filing, as stored apart from the item (JSON text, see
/// 0004_change_captures.sql). It never changes, so it may be read after the write that
/// returned the item has committed.
#[derive(Debug, Default)]
pub struct Captured {
    capture: Option<String>,
    console_errors: Option<String>,
}

impl Captured {
    /// Read from a row selected with [`CHANGE_COLUMNS`].
    pub fn from_row(row: &AnyRow) -> Result<Captured, sqlx::Error> {
        Ok(Captured { capture: row.try_get("capture")?, console_errors: row.try_get("console_errors")? })
    }

    /// What was captured of the item of each of `rows` (rows with `change_id`, e.g. a
    /// write's `RETURNING` [`CHANGE_RETURNING`]), in their order, read in one statement
    /// (none for no rows).
    pub async fn of_rows<'r>(
        pool: &AnyPool,
        rows: impl IntoIterator<Item = &'r AnyRow>,
    ) -> Result<Vec<Captured>, sqlx::Error> {
        let ids = rows.into_iter().map(|row| row.try_get("change_id")).collect::<Result<Vec<String>, _>>()?;
        if ids.is_empty() {
            return Ok(Vec::new());
        }
        let mut select =
            Filter::new("SELECT change_id, capture, console_errors FROM change_captures".to_owned());
        select.push(
            &format!(" WHERE change_id IN ({})", placeholders(ids.len())),
            ids.iter().map(|id| Bind::Text(id.clone())),
        );
        let mut conn = pool.acquire().await?;
        let mut captured = select
            .fetch(&mut conn)
            .await?
            .iter()
            .map(|row| Ok((row.try_get("change_id")?, Captured::from_row(row)?)))
            .collect::<Result<HashMap<String, Captured>, sqlx::Error>>()?;
        Ok(ids.iter().map(|id| captured.remove(id).unwrap_or_default()).collect())
    }
}

/// A change selected with [`CHANGE_COLUMNS`]; see [`change_from_parts`].
pub fn change_from_row(row: &AnyRow, now: Timestamp) -> Result<Change, sqlx::Error> {
    change_from_parts(row, &Captured::from_row(row)?, now)
}

/// A change from its row and what was captured; `held` is computed against `now`,
/// `screenshotUrl` is left for the read path to sign.
pub fn change_from_parts(row: &AnyRow, captured: &Captured, now: Timestamp) -> Result<Change, sqlx::Error> {
    let source: String = row.try_get("source")?;
    let held_until = opt_ts(row, "held_until")?;
    Ok(Change {
        change_id: row.try_get("change_id")?,
        short_id: row.try_get::<i64, _>("short_id")?.to_string(),
        project_id: row.try_get("project_id")?,
        stage_id: row.try_get("stage_id")?,
        group_id: row.try_get("group_id")?,
        title: row.try_get("title")?,
        body: row.try_get("body")?,
        status: status_of(row)?,
        route: row.try_get("route")?,
        git_sha: row.try_get("git_sha")?,
        deployment_id: row.try_get("deployment_id")?,
        locale: row.try_get("locale")?,
        viewport: opt_json(row, "viewport")?,
        capture: captured.capture.as_deref().map(parse_json).transpose()?,
        screenshot_key: row.try_get("screenshot_key")?,
        console_errors: captured.console_errors.as_deref().map(parse_json).transpose()?.unwrap_or_default(),
        source: Source::from_wire(&source).ok_or_else(|| decode_err("source", &source))?,
        filed_by: row.try_get("filed_by")?,
        branch: row.try_get("branch")?,
        head_commit: row.try_get("head_commit")?,
        resolved_at: opt_ts(row, "resolved_at")?,
        live: row.try_get::<Option<i64>, _>("live")?.map(|v| v != 0),
        created_at: ts(row, "created_at")?,
        held: is_held(held_until, now),
        held_until,
        screenshot_url: None,
    })
}

pub fn group_from_row(row: &AnyRow) -> Result<Group, sqlx::Error> {
    let fence: i64 = row.try_get("fence")?;
    Ok(Group {
        group_id: row.try_get("group_id")?,
        project_id: row.try_get("project_id")?,
        title: row.try_get("title")?,
        claimed_by: row.try_get("claimed_by")?,
        claim_expires_at: opt_ts(row, "claim_expires_at")?,
        created_at: ts(row, "created_at")?,
        fence: u64::try_from(fence).map_err(|_| decode_err("fence", &fence.to_string()))?,
    })
}

/// A message as stored; attachment `url`s are left for the read path to sign.
pub fn message_from_row(row: &AnyRow) -> Result<Message, sqlx::Error> {
    let kind: String = row.try_get("author_kind")?;
    let attachments: Vec<Attachment> = json(row, "attachments")?;
    Ok(Message {
        message_id: row.try_get("message_id")?,
        change_id: row.try_get("change_id")?,
        author_kind: AuthorKind::from_wire(&kind).ok_or_else(|| decode_err("author kind", &kind))?,
        author_name: row.try_get("author_name")?,
        body: row.try_get("body")?,
        attachments,
        chosen_option: row.try_get("chosen_option")?,
        created_at: ts(row, "created_at")?,
    })
}

//! Mapping stored rows to the protocol's records. Instants are stored as epoch
//! milliseconds, flags as 0/1 and structured values as JSON text (see 0001_init.sql).

use redline_protocol::{
    Attachment, AuthorKind, Change, ChangeStatus, Group, Message, MessageType, Source, Stage, StageType,
    Timestamp, is_held,
};
use serde::de::DeserializeOwned;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::store::captured::Captured;
pub use crate::store::captured::StoredCapture;

macro_rules! stage_columns {
    () => {
        "stage_id, project_id, branch, stage_type, url, git_sha, deployment_id, changes_enabled, created_at"
    };
}
pub const STAGE_COLUMNS: &str = stage_columns!();
pub const STAGE_SELECT_BY_ID: &str = concat!("SELECT ", stage_columns!(), " FROM stages WHERE stage_id = $1");

/// The columns of a change a summary shows (all but the body), each prefixed with `$p`
/// (the table's alias, or nothing).
macro_rules! summary_columns {
    ($p:literal) => {
        summary_columns!($p; "change_id", "project_id", "short_id", "stage_id", "group_id", "title",
            "status", "route", "git_sha", "deployment_id", "locale", "viewport", "screenshot_key",
            "source", "filed_by", "branch", "head_commit", "resolved_at", "live", "created_at",
            "verified_at", "verified_by", "completed_by", "commit_url", "pull_request_url",
            "element_count", "console_error_count")
    };
    ($p:literal; $first:literal $(, $column:literal)*) => {
        concat!($p, $first $(, ", ", $p, $column)*)
    };
}

/// The columns of a change, each prefixed with `$p`.
macro_rules! change_columns {
    ($p:literal) => {
        concat!(summary_columns!($p), ", ", $p, "body")
    };
}
/// The columns of a change with its hold's end and what was captured at filing, for
/// statements that name the table `changes c` and join [`HOLD_JOIN`] and
/// [`CAPTURED_JOIN`].
pub const CHANGE_COLUMNS: &str =
    concat!(change_columns!("c."), ", h.held_until, k.capture, k.console_errors");
pub const CAPTURED_JOIN: &str = "LEFT JOIN change_captures k ON k.change_id = c.change_id";
/// An item's `heldUntil` is its hold's (see 0012_holds.sql): the hold of its filer's
/// batch on the stage, which each filing of the batch extends.
pub const HOLD_JOIN: &str = "LEFT JOIN holds h ON h.hold_id = c.hold_id";
/// The columns of a list's summary of a change (docs/protocol-additions.md, "Lists are
/// summaries"), for statements that name the table `changes c` and join [`HOLD_JOIN`]:
/// no body, capture or console errors (a capture runs to megabytes), their counts
/// instead, the messages counted on their index.
pub const SUMMARY_COLUMNS: &str = concat!(
    summary_columns!("c."),
    ", h.held_until, (SELECT COUNT(*) FROM messages m WHERE m.change_id = c.change_id) AS message_count"
);
/// [`SUMMARY_COLUMNS`] for `RETURNING`, which takes no table alias on SQLite and no
/// join (the hold's end and the count are subqueries); also for a `SELECT … FROM changes`.
pub const SUMMARY_RETURNING: &str = concat!(
    summary_columns!(""),
    ", (SELECT held_until FROM holds WHERE holds.hold_id = changes.hold_id) AS held_until",
    ", (SELECT COUNT(*) FROM messages WHERE messages.change_id = changes.change_id) AS message_count"
);

pub const GROUP_COLUMNS: &str =
    "group_id, project_id, title, claimed_by, claim_expires_at, fence, created_at";

pub const MESSAGE_COLUMNS: &str = "message_id, change_id, author_kind, author_name, body, attachments, chosen_option, created_at, message_type";

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

/// A change as the server holds it: the capture is the JSON text stored at filing,
/// which answers pass through as it is (a 7 KB capture cost a parse and a
/// serialisation per answer, ≈ 25 µs, on the way from a claim's commit to its answer).
pub type StoredChange = Change<StoredCapture>;

/// A change selected with [`CHANGE_COLUMNS`]; see [`change_from_parts`].
pub fn change_from_row(row: &AnyRow, now: Timestamp) -> Result<StoredChange, sqlx::Error> {
    change_from_parts(row, Captured::from_row(row)?, now)
}

/// A change from its row and what was captured; `held` is computed against `now`,
/// `screenshotUrl` is left for the read path to sign.
pub fn change_from_parts(
    row: &AnyRow,
    captured: Captured,
    now: Timestamp,
) -> Result<StoredChange, sqlx::Error> {
    let mut change = record(row, now)?;
    change.body = row.try_get("body")?;
    change.capture = captured.capture;
    change.console_errors =
        captured.console_errors.as_deref().map(parse_json).transpose()?.unwrap_or_default();
    Ok(change)
}

/// A change selected with [`SUMMARY_COLUMNS`] (or [`SUMMARY_RETURNING`]): no body,
/// capture or console errors, and how many elements, console errors and messages it has.
pub fn summary_from_row(row: &AnyRow, now: Timestamp) -> Result<StoredChange, sqlx::Error> {
    let count = |column: &str| -> Result<Option<u32>, sqlx::Error> {
        let n: i64 = row.try_get(column)?;
        Ok(Some(u32::try_from(n).map_err(|_| decode_err(column, &n.to_string()))?))
    };
    let mut change = record(row, now)?;
    change.element_count = count("element_count")?;
    change.console_error_count = count("console_error_count")?;
    change.message_count = count("message_count")?;
    Ok(change)
}

/// The columns both a change and its summary have.
fn record(row: &AnyRow, now: Timestamp) -> Result<StoredChange, sqlx::Error> {
    let source: String = row.try_get("source")?;
    let held_until = opt_ts(row, "held_until")?;
    Ok(Change {
        change_id: row.try_get("change_id")?,
        short_id: row.try_get::<i64, _>("short_id")?.to_string(),
        project_id: row.try_get("project_id")?,
        stage_id: row.try_get("stage_id")?,
        group_id: row.try_get("group_id")?,
        title: row.try_get("title")?,
        body: None,
        status: status_of(row)?,
        route: row.try_get("route")?,
        git_sha: row.try_get("git_sha")?,
        deployment_id: row.try_get("deployment_id")?,
        locale: row.try_get("locale")?,
        viewport: opt_json(row, "viewport")?,
        capture: None,
        screenshot_key: row.try_get("screenshot_key")?,
        console_errors: Vec::new(),
        source: Source::from_wire(&source).ok_or_else(|| decode_err("source", &source))?,
        filed_by: row.try_get("filed_by")?,
        branch: row.try_get("branch")?,
        head_commit: row.try_get("head_commit")?,
        resolved_at: opt_ts(row, "resolved_at")?,
        live: row.try_get::<Option<i64>, _>("live")?.map(|v| v != 0),
        verified_at: opt_ts(row, "verified_at")?,
        verified_by: row.try_get("verified_by")?,
        completed_by: row.try_get("completed_by")?,
        commit_url: row.try_get("commit_url")?,
        pull_request_url: row.try_get("pull_request_url")?,
        created_at: ts(row, "created_at")?,
        held: is_held(held_until, now),
        held_until,
        screenshot_url: None,
        element_count: None,
        console_error_count: None,
        message_count: None,
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
    let message_type: String = row.try_get("message_type")?;
    Ok(Message {
        message_id: row.try_get("message_id")?,
        change_id: row.try_get("change_id")?,
        author_kind: AuthorKind::from_wire(&kind).ok_or_else(|| decode_err("author kind", &kind))?,
        author_name: row.try_get("author_name")?,
        body: row.try_get("body")?,
        attachments,
        chosen_option: row.try_get("chosen_option")?,
        created_at: ts(row, "created_at")?,
        message_type: Some(
            MessageType::from_wire(&message_type).ok_or_else(|| decode_err("message type", &message_type))?,
        ),
    })
}

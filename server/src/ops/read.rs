//! Reading the queue: `listChanges` (pages of summaries), `getChange` (one item whole,
//! with a page of its thread) and `countChanges` (how many of each status, and what
//! waits for the caller). docs/protocol-additions.md, "Lists are summaries", has the
//! rules and each answer's largest size.

use std::collections::BTreeSet;

use redline_protocol::*;
use sqlx::Row;

use super::{Ctx, Op};
use crate::error::ApiError;
use crate::filter::{Bind, Filter, placeholders};
use crate::queue::{find_item, read_thread_page};
use crate::store::rows::{
    GROUP_COLUMNS, HOLD_JOIN, SUMMARY_COLUMNS, StoredCapture, StoredChange, group_from_row, status_of,
};

use super::claim::CLAIMABLE_SQL;

/// A cursor as the server makes them (`patterns::CURSOR`, at most 18 digits, so it fits
/// an `i64`): any such string is read, a number past the end simply reads nothing.
fn cursor(field: &str, given: &str) -> Result<i64, ApiError> {
    let digits =
        !given.is_empty() && given.len() <= CURSOR_MAX_CHARS && given.bytes().all(|b| b.is_ascii_digit());
    match given.parse() {
        Ok(n) if digits => Ok(n),
        _ => Err(ApiError::bad_input(field, "must be a cursor a previous answer gave (digits)")),
    }
}

/// The items `input` asks for, as `SELECT {columns} FROM changes c …` with its filters
/// (no cursor, order or limit). The hold `h` is joined where `columns` read it (`hold`)
/// or `pickupOnly` needs it, the group `g` only for `pickupOnly`.
fn matching(columns: &str, hold: bool, input: &ListChangesInput, now: Timestamp) -> Result<Filter, ApiError> {
    let mut from = format!("SELECT {columns} FROM changes c");
    if hold || input.pickup_only {
        from.push_str(&format!(" {HOLD_JOIN}"));
    }
    if input.pickup_only {
        from.push_str(" LEFT JOIN claim_groups g ON g.group_id = c.group_id");
    }
    let mut filter = Filter::new(format!("{from} WHERE 1 = 1"));
    filter.and("c.project_id = ?", [Bind::Text(input.project_id.clone())]);
    for (column, value) in
        [("stage_id", &input.stage_id), ("route", &input.route), ("group_id", &input.group_id)]
    {
        if let Some(value) = value {
            filter.and(&format!("c.{column} = ?"), [Bind::Text(value.clone())]);
        }
    }
    // An explicit status list is taken as asked; otherwise (or when empty) "`done`
    // and `dismissed` are hidden from lists unless `includeDone`".
    let asked = |s: &ChangeStatus| match &input.status {
        Some(list) if !list.is_empty() => list.contains(s),
        _ => input.include_done || !is_hidden_unless_include_done(*s),
    };
    // Written out in their order, not bound: the default set then reads exactly as index
    // `changes_listed` states it (0019_list_summaries.sql), which SQLite (and Postgres's
    // generic plans) need to use it.
    let statuses: Vec<String> =
        ChangeStatus::ALL.iter().filter(|s| asked(s)).map(|s| format!("'{}'", s.as_str())).collect();
    filter.and(&format!("c.status IN ({})", statuses.join(", ")), []);
    if let Some(refs) = &input.change_ids {
        let (condition, binds) = named(refs)?;
        filter.and(&condition, binds);
    }
    if input.pickup_only {
        let now = now.unix_millis();
        filter.and(CLAIMABLE_SQL, [Bind::Int(now), Bind::Int(now)]);
    }
    Ok(filter)
}

/// The condition for `changeIds` and its binds (the ids, then the short ids): the items
/// named by id or by short id (in the project, which the filter states); a name of no
/// item matches nothing.
fn named(refs: &[String]) -> Result<(String, Vec<Bind>), ApiError> {
    if refs.is_empty() || refs.len() > CLAIM_NAMES_MAX {
        return Err(ApiError::bad_input("changeIds", format!("must name 1 to {CLAIM_NAMES_MAX} items")));
    }
    let (mut ids, mut shorts) = (Vec::new(), Vec::new());
    for r in refs {
        match parse_change_ref(r) {
            Some(ChangeRef::Id(id)) => ids.push(Bind::Text(id)),
            // A short id past `i64` names no item.
            Some(ChangeRef::Short(n)) => shorts.push(Bind::Int(i64::try_from(n).unwrap_or(i64::MAX))),
            None => return Err(ApiError::bad_input("changeIds", "each must be a UUID, #7 or 7")),
        }
    }
    let mut any_of = Vec::new();
    if !ids.is_empty() {
        any_of.push(format!("c.change_id IN ({})", placeholders(ids.len())));
    }
    if !shorts.is_empty() {
        any_of.push(format!("c.short_id IN ({})", placeholders(shorts.len())));
    }
    Ok((format!("({})", any_of.join(" OR ")), ids.into_iter().chain(shorts).collect()))
}

impl Op for ListChanges {
    type Answer = ListChangesOutput<StoredCapture>;

    /// A page of summaries in `shortId` order, keyset-paged: a cursor is the last short
    /// id of the page before, so items filed between pages neither repeat nor shift one.
    async fn run(ctx: &Ctx<'_>, input: ListChangesInput) -> Result<Self::Answer, ApiError> {
        ctx.who.require_project(&input.project_id)?;
        let limit = list_limit(input.limit)?;
        let after = input.cursor.as_deref().map(|c| cursor("cursor", c)).transpose()?;
        let mut page = matching(SUMMARY_COLUMNS, true, &input, ctx.now)?;
        let (beyond, direction) = match input.order.unwrap_or_default() {
            ListOrder::Oldest => ("c.short_id > ?", "ASC"),
            ListOrder::Newest => ("c.short_id < ?", "DESC"),
        };
        if let Some(after) = after {
            page.and(beyond, [Bind::Int(after)]);
        }
        // One more than the page tells whether another follows.
        page.push(&format!(" ORDER BY c.short_id {direction} LIMIT {}", limit + 1), []);
        let total = matching("COUNT(*) AS total", false, &input, ctx.now)?;
        let mut conn = ctx.state.store.pool().acquire().await?;
        let mut rows = page.fetch(&mut conn).await?;
        let more = rows.len() > limit as usize;
        rows.truncate(limit as usize);
        let total: i64 = total.fetch(&mut conn).await?[0].try_get("total")?;
        let changes = ctx.present_summaries(&rows)?;
        let groups = groups_of(&mut conn, &changes).await?;
        let next_cursor = changes.last().filter(|_| more).map(|c| c.short_id.clone());
        Ok(ListChangesOutput { changes, groups, next_cursor, total: Some(total as u64) })
    }
}

async fn groups_of(conn: &mut sqlx::AnyConnection, changes: &[StoredChange]) -> Result<Vec<Group>, ApiError> {
    let ids: BTreeSet<&str> = changes.iter().filter_map(|c| c.group_id.as_deref()).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut filter = Filter::new(format!("SELECT {GROUP_COLUMNS} FROM claim_groups WHERE 1 = 1"));
    filter.and(
        &format!("group_id IN ({})", placeholders(ids.len())),
        ids.iter().map(|id| Bind::Text(id.to_string())),
    );
    filter.push(" ORDER BY created_at", []);
    Ok(filter.fetch(conn).await?.iter().map(group_from_row).collect::<Result<_, _>>()?)
}

impl Op for GetChange {
    type Answer = GetChangeOutput<StoredCapture>;

    /// The item whole, and a page of its thread: the latest `messageLimit` messages
    /// before `before`, oldest first. A cursor is a message's ordinal in the thread (the
    /// first is 0); a thread only grows at its end, so an ordinal always names the same
    /// message.
    async fn run(ctx: &Ctx<'_>, input: GetChangeInput) -> Result<Self::Answer, ApiError> {
        let project_id = ctx.project(input.project_id.as_deref())?;
        let limit = match input.message_limit {
            None => THREAD_PAGE_DEFAULT,
            Some(n @ 1..=THREAD_PAGE_MAX) => n,
            Some(_) => {
                return Err(ApiError::bad_input(
                    "messageLimit",
                    format!("must be between 1 and {THREAD_PAGE_MAX}"),
                ));
            }
        };
        let before = input.before.as_deref().map(|b| cursor("before", b)).transpose()?;
        let mut conn = ctx.state.store.pool().acquire().await?;
        let item = find_item(&mut conn, project_id, &input.change_id, ctx.now).await?;
        let change_id = &item.change.change_id;
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM messages WHERE change_id = $1")
            .bind(change_id)
            .fetch_one(&mut *conn)
            .await?;
        let end = before.map_or(count, |b| b.min(count));
        let start = (end - i64::from(limit)).max(0);
        let thread = read_thread_page(&mut conn, change_id, start, end - start).await?;
        let thread: Vec<Message> = thread.into_iter().map(|m| ctx.present_message(m)).collect();
        let stage_url: Option<String> = sqlx::query("SELECT url FROM stages WHERE stage_id = $1")
            .bind(&item.change.stage_id)
            .fetch_one(&mut *conn)
            .await?
            .try_get("url")?;
        let shown_message_ids = match input.claimed_by {
            Some(by) => {
                let page: Vec<&str> = thread.iter().map(|m| m.message_id.as_str()).collect();
                Some(shown_messages(&mut conn, change_id, by.trim(), Shown::Among(&page)).await?)
            }
            None => None,
        };
        let refind = super::refind::stored(&mut conn, change_id).await?;
        Ok(GetChangeOutput {
            change: ctx.present(item.change),
            thread,
            stage_url,
            shown_message_ids,
            older_cursor: (start > 0).then(|| start.to_string()),
            message_count: Some(count as u64),
            refind,
        })
    }
}

/// Which shown messages to answer: a thread page's, or the latest.
pub(super) enum Shown<'a> {
    Among(&'a [&'a str]),
    Latest(usize),
}

/// The messages of an item shown to `claimed_by` by its waits, in id order, bounded:
/// those of a page of the thread (`getChange`), or the latest `n` (by id, which is
/// time-ordered; `acknowledgeChangeMessages`).
pub(super) async fn shown_messages(
    conn: &mut sqlx::AnyConnection,
    change_id: &str,
    claimed_by: &str,
    which: Shown<'_>,
) -> Result<Vec<String>, ApiError> {
    let mut shown = Filter::new("SELECT message_id FROM shown_messages WHERE 1 = 1".to_owned());
    shown.and("change_id = ?", [Bind::Text(change_id.to_owned())]);
    shown.and("claimed_by = ?", [Bind::Text(claimed_by.to_owned())]);
    match which {
        Shown::Among([]) => return Ok(Vec::new()),
        Shown::Among(ids) => {
            shown.and(
                &format!("message_id IN ({})", placeholders(ids.len())),
                ids.iter().map(|id| Bind::Text((*id).to_owned())),
            );
            shown.push(" ORDER BY message_id", []);
        }
        Shown::Latest(n) => shown.push(&format!(" ORDER BY message_id DESC LIMIT {n}"), []),
    }
    let mut ids: Vec<String> =
        shown.fetch(conn).await?.iter().map(|r| r.try_get("message_id")).collect::<Result<_, _>>()?;
    ids.sort();
    Ok(ids)
}

/// What waits for its filer: a question (`needs_answer`), or a fix that is `done`, live
/// and not yet checked (the extension's `needs_my_answer` and `waits_for_check`).
/// Written exactly as index `changes_waiting` states it (0019_list_summaries.sql), which
/// SQLite needs to use it.
const WAITING_SQL: &str =
    "(status = 'needs_answer' OR (status = 'done' AND live = 1 AND verified_at IS NULL))";

impl Op for CountChanges {
    type Answer = CountChangesOutput;

    /// Counted in SQL on indexes: statuses on the project's, what is held from the holds
    /// still running, what waits for the caller on `changes_waiting`.
    async fn run(ctx: &Ctx<'_>, input: CountChangesInput) -> Result<Self::Answer, ApiError> {
        ctx.who.require_project(&input.project_id)?;
        let of = |select: &str| {
            let mut filter = Filter::new(format!("{select} WHERE 1 = 1"));
            filter.and("c.project_id = ?", [Bind::Text(input.project_id.clone())]);
            if let Some(stage_id) = &input.stage_id {
                filter.and("c.stage_id = ?", [Bind::Text(stage_id.clone())]);
            }
            filter
        };
        let mut by_status = of("SELECT c.status, COUNT(*) AS n FROM changes c");
        by_status.push(" GROUP BY c.status", []);
        let mut held = of("SELECT COUNT(*) AS n FROM holds h JOIN changes c ON c.hold_id = h.hold_id");
        held.and("h.held_until > ?", [Bind::Int(ctx.now.unix_millis())]);
        // The caller's items, and those whose filer is not known (as the extension has it).
        let mine = || [Bind::Text(ctx.who.user_name.clone())];
        let mut waiting = of("SELECT c.change_id, c.short_id, c.title, c.status FROM changes c");
        waiting.and(WAITING_SQL, []);
        waiting.and("(c.filed_by = ? OR c.filed_by IS NULL)", mine());
        waiting.push(&format!(" ORDER BY c.short_id DESC LIMIT {WAITING_MAX}"), []);
        let mut waiting_total = of("SELECT COUNT(*) AS n FROM changes c");
        waiting_total.and(WAITING_SQL, []);
        waiting_total.and("(c.filed_by = ? OR c.filed_by IS NULL)", mine());

        let mut conn = ctx.state.store.pool().acquire().await?;
        let mut counts = StatusCounts::default();
        for row in by_status.fetch(&mut conn).await? {
            let n = row.try_get::<i64, _>("n")? as u64;
            match status_of(&row)? {
                ChangeStatus::Open => counts.open = n,
                ChangeStatus::Claimed => counts.claimed = n,
                ChangeStatus::NeedsAnswer => counts.needs_answer = n,
                ChangeStatus::InProgress => counts.in_progress = n,
                ChangeStatus::Done => counts.done = n,
                ChangeStatus::Dismissed => counts.dismissed = n,
            }
        }
        let held: i64 = held.fetch(&mut conn).await?[0].try_get("n")?;
        let waiting = waiting
            .fetch(&mut conn)
            .await?
            .iter()
            .map(|row| {
                Ok(WaitingChange {
                    change_id: row.try_get("change_id")?,
                    short_id: row.try_get::<i64, _>("short_id")?.to_string(),
                    title: row.try_get("title")?,
                    reason: match status_of(row)? {
                        ChangeStatus::NeedsAnswer => WaitingReason::Question,
                        _ => WaitingReason::Check,
                    },
                })
            })
            .collect::<Result<_, sqlx::Error>>()?;
        let waiting_total: i64 = waiting_total.fetch(&mut conn).await?[0].try_get("n")?;
        Ok(CountChangesOutput {
            by_status: counts,
            held: held as u64,
            waiting,
            waiting_total: waiting_total as u64,
        })
    }
}

//! The agent's operations: reading the queue, claiming (with leases and fences), and
//! writing to an item's thread.

use std::collections::BTreeSet;

use redline_protocol::*;
use sqlx::Row;
use sqlx::any::AnyRow;

use crate::blobs::ImageInput;
use crate::db::new_id;
use crate::error::ApiError;
use crate::queue::{
    ChangeKey, Counter, Ctx, Item, ProjectWrite, check_lease, find_item, item_from_row, item_select,
    set_status,
};
use crate::rows::{CHANGE_RETURNING, GROUP_COLUMNS, MESSAGE_COLUMNS, group_from_row, message_from_row};
use crate::rpc::Op;

/// A value bound to a dynamically built statement.
enum Bind {
    Text(String),
    Int(i64),
}

/// A statement built from optional filters. Conditions are written with `?` and
/// numbered `$1, $2, …` as they are added: the one placeholder syntax both SQLite and
/// Postgres accept.
struct Filter {
    sql: String,
    binds: Vec<Bind>,
}

impl Filter {
    fn new(base: String) -> Self {
        Filter { sql: base, binds: Vec::new() }
    }

    /// Appends ` AND cond`, where each `?` in `cond` takes the next of `binds`.
    fn and(&mut self, cond: &str, binds: impl IntoIterator<Item = Bind>) {
        self.sql.push_str(" AND ");
        let mut binds = binds.into_iter();
        for part in cond.split_inclusive('?') {
            match part.strip_suffix('?') {
                Some(text) => {
                    self.binds.push(binds.next().expect("a bind per placeholder"));
                    self.sql.push_str(&format!("{text}${}", self.binds.len()));
                }
                None => self.sql.push_str(part),
            }
        }
    }

    async fn fetch(self, conn: &mut sqlx::AnyConnection) -> Result<Vec<sqlx::any::AnyRow>, sqlx::Error> {
        let mut query = sqlx::query(sqlx::AssertSqlSafe(self.sql));
        for b in self.binds {
            query = match b {
                Bind::Text(s) => query.bind(s),
                Bind::Int(i) => query.bind(i),
            };
        }
        query.fetch_all(conn).await
    }
}

fn placeholders(n: usize) -> String {
    vec!["?"; n].join(", ")
}

/// "Claimable … status `open` or `claimed`, not held, and no live lease", in SQL, for
/// choosing candidates; [`claim_block`] decides for each one.
const CLAIMABLE_SQL: &str = "c.status IN ('open', 'claimed') AND (c.held_until IS NULL OR c.held_until <= ?) \
     AND (g.claim_expires_at IS NULL OR g.claim_expires_at <= ?)";

async fn groups_of(conn: &mut sqlx::AnyConnection, changes: &[Change]) -> Result<Vec<Group>, ApiError> {
    let ids: BTreeSet<&str> = changes.iter().filter_map(|c| c.group_id.as_deref()).collect();
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    let mut filter = Filter::new(format!("SELECT {GROUP_COLUMNS} FROM claim_groups WHERE 1 = 1"));
    filter.and(
        &format!("group_id IN ({})", placeholders(ids.len())),
        ids.iter().map(|id| Bind::Text(id.to_string())),
    );
    filter.sql.push_str(" ORDER BY created_at");
    Ok(filter.fetch(conn).await?.iter().map(group_from_row).collect::<Result<_, _>>()?)
}

impl Op for ListChanges {
    async fn run(ctx: &Ctx<'_>, input: ListChangesInput) -> Result<ListChangesOutput, ApiError> {
        ctx.who.require_project(&input.project_id)?;
        let limit = list_limit(input.limit)?;
        let mut filter = Filter::new(format!("{} WHERE 1 = 1", item_select()));
        filter.and("c.project_id = ?", [Bind::Text(input.project_id)]);
        if let Some(stage_id) = input.stage_id {
            filter.and("c.stage_id = ?", [Bind::Text(stage_id)]);
        }
        if let Some(route) = input.route {
            filter.and("c.route = ?", [Bind::Text(route)]);
        }
        if let Some(group_id) = input.group_id {
            filter.and("c.group_id = ?", [Bind::Text(group_id)]);
        }
        // An explicit status list is taken as asked; otherwise (or when empty) "`done`
        // and `dismissed` are hidden from lists unless `includeDone`".
        let statuses: Vec<ChangeStatus> = match input.status {
            Some(list) if !list.is_empty() => list,
            _ => ChangeStatus::ALL
                .into_iter()
                .filter(|s| input.include_done || !is_hidden_unless_include_done(*s))
                .collect(),
        };
        filter.and(
            &format!("c.status IN ({})", placeholders(statuses.len())),
            statuses.iter().map(|s| Bind::Text(s.as_str().to_owned())),
        );
        if input.pickup_only {
            let now = ctx.now.unix_millis();
            filter.and(CLAIMABLE_SQL, [Bind::Int(now), Bind::Int(now)]);
        }
        filter.sql.push_str(&format!(" ORDER BY c.short_id LIMIT {limit}"));
        let mut conn = ctx.state.store.pool().acquire().await?;
        let rows = filter.fetch(&mut conn).await?;
        let changes: Vec<Change> = rows
            .iter()
            .map(|r| item_from_row(r, ctx.now).map(|i| ctx.present(i.change)))
            .collect::<Result<_, _>>()?;
        let groups = groups_of(&mut conn, &changes).await?;
        Ok(ListChangesOutput { changes, groups })
    }
}

impl Op for GetChange {
    async fn run(ctx: &Ctx<'_>, input: GetChangeInput) -> Result<GetChangeOutput, ApiError> {
        let project_id = ctx.project(input.project_id.as_deref())?;
        let mut conn = ctx.state.store.pool().acquire().await?;
        let item = find_item(&mut conn, project_id, &input.change_id, ctx.now).await?;
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {MESSAGE_COLUMNS} FROM messages WHERE change_id = $1 ORDER BY seq"
        )))
        .bind(&item.change.change_id)
        .fetch_all(&mut *conn)
        .await?;
        let thread = rows
            .iter()
            .map(|r| message_from_row(r).map(|m| ctx.present_message(m)))
            .collect::<Result<_, _>>()?;
        let stage_url: Option<String> = sqlx::query("SELECT url FROM stages WHERE stage_id = $1")
            .bind(&item.change.stage_id)
            .fetch_one(&mut *conn)
            .await?
            .try_get("url")?;
        Ok(GetChangeOutput { change: ctx.present(item.change), thread, stage_url })
    }
}

impl Op for ClaimChanges {
    /// A claim of named items takes the claimable ones as one new group (with a fresh
    /// fence); no `changeIds` takes every claimable item, at most 50; a `groupId` held
    /// by the same `claimedBy` renews its lease. Nothing claimable: 409 `not_claimable`
    /// with the reason for each named item.
    async fn run(ctx: &Ctx<'_>, input: ClaimChangesInput) -> Result<ClaimChangesOutput, ApiError> {
        ctx.who.require_project(&input.project_id)?;
        let claimed_by = input.claimed_by.trim();
        if claimed_by.is_empty() {
            return Err(ApiError::bad_input("claimedBy", "must not be empty"));
        }
        let lease_end = ctx.now.plus_minutes(i64::from(lease_minutes(input.lease_minutes)?));
        if let Some(title) = &input.title {
            validate_title("title", title)?;
        }
        let mut w = ProjectWrite::begin(ctx).await?;
        let out = match (input.group_id, input.change_ids) {
            (Some(_), Some(_)) => {
                return Err(ApiError::bad_input(
                    "changeIds",
                    "give groupId (to renew) or changeIds (to claim), not both",
                ));
            }
            (Some(group_id), None) => renew(&mut w, &group_id, claimed_by, lease_end).await?,
            (None, change_ids) => {
                let (items, mut blocked) = candidates(&mut w, change_ids).await?;
                let mut take = Vec::new();
                for item in items {
                    let lease = item.lease.as_ref().map(|l| l.view());
                    match claim_block(item.change.status, item.change.held_until, lease, ctx.now) {
                        None => take.push(item),
                        Some(b) => blocked.push(NotClaimableItem {
                            change_id: item.change.change_id,
                            short_id: Some(item.change.short_id),
                            reason: b.reason,
                            claimable_at: b.claimable_at,
                            claimed_by: b.claimed_by,
                        }),
                    }
                }
                if take.is_empty() {
                    return Err(ApiError::not_claimable(blocked));
                }
                claim(&mut w, take, input.title, claimed_by, lease_end).await?
            }
        };
        w.commit().await?;
        let (group, rows) = out;
        Ok(ClaimChangesOutput { group, changes: ctx.present_rows(&rows)? })
    }
}

/// The items a claim considers, and `not_found` entries for named items that are not
/// in the project. Without names: the claimable items, oldest first, at most 50.
async fn candidates(
    w: &mut ProjectWrite<'_>,
    change_ids: Option<Vec<String>>,
) -> Result<(Vec<Item>, Vec<NotClaimableItem>), ApiError> {
    let now = w.now();
    let Some(names) = change_ids else {
        let mut filter = Filter::new(format!("{} WHERE 1 = 1", item_select()));
        filter.and("c.project_id = ?", [Bind::Text(w.project_id().to_owned())]);
        filter.and(CLAIMABLE_SQL, [Bind::Int(now.unix_millis()), Bind::Int(now.unix_millis())]);
        filter.sql.push_str(&format!(" ORDER BY c.short_id LIMIT {CLAIM_ALL_MAX}"));
        let rows = filter.fetch(w.conn()).await?;
        let items = rows.iter().map(|r| item_from_row(r, now)).collect::<Result<_, _>>()?;
        return Ok((items, Vec::new()));
    };
    if names.is_empty() || names.len() > LIST_LIMIT_MAX as usize {
        return Err(ApiError::bad_input(
            "changeIds",
            format!("must name 1 to {LIST_LIMIT_MAX} items (or be left out to take any)"),
        ));
    }
    let (mut items, mut missing) = (Vec::<Item>::new(), Vec::new());
    for name in names {
        match w.item(&name).await {
            Ok(item) if !items.iter().any(|i| i.change.change_id == item.change.change_id) => {
                items.push(item)
            }
            Ok(_) => {}
            Err(e) if e.status() == 404 => missing.push(NotClaimableItem {
                change_id: name.clone(),
                short_id: match parse_change_ref(&name) {
                    Some(ChangeRef::Short(n)) => Some(n.to_string()),
                    _ => None,
                },
                reason: NotClaimableReason::NotFound,
                claimable_at: None,
                claimed_by: None,
            }),
            Err(e) => return Err(e),
        }
    }
    Ok((items, missing))
}

/// Takes `items` as a new group with the project's next fence.
async fn claim(
    w: &mut ProjectWrite<'_>,
    items: Vec<Item>,
    title: Option<String>,
    claimed_by: &str,
    lease_end: Timestamp,
) -> Result<(Group, Vec<AnyRow>), ApiError> {
    let (seq, fence) = w.reserve_events_and(items.len(), Counter::LastFence).await?;
    let title = match (title, items.as_slice()) {
        (Some(t), _) => t.trim().to_owned(),
        (None, [one]) => one.change.title.clone(),
        (None, many) => format!("{} items", many.len()),
    };
    let group = Group {
        group_id: new_id(),
        project_id: w.project_id().to_owned(),
        title,
        claimed_by: Some(claimed_by.to_owned()),
        claim_expires_at: Some(lease_end),
        created_at: w.now(),
        fence: fence as u64,
    };
    sqlx::query(
        "INSERT INTO claim_groups (group_id, project_id, title, claimed_by, claim_expires_at, fence, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&group.group_id)
    .bind(&group.project_id)
    .bind(&group.title)
    .bind(claimed_by)
    .bind(lease_end.unix_millis())
    .bind(fence)
    .bind(group.created_at.unix_millis())
    .execute(w.conn())
    .await?;
    let ids: Vec<String> = items.into_iter().map(|item| item.change.change_id).collect();
    let mut update =
        Filter::new("UPDATE changes SET group_id = $1, status = 'claimed' WHERE 1 = 1".to_owned());
    update.binds.push(Bind::Text(group.group_id.clone()));
    update.and(&format!("change_id IN ({})", placeholders(ids.len())), ids.iter().cloned().map(Bind::Text));
    update.sql.push_str(&format!(" RETURNING {CHANGE_RETURNING}"));
    let mut rows = update.fetch(w.conn()).await?;
    // In the order the items were chosen (RETURNING's order is the engine's).
    rows.sort_by_cached_key(|row| {
        let id: Option<String> = row.try_get("change_id").ok();
        ids.iter().position(|chosen| Some(chosen) == id.as_ref())
    });
    let keys = rows.iter().map(ChangeKey::from_row).collect::<Result<Vec<_>, _>>()?;
    w.insert_events(seq, ChangeEventType::Claimed, &keys);
    Ok((group, rows))
}

/// "a claim naming a `groupId` held by the same `claimedBy` renews its lease" (the
/// fence stays, so the claimant's writes keep matching).
async fn renew(
    w: &mut ProjectWrite<'_>,
    group_id: &str,
    claimed_by: &str,
    lease_end: Timestamp,
) -> Result<(Group, Vec<AnyRow>), ApiError> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {GROUP_COLUMNS} FROM claim_groups WHERE group_id = $1 AND project_id = $2"
    )))
    .bind(group_id)
    .bind(w.project_id().to_owned())
    .fetch_optional(w.conn())
    .await?
    .ok_or_else(|| ApiError::not_found("no such group in this project"))?;
    let mut group = group_from_row(&row)?;
    if group.claimed_by.as_deref() != Some(claimed_by) {
        return Err(ApiError::conflict(codes::LEASE_LOST, "this group is claimed by someone else"));
    }
    let mut filter = Filter::new(format!("{} WHERE 1 = 1", item_select()));
    filter.and("c.group_id = ?", [Bind::Text(group_id.to_owned())]);
    filter.sql.push_str(" ORDER BY c.short_id");
    let rows = filter.fetch(w.conn()).await?;
    if rows.is_empty() {
        return Err(ApiError::conflict(
            codes::LEASE_LOST,
            "every item of this group has been claimed again since",
        ));
    }
    sqlx::query("UPDATE claim_groups SET claim_expires_at = $2 WHERE group_id = $1")
        .bind(group_id)
        .bind(lease_end.unix_millis())
        .execute(w.conn())
        .await?;
    group.claim_expires_at = Some(lease_end);
    Ok((group, rows))
}

/// What every agent write checks first: the item has reached the agent (not held,
/// not withdrawn or dismissed) and the lease rule allows the writer.
fn check_agent_write(
    ctx: &Ctx<'_>,
    item: &Item,
    group_id: Option<&str>,
    fence: Option<u64>,
    author_name: Option<&str>,
) -> Result<(), ApiError> {
    if item.change.held {
        return Err(ApiError::conflict(codes::WRONG_STATUS, "this item is still held by its filer"));
    }
    if item.change.status == ChangeStatus::Dismissed {
        return Err(ApiError::conflict(codes::WRONG_STATUS, "this item was dismissed"));
    }
    check_lease(item, group_id, fence, author_name, ctx.now)
}

fn required(field: &str, value: &str) -> Result<(), ApiError> {
    if value.trim().is_empty() { Err(ApiError::bad_input(field, "must not be empty")) } else { Ok(()) }
}

impl Op for AskChangeQuestion {
    /// "`ask` → `needs_answer`, options (≤ 6) become attachments of kind `option`."
    async fn run(ctx: &Ctx<'_>, input: AskChangeQuestionInput) -> Result<MessageOutput, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        required("question", &input.question)?;
        required("authorName", &input.author_name)?;
        let options = input.option.unwrap_or_default();
        if options.len() > OPTIONS_MAX {
            return Err(ApiError::bad_input("option", format!("at most {OPTIONS_MAX} options")));
        }
        for (i, label) in options.iter().enumerate() {
            required(&format!("option[{i}]"), label)?;
        }
        let mut w = ProjectWrite::begin(ctx).await?;
        let item = w.item(&input.change_id).await?;
        check_agent_write(ctx, &item, input.group_id.as_deref(), input.fence, Some(&input.author_name))?;
        if item.change.status == ChangeStatus::Done {
            return Err(ApiError::conflict(codes::WRONG_STATUS, "this item is done"));
        }
        // Option keys are unique in the thread, so an answer names exactly one.
        let attachments = options
            .into_iter()
            .map(|label| Attachment {
                key: format!("opt-{}", &new_id()[..8]),
                label: label.trim().to_owned(),
                kind: AttachmentKind::Option,
                url: None,
            })
            .collect();
        set_status(&mut w, &item, ChangeStatus::NeedsAnswer).await?;
        let author = (AuthorKind::Agent, Some(input.author_name));
        let message = w
            .message(ChangeEventType::Asked, &item.change, author, input.question, attachments, None)
            .await?;
        w.commit().await?;
        Ok(MessageOutput { message: ctx.present_message(message) })
    }
}

impl Op for ReplyToChange {
    /// A message, optionally with an image (evidence); "`reply` … change[s] no status".
    async fn run(ctx: &Ctx<'_>, input: ReplyToChangeInput) -> Result<MessageOutput, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        required("body", &input.body)?;
        required("authorName", &input.author_name)?;
        let mut w = ProjectWrite::begin(ctx).await?;
        let item = w.item(&input.change_id).await?;
        check_agent_write(ctx, &item, input.group_id.as_deref(), input.fence, Some(&input.author_name))?;
        let mut attachments = Vec::new();
        if let Some(image) = &input.image_base64 {
            let content_type = input
                .content_type
                .as_deref()
                .ok_or_else(|| ApiError::bad_input("contentType", "is required with imageBase64"))?;
            let key = w
                .save_attached_image(ImageInput { field: "imageBase64", content_type, base64: image })
                .await?;
            let label = input.image_label.unwrap_or_else(|| "image".to_owned());
            attachments.push(Attachment { key, label, kind: AttachmentKind::Evidence, url: None });
        }
        let author = (AuthorKind::Agent, Some(input.author_name));
        let message =
            w.message(ChangeEventType::Replied, &item.change, author, input.body, attachments, None).await?;
        w.commit().await?;
        Ok(MessageOutput { message: ctx.present_message(message) })
    }
}

impl Op for AttachChangeShot {
    /// An image as a message of its own: an option to choose, or evidence.
    async fn run(ctx: &Ctx<'_>, input: AttachChangeShotInput) -> Result<AttachChangeShotOutput, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        required("label", &input.label)?;
        required("authorName", &input.author_name)?;
        let mut w = ProjectWrite::begin(ctx).await?;
        let item = w.item(&input.change_id).await?;
        check_agent_write(ctx, &item, input.group_id.as_deref(), input.fence, Some(&input.author_name))?;
        let key = w
            .save_attached_image(ImageInput {
                field: "imageBase64",
                content_type: &input.content_type,
                base64: &input.image_base64,
            })
            .await?;
        let label = input.label.trim().to_owned();
        let attachment = Attachment { key: key.clone(), label: label.clone(), kind: input.kind, url: None };
        let author = (AuthorKind::Agent, Some(input.author_name));
        let message =
            w.message(ChangeEventType::Shot, &item.change, author, label, vec![attachment], None).await?;
        w.commit().await?;
        Ok(AttachChangeShotOutput { message: ctx.present_message(message), key })
    }
}

impl Op for CompleteChange {
    /// "`complete` → `done` (a `note` becomes an agent message)". `live` is true once
    /// the stage serves `headCommit` (set here if it already does, else on deploy).
    async fn run(ctx: &Ctx<'_>, input: CompleteChangeInput) -> Result<ChangeOutput, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        let mut w = ProjectWrite::begin(ctx).await?;
        let item = w.item(&input.change_id).await?;
        check_agent_write(ctx, &item, input.group_id.as_deref(), input.fence, input.author_name.as_deref())?;
        if item.change.status == ChangeStatus::Done {
            return Err(ApiError::conflict(codes::WRONG_STATUS, "this item is already done"));
        }
        sqlx::query(
            "UPDATE changes SET status = 'done', resolved_at = $2, branch = COALESCE($3, branch), \
             head_commit = COALESCE($4, head_commit), \
             live = CASE WHEN COALESCE($4, head_commit) IS NULL THEN NULL \
                         WHEN COALESCE($4, head_commit) = (SELECT git_sha FROM stages s WHERE s.stage_id = changes.stage_id) \
                         THEN 1 ELSE 0 END \
             WHERE change_id = $1",
        )
        .bind(&item.change.change_id)
        .bind(ctx.now.unix_millis())
        .bind(input.branch)
        .bind(input.head_commit)
        .execute(w.conn())
        .await?;
        let done = w.item(&item.change.change_id).await?;
        match input.note.filter(|n| !n.trim().is_empty()) {
            Some(note) => {
                let author = (AuthorKind::Agent, input.author_name);
                w.message(ChangeEventType::Done, &done.change, author, note, vec![], None).await?;
            }
            None => {
                w.event(ChangeEventType::Done, &done.change).await?;
            }
        }
        w.commit().await?;
        Ok(ChangeOutput { change: ctx.present(done.change) })
    }
}

//! The filer's and reviewer's operations: filing (with the grace window), editing,
//! withdrawing and releasing while held, uploading a screenshot, answering the agent,
//! and setting a status.

use redline_protocol::*;
use serde_json::value::{RawValue, to_raw_value};
use sha2::{Digest, Sha256};
use sqlx::{AnyConnection, Row};

use super::claim::end_lease_if_finished;
use super::{Ctx, Op};
use crate::error::ApiError;
use crate::queue::{ChangeKey, Counter, Item, ProjectWrite, QuestionPart, find_item, set_status};
use crate::store::blobs::{Blobs, ImageInput, decode, unknown_screenshot_key};
use crate::store::hex;
use crate::store::new_id;
use crate::store::rows::{
    STAGE_SELECT_BY_ID, SUMMARY_RETURNING, StoredCapture, StoredChange, stage_from_row, to_json,
};

impl Op for UploadShot {
    type Answer = UploadShotOutput;

    async fn run(ctx: &Ctx<'_>, input: UploadShotInput) -> Result<Self::Answer, ApiError> {
        ctx.who.require_project(&input.project_id)?;
        let image =
            ImageInput { field: "imageBase64", content_type: input.content_type, base64: input.image_base64 };
        let file = ctx.state.blobs.write(decode(image).await?).await?;
        let mut tx = ctx.state.store.begin_write().await?;
        let quota = ctx.state.project_quota_bytes;
        Blobs::record(&mut tx, &input.project_id, &file, false, quota, ctx.now).await?;
        tx.commit().await?;
        Ok(UploadShotOutput { screenshot_key: file.keep() })
    }
}

/// The stage `stage_id` of `project_id`, or 404.
async fn stage(conn: &mut AnyConnection, project_id: &str, stage_id: &str) -> Result<Stage, ApiError> {
    let row = sqlx::query(STAGE_SELECT_BY_ID).bind(stage_id).fetch_optional(conn).await?;
    match row.map(|r| stage_from_row(&r)).transpose()? {
        Some(stage) if stage.project_id == project_id => Ok(stage),
        _ => Err(ApiError::not_found("stageId: no such stage in this project")),
    }
}

/// The item filed earlier with `change_id`, if any (seen from `conn`). The same
/// `changeId` with the same input answers that item; with another input (or from
/// another project), 409 `id_reused`.
async fn filed_before(
    ctx: &Ctx<'_>,
    conn: &mut AnyConnection,
    change_id: &str,
    payload_hash: &str,
) -> Result<Option<StoredChange>, ApiError> {
    let row = sqlx::query("SELECT project_id, payload_hash FROM changes WHERE change_id = $1")
        .bind(change_id)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(row) = row else { return Ok(None) };
    let (project_id, hash): (String, String) = (row.try_get("project_id")?, row.try_get("payload_hash")?);
    if project_id != ctx.who.project_id || hash != payload_hash {
        return Err(ApiError::conflict(codes::ID_REUSED, "this changeId was filed with a different payload"));
    }
    Ok(Some(find_item(conn, &project_id, change_id, ctx.now).await?.change))
}

impl Op for CreateChange {
    type Answer = ChangeOutput<StoredCapture>;

    /// Files an item, held for the project's grace window; the filer's other held
    /// items on the stage are held as long again (they share one hold, see [`hold`]).
    /// The same `changeId` with the same input answers the item filed the first time;
    /// with another input, 409 `id_reused`.
    async fn run(ctx: &Ctx<'_>, mut input: CreateChangeInput) -> Result<Self::Answer, ApiError> {
        validate_create_change(&input)?;
        input.change_id = input.change_id.map(|id| id.trim().to_ascii_lowercase());
        let payload_hash = hex(&Sha256::digest(to_json(&input).as_bytes()));
        // Reads before the write, outside the serialised part: a stage changes rarely,
        // and reading it a moment early is as if the request had come a moment early;
        // a retry of a committed filing is answered without waiting for the writer.
        let mut conn = ctx.state.store.pool().acquire().await?;
        if let Some(id) = &input.change_id
            && let Some(change) = filed_before(ctx, &mut conn, id, &payload_hash).await?
        {
            return Ok(ChangeOutput { change: ctx.present(change) });
        }
        let stage = stage(&mut conn, &ctx.who.project_id, &input.stage_id).await?;
        drop(conn);
        if !stage.changes_enabled {
            return Err(ApiError::forbidden("changes are turned off on this stage"));
        }
        // Without the page's own build, the item is filed against the stage's.
        let (git_sha, deployment_id) = match input.git_sha {
            Some(sha) => (Some(sha), input.deployment_id),
            None => (stage.git_sha.clone(), input.deployment_id.or(stage.deployment_id.clone())),
        };
        // The answer is built from what is stored rather than read back, which would
        // cost the serialised write a query and a parse of the capture; the short id
        // and the hold are filled in from the write.
        // Serialised here, not while every other write waits; the answer passes the
        // same text on.
        let capture = input.capture.as_ref().map(to_raw_value).transpose().map_err(ApiError::internal)?;
        // Kept on the item for the lists, which never read the capture.
        let element_count = input.capture.as_ref().map_or(0, |c| c.elements.len() as i64);
        let mut change = StoredChange {
            change_id: input.change_id.unwrap_or_else(new_id),
            short_id: String::new(),
            project_id: stage.project_id,
            stage_id: stage.stage_id,
            group_id: None,
            title: input.title.trim().to_owned(),
            body: input.body,
            status: ChangeStatus::Open,
            route: input.route,
            git_sha,
            deployment_id,
            locale: input.locale,
            viewport: input.viewport,
            capture,
            screenshot_key: input.screenshot_key,
            console_errors: input.console_errors.unwrap_or_default(),
            source: input.source.unwrap_or(Source::Extension),
            filed_by: Some(ctx.who.user_name.clone()),
            branch: None,
            head_commit: None,
            resolved_at: None,
            live: None,
            verified_at: None,
            verified_by: None,
            completed_by: None,
            commit_url: None,
            pull_request_url: None,
            created_at: ctx.now,
            held: false,
            held_until: None,
            screenshot_url: None,
            element_count: None,
            console_error_count: None,
            message_count: None,
        };
        // An item with neither a capture nor console errors has no row in
        // `change_captures`.
        let (viewport, capture) =
            (change.viewport.as_ref().map(to_json), change.capture.as_deref().map(RawValue::get));
        let console_errors =
            (capture.is_some() || !change.console_errors.is_empty()).then(|| to_json(&change.console_errors));

        let mut w = ctx.write().await?;
        if let Some(key) = &change.screenshot_key
            && !Blobs::attach(w.conn(), &change.project_id, key).await?
        {
            return Err(unknown_screenshot_key());
        }
        // The short id comes from the project row, which a later statement advances;
        // the item joins its filer's live hold on the stage, or begins one named after
        // itself (see `hold`). A `changeId` filed meanwhile (a retry racing its
        // original) inserts nothing, holds nothing longer, and is answered below.
        let inserted = sqlx::query(
            "INSERT INTO changes (change_id, project_id, short_id, stage_id, title, body, status, route, git_sha, \
             deployment_id, locale, viewport, screenshot_key, source, filed_by, filer_user_id, created_at, \
             hold_id, payload_hash, element_count, console_error_count) \
             VALUES ($1, $2, (SELECT next_short_id FROM projects WHERE project_id = $2), $3, $4, $5, $6, $7, $8, \
             $9, $10, $11, $12, $13, $14, $15, $16, \
             COALESCE((SELECT hold_id FROM holds WHERE stage_id = $3 AND filer_user_id = $15 AND held_until > $16), \
             $1), $17, $18, $19) \
             ON CONFLICT (change_id) DO NOTHING RETURNING short_id, hold_id",
        )
        .bind(&change.change_id)
        .bind(&change.project_id)
        .bind(&change.stage_id)
        .bind(&change.title)
        .bind(&change.body)
        .bind(change.status.as_str())
        .bind(&change.route)
        .bind(&change.git_sha)
        .bind(&change.deployment_id)
        .bind(&change.locale)
        .bind(viewport)
        .bind(&change.screenshot_key)
        .bind(change.source.as_str())
        .bind(&change.filed_by)
        .bind(&ctx.who.user_id)
        .bind(change.created_at.unix_millis())
        .bind(&payload_hash)
        .bind(element_count)
        .bind(change.console_errors.len() as i64)
        .fetch_optional(w.conn())
        .await?;
        let Some(inserted) = inserted else {
            let earlier = filed_before(ctx, w.conn(), &change.change_id, &payload_hash).await?;
            let earlier =
                earlier.ok_or_else(|| ApiError::internal("a conflicting changeId was not found"))?;
            // This write changed nothing, but the earlier filing may be in this batch:
            // answer once it is committed.
            w.commit().await?;
            return Ok(ChangeOutput { change: ctx.present(earlier) });
        };
        if let Some(console_errors) = &console_errors {
            sqlx::query(
                "INSERT INTO change_captures (change_id, capture, console_errors) VALUES ($1, $2, $3)",
            )
            .bind(&change.change_id)
            .bind(capture)
            .bind(console_errors)
            .execute(w.conn())
            .await?;
        }
        let short_id: i64 = inserted.try_get("short_id")?;
        change.short_id = short_id.to_string();
        let hold_id: String = inserted.try_get("hold_id")?;
        let held_until = hold(&mut w, &change, &ctx.who.user_id, &hold_id).await?;
        (change.held, change.held_until) = (is_held(Some(held_until), ctx.now), Some(held_until));
        // What was written and captured counts against the project's storage quota.
        let stored = written_bytes(&change)
            + capture.map_or(0, str::len)
            + console_errors.as_ref().map_or(0, String::len);
        let (seq, _) = w.reserve_events_and_store(1, Counter::NextShortId, 1, stored).await?;
        w.insert_events(seq, ChangeEventType::Filed, &[ChangeKey { change_id: &change.change_id, short_id }]);
        w.commit().await?;
        Ok(ChangeOutput { change: ctx.present(change) })
    }
}

/// The bytes of the text a filing wrote into its item's row (what it captured is
/// counted apart), which count against the project's storage quota.
fn written_bytes(c: &StoredChange) -> usize {
    let texts = [Some(&c.title), c.body.as_ref(), c.route.as_ref(), c.locale.as_ref()];
    let ids = [c.git_sha.as_ref(), c.deployment_id.as_ref()];
    texts.into_iter().chain(ids).flatten().map(String::len).sum()
}

/// "Filing sets `heldUntil = now + grace` on the new item *and on every item the same
/// filer still holds on the same stage*, so a batch being typed is released together."
/// Those items share one hold (a row of `holds`, from which each item's `heldUntil` is
/// read): the filing sets the end of `hold_id`, the hold `change` joined, which is
/// `filer`'s live hold on the stage or, when there is none, a new one named after
/// `change` (so its row is written after the item's, in the same statement whether it
/// is new or not). One row, however many items the batch holds. Returns the new end.
async fn hold(
    w: &mut ProjectWrite<'_>,
    change: &StoredChange,
    filer: &str,
    hold_id: &str,
) -> Result<Timestamp, ApiError> {
    let held_until: i64 = sqlx::query_scalar(
        "INSERT INTO holds (hold_id, stage_id, filer_user_id, held_until) \
         VALUES ($1, $2, $3, $4 + 1000 * (SELECT grace_seconds FROM projects WHERE project_id = $5)) \
         ON CONFLICT (hold_id) DO UPDATE SET held_until = excluded.held_until RETURNING held_until",
    )
    .bind(hold_id)
    .bind(&change.stage_id)
    .bind(filer)
    .bind(w.now().unix_millis())
    .bind(&change.project_id)
    .fetch_one(w.conn())
    .await?;
    Ok(Timestamp::from_unix_millis(held_until))
}

/// "While an item is held only its filer may `updateChange` or `withdrawChange` it."
fn check_filer_hold(ctx: &Ctx<'_>, item: &Item) -> Result<(), ApiError> {
    if item.filer_user_id.as_deref() != Some(ctx.who.user_id.as_str()) {
        return Err(ApiError::conflict(
            codes::NOT_FILER,
            "only the person who filed this item may change it",
        ));
    }
    if !item.change.held {
        return Err(ApiError::conflict(
            codes::NOT_HELD,
            "this item's hold has ended; it is with the agent now",
        ));
    }
    Ok(())
}

impl Op for UpdateChange {
    type Answer = ChangeOutput<StoredCapture>;

    async fn run(ctx: &Ctx<'_>, input: UpdateChangeInput) -> Result<Self::Answer, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        if let Some(title) = &input.title {
            validate_title("title", title)?;
        }
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        check_filer_hold(ctx, &item)?;
        sqlx::query(
            "UPDATE changes SET title = COALESCE($2, title), body = COALESCE($3, body) WHERE change_id = $1",
        )
        .bind(&item.change.change_id)
        .bind(input.title.as_deref().map(str::trim))
        .bind(input.body)
        .execute(w.conn())
        .await?;
        let edited = w.item(&item.change.change_id).await?;
        // The edit is charged what it adds to the text, and given back what it removes.
        let stored = written_bytes(&edited.change) as i64 - written_bytes(&item.change) as i64;
        w.event_storing(ChangeEventType::Updated, &edited.change, stored).await?;
        w.commit().await?;
        let item = edited;
        Ok(ChangeOutput { change: ctx.present(item.change) })
    }
}

impl Op for WithdrawChange {
    type Answer = ChangeOutput<StoredCapture>;

    /// "the item becomes `dismissed` and never reaches the agent".
    async fn run(ctx: &Ctx<'_>, input: WithdrawChangeInput) -> Result<Self::Answer, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        check_filer_hold(ctx, &item)?;
        sqlx::query("UPDATE changes SET status = 'dismissed', hold_id = NULL WHERE change_id = $1")
            .bind(&item.change.change_id)
            .execute(w.conn())
            .await?;
        let item = w.item(&item.change.change_id).await?;
        w.event(ChangeEventType::Status, &item.change).await?;
        w.commit().await?;
        Ok(ChangeOutput { change: ctx.present(item.change) })
    }
}

/// The most items `releaseChanges` answers (the oldest of the batch); the others are
/// released all the same, and `listChanges` reads them.
const RELEASED_ANSWER_MAX: usize = LIST_LIMIT_MAX as usize;

impl Op for ReleaseChanges {
    type Answer = ChangesOutput<StoredCapture>;

    /// "ends the caller's hold" on the stage ("send now"); nothing held is not an error.
    async fn run(ctx: &Ctx<'_>, input: ReleaseChangesInput) -> Result<Self::Answer, ApiError> {
        // Read before the write, as in `createChange`.
        let mut conn = ctx.state.store.pool().acquire().await?;
        let stage = stage(&mut conn, &ctx.who.project_id, &input.stage_id).await?;
        drop(conn);
        let mut w = ctx.write().await?;
        // The hold ends now, for every item it holds at once.
        let hold: Option<String> = sqlx::query_scalar(
            "UPDATE holds SET held_until = $1 WHERE stage_id = $2 AND filer_user_id = $3 AND held_until > $1 \
             RETURNING hold_id",
        )
        .bind(ctx.now.unix_millis())
        .bind(&stage.stage_id)
        .bind(&ctx.who.user_id)
        .fetch_optional(w.conn())
        .await?;
        let Some(hold_id) = hold else {
            w.commit().await?;
            return Ok(ChangesOutput { changes: Vec::new() });
        };
        // Every item of the batch is released and has its event, read as two columns;
        // the answer is the first [`RELEASED_ANSWER_MAX`] of them as summaries, as a
        // batch has no count limit (docs/protocol-additions.md, "The largest answers").
        let released =
            sqlx::query("SELECT change_id, short_id FROM changes WHERE hold_id = $1 ORDER BY short_id")
                .bind(&hold_id)
                .fetch_all(w.conn())
                .await?;
        let keys = released.iter().map(ChangeKey::from_row).collect::<Result<Vec<_>, _>>()?;
        if !keys.is_empty() {
            let seq = w.reserve_events(keys.len()).await?;
            w.insert_events(seq, ChangeEventType::Released, &keys);
        }
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {SUMMARY_RETURNING} FROM changes WHERE hold_id = $1 ORDER BY short_id LIMIT {RELEASED_ANSWER_MAX}"
        )))
        .bind(&hold_id)
        .fetch_all(w.conn())
        .await?;
        w.commit().await?;
        Ok(ChangesOutput { changes: ctx.present_summaries(&rows)? })
    }
}

impl Op for AnswerChangeQuestion {
    type Answer = MessageOutput;

    /// "A user answer (`answerChangeQuestion`) → `in_progress` and wakes the claimant."
    /// A chosen option must be one of the open question's; the answer records the
    /// choice's own key and repeats its label.
    async fn run(ctx: &Ctx<'_>, input: AnswerChangeQuestionInput) -> Result<Self::Answer, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        if input.body.trim().is_empty() && input.chosen_option.is_none() {
            return Err(ApiError::bad_input("body", "must not be empty (or choose an option)"));
        }
        // The question and its choices are read before the write's turn, which every
        // other write waits for (on SQLite, every project's); the turn reads only what
        // the thread gained since.
        let mut asked = match &input.chosen_option {
            Some(_) => {
                let mut conn = ctx.state.store.pool().acquire().await?;
                let item = find_item(&mut conn, &ctx.who.project_id, &input.change_id, ctx.now).await?;
                Some(QuestionPart::read(&mut conn, &item.change.change_id).await?)
            }
            None => None,
        };
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        if item.change.status != ChangeStatus::NeedsAnswer {
            return Err(ApiError::conflict(codes::WRONG_STATUS, "this item has no open question"));
        }
        let (body, chosen_option) = match (&input.chosen_option, &mut asked) {
            (Some(key), Some(asked)) => {
                asked.catch_up(w.conn(), &item.change.change_id).await?;
                let choice = open_question(item.change.status, &asked.messages)
                    .and_then(|open| open.choice(key).cloned())
                    .ok_or_else(|| {
                        ApiError::bad_input("chosenOption", "is not an option of the open question")
                    })?;
                (answer_text(&input.body, Some(&choice.label)), Some(choice.key))
            }
            _ => (answer_text(&input.body, None), None),
        };
        set_status(&mut w, &item, ChangeStatus::InProgress).await?;
        let author = (AuthorKind::User, Some(ctx.who.user_name.clone()));
        let message =
            w.message(ChangeEventType::Answered, &item.change, author, body, vec![], chosen_option).await?;
        w.commit().await?;
        Ok(MessageOutput { message: ctx.present_message(message) })
    }
}

impl Op for SetChangeStatus {
    type Answer = ChangeOutput<StoredCapture>;

    /// "Only a user dismisses or reopens": `open`, `in_progress` or `dismissed`.
    /// Reopening clears `resolvedAt`, `live` and a verification; dismissing ends a hold,
    /// and the group's lease when nothing is left to do in it.
    async fn run(ctx: &Ctx<'_>, input: SetChangeStatusInput) -> Result<Self::Answer, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        if !is_user_settable_status(input.status) {
            return Err(ApiError::bad_input("status", "must be open, in_progress or dismissed"));
        }
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        let sql = if input.status == ChangeStatus::Dismissed {
            "UPDATE changes SET status = $2, hold_id = NULL WHERE change_id = $1"
        } else {
            "UPDATE changes SET status = $2, resolved_at = NULL, live = NULL, verified_at = NULL, \
             verified_by = NULL WHERE change_id = $1"
        };
        sqlx::query(sql).bind(&item.change.change_id).bind(input.status.as_str()).execute(w.conn()).await?;
        let item = w.item(&item.change.change_id).await?;
        if let (ChangeStatus::Dismissed, Some(group_id)) = (input.status, &item.change.group_id) {
            end_lease_if_finished(&mut w, group_id).await?;
        }
        w.event(ChangeEventType::Status, &item.change).await?;
        w.commit().await?;
        Ok(ChangeOutput { change: ctx.present(item.change) })
    }
}

impl Op for VerifyChange {
    type Answer = VerifyChangeOutput<StoredCapture>;

    /// "Only a `done` item can be verified. `fixed` sets `verifiedAt`/`verifiedBy` and
    /// adds a `verdict` message (with the after-screenshot as `evidence` when given).
    /// `still_wrong` adds the same message with the person's words and reopens the item
    /// at once: status `open`, no hold, no group, `verifiedAt` cleared." Reopening also
    /// clears `resolvedAt` and `live`, as `setChangeStatus` does.
    async fn run(ctx: &Ctx<'_>, input: VerifyChangeInput) -> Result<Self::Answer, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        let words = input.body.as_deref().unwrap_or("").trim();
        if input.verdict == Verdict::StillWrong && words.is_empty() {
            return Err(ApiError::bad_input("body", "must say what is still wrong"));
        }
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        if item.change.status != ChangeStatus::Done {
            return Err(ApiError::conflict(
                codes::WRONG_STATUS,
                format!("only a done item can be verified; this one is {}", item.change.status.as_str()),
            ));
        }
        let mut attachments = Vec::new();
        if let Some(key) = &input.screenshot_key {
            if !Blobs::attach(w.conn(), &item.change.project_id, key).await? {
                return Err(unknown_screenshot_key());
            }
            attachments.push(Attachment {
                key: key.clone(),
                label: VERDICT_SHOT_LABEL.to_owned(),
                kind: AttachmentKind::Evidence,
                url: None,
            });
        }
        let update = match input.verdict {
            Verdict::Fixed => {
                sqlx::query("UPDATE changes SET verified_at = $2, verified_by = $3 WHERE change_id = $1")
                    .bind(&item.change.change_id)
                    .bind(ctx.now.unix_millis())
                    .bind(&ctx.who.user_name)
            }
            Verdict::StillWrong => sqlx::query(
                "UPDATE changes SET status = 'open', hold_id = NULL, group_id = NULL, resolved_at = NULL, \
                 live = NULL, verified_at = NULL, verified_by = NULL WHERE change_id = $1",
            )
            .bind(&item.change.change_id),
        };
        update.execute(w.conn()).await?;
        let item = w.item(&item.change.change_id).await?;
        let author = (AuthorKind::User, Some(ctx.who.user_name.clone()));
        let body = verdict_text(input.verdict, words);
        let message =
            w.message(ChangeEventType::Verified, &item.change, author, body, attachments, None).await?;
        w.commit().await?;
        Ok(VerifyChangeOutput { change: ctx.present(item.change), message: ctx.present_message(message) })
    }
}

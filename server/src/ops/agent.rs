//! The agent's writes to an item's thread (claiming is `claim.rs`, reading the queue
//! `read.rs`).

use redline_protocol::*;

use super::claim::end_lease_if_finished;
use super::{Ctx, Op, presence};
use crate::error::ApiError;
use crate::filter::{Bind, Filter, placeholders};
use crate::queue::{Item, check_lease, set_status};
use crate::store::blobs::{ImageInput, Written, decode};
use crate::store::rows::StoredCapture;

use super::read::{Shown, shown_messages};

impl Op for AcknowledgeChangeMessages {
    type Answer = AcknowledgeChangeMessagesOutput;

    /// Records that a wait of `claimedBy` has shown it these messages of the item, so
    /// they no longer wake it (docs/protocol-additions.md, "Answers reach the agent").
    /// Recording one twice is no error. Answers the latest [`ACKNOWLEDGE_MAX`] shown.
    async fn run(ctx: &Ctx<'_>, input: AcknowledgeChangeMessagesInput) -> Result<Self::Answer, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        let claimed_by = input.claimed_by.trim();
        required("claimedBy", claimed_by)?;
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        // As every agent write: not into another claimant's live lease.
        check_lease(&item, None, None, Some(claimed_by), ctx.now)?;
        let change_id = item.change.change_id;
        let mut ids: Vec<String> = input.message_ids;
        ids.sort();
        ids.dedup();
        let mut of_item = Filter::new("SELECT message_id FROM messages WHERE 1 = 1".to_owned());
        of_item.and("change_id = ?", [Bind::Text(change_id.clone())]);
        of_item.and(
            &format!("message_id IN ({})", placeholders(ids.len())),
            ids.iter().map(|id| Bind::Text(id.clone())),
        );
        let found = of_item.fetch(w.conn()).await?.len();
        if found != ids.len() {
            return Err(ApiError::not_found("messageIds: names a message that is not in this item's thread"));
        }
        let mut insert = Filter::new(
            "INSERT INTO shown_messages (change_id, claimed_by, message_id, shown_at)".to_owned(),
        );
        insert.values(ids.iter().map(|id| {
            vec![
                Bind::Text(change_id.clone()),
                Bind::Text(claimed_by.to_owned()),
                Bind::Text(id.clone()),
                Bind::Int(ctx.now.unix_millis()),
            ]
        }));
        insert.push(" ON CONFLICT DO NOTHING", []);
        insert.execute(w.conn()).await?;
        presence::seen_writing(&mut w, &ctx.who.user_id, &[claimed_by]).await?;
        w.commit().await?;
        let mut conn = ctx.state.store.pool().acquire().await?;
        let shown_message_ids =
            shown_messages(&mut conn, &change_id, claimed_by, Shown::Latest(ACKNOWLEDGE_MAX)).await?;
        Ok(AcknowledgeChangeMessagesOutput { shown_message_ids })
    }
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

/// A new option key: random (not time-ordered, whose prefix the options of one question
/// share), so unique within its item and never reused.
fn new_option_key() -> String {
    format!("opt-{}", uuid::Uuid::new_v4().simple())
}

fn required(field: &str, value: &str) -> Result<(), ApiError> {
    if value.trim().is_empty() { Err(ApiError::bad_input(field, "must not be empty")) } else { Ok(()) }
}

impl Op for AskChangeQuestion {
    type Answer = MessageOutput;

    /// "`ask` → `needs_answer`, options (≤ 6) become attachments of kind `option`."
    async fn run(ctx: &Ctx<'_>, input: AskChangeQuestionInput) -> Result<Self::Answer, ApiError> {
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
        // The images are decoded and written before the write's turn, as in
        // `replyToChange`; the turn records them with the question.
        let images = option_images(ctx, &options, input.option_images.unwrap_or_default()).await?;
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        check_agent_write(ctx, &item, input.group_id.as_deref(), input.fence, Some(&input.author_name))?;
        if item.change.status == ChangeStatus::Done {
            return Err(ApiError::conflict(codes::WRONG_STATUS, "this item is done"));
        }
        // Option keys are unique in the item, so an answer names exactly one; an
        // option's image is an option attachment labelled like it ("that option's image").
        let mut attachments: Vec<Attachment> = options
            .into_iter()
            .map(|label| Attachment {
                key: new_option_key(),
                label: label.trim().to_owned(),
                kind: AttachmentKind::Option,
                url: None,
            })
            .collect();
        for (label, file) in &images {
            w.record_image(file).await?;
            attachments.push(Attachment {
                key: file.key().to_owned(),
                label: label.clone(),
                kind: AttachmentKind::Option,
                url: None,
            });
        }
        set_status(&mut w, &item, ChangeStatus::NeedsAnswer).await?;
        presence::seen_writing(&mut w, &ctx.who.user_id, &[&input.author_name]).await?;
        let author = (AuthorKind::Agent, Some(input.author_name));
        let message = w
            .message(ChangeEventType::Asked, &item.change, author, input.question, attachments, None)
            .await?;
        w.commit().await?;
        for (_, file) in images {
            file.keep();
        }
        Ok(MessageOutput { message: ctx.present_message(message) })
    }
}

/// A question's option images, checked and stored (not yet recorded), together at most
/// [`IMAGE_MAX_BYTES`]. Each comes back with the label of the option it shows (as that
/// option was asked), or its own label when it names none: then, like an option shot
/// with a new label, it is a choice of its own.
async fn option_images(
    ctx: &Ctx<'_>,
    options: &[String],
    images: Vec<OptionImage>,
) -> Result<Vec<(String, Written)>, ApiError> {
    // Base64 is 4/3 of the bytes: refused before anything is decoded.
    let encoded: usize = images.iter().map(|i| i.image_base64.len()).sum();
    if encoded / 4 * 3 > IMAGE_MAX_BYTES + 3 * images.len() {
        return Err(ApiError::too_large(format!(
            "optionImages: a question's images are limited to {IMAGE_MAX_BYTES} bytes together"
        )));
    }
    let mut stored = Vec::new();
    for image in images {
        let label =
            options.iter().find(|o| same_label(o, &image.label)).unwrap_or(&image.label).trim().to_owned();
        let input = ImageInput {
            field: "optionImages.imageBase64",
            content_type: image.content_type,
            base64: image.image_base64,
        };
        stored.push((label, ctx.state.blobs.write(decode(input).await?).await?));
    }
    Ok(stored)
}

impl Op for ReplyToChange {
    type Answer = MessageOutput;

    /// A message, optionally with an image (evidence); "`reply` … change[s] no status".
    async fn run(ctx: &Ctx<'_>, input: ReplyToChangeInput) -> Result<Self::Answer, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        required("body", &input.body)?;
        required("authorName", &input.author_name)?;
        // The image is decoded and its file written before the write's turn, which
        // every other write of the project waits for; the turn only records it.
        let file = match input.image_base64 {
            Some(base64) => {
                let content_type = input
                    .content_type
                    .ok_or_else(|| ApiError::bad_input("contentType", "is required with imageBase64"))?;
                let image = decode(ImageInput { field: "imageBase64", content_type, base64 }).await?;
                Some(ctx.state.blobs.write(image).await?)
            }
            None => None,
        };
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        check_agent_write(ctx, &item, input.group_id.as_deref(), input.fence, Some(&input.author_name))?;
        let mut attachments = Vec::new();
        if let Some(file) = &file {
            w.record_image(file).await?;
            let label = input.image_label.unwrap_or_else(|| "image".to_owned());
            attachments.push(Attachment {
                key: file.key().to_owned(),
                label,
                kind: AttachmentKind::Evidence,
                url: None,
            });
        }
        presence::seen_writing(&mut w, &ctx.who.user_id, &[&input.author_name]).await?;
        let author = (AuthorKind::Agent, Some(input.author_name));
        let message =
            w.message(ChangeEventType::Replied, &item.change, author, input.body, attachments, None).await?;
        w.commit().await?;
        if let Some(file) = file {
            file.keep();
        }
        Ok(MessageOutput { message: ctx.present_message(message) })
    }
}

impl Op for AttachChangeShot {
    type Answer = AttachChangeShotOutput;

    /// An image as a message of its own: an option to choose, or evidence.
    async fn run(ctx: &Ctx<'_>, input: AttachChangeShotInput) -> Result<Self::Answer, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        required("label", &input.label)?;
        required("authorName", &input.author_name)?;
        // Decoded and written before the turn, as in `replyToChange`.
        let image =
            ImageInput { field: "imageBase64", content_type: input.content_type, base64: input.image_base64 };
        let file = ctx.state.blobs.write(decode(image).await?).await?;
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        check_agent_write(ctx, &item, input.group_id.as_deref(), input.fence, Some(&input.author_name))?;
        w.record_image(&file).await?;
        let key = file.key().to_owned();
        let label = input.label.trim().to_owned();
        let attachment = Attachment { key: key.clone(), label: label.clone(), kind: input.kind, url: None };
        presence::seen_writing(&mut w, &ctx.who.user_id, &[&input.author_name]).await?;
        let author = (AuthorKind::Agent, Some(input.author_name));
        let message =
            w.message(ChangeEventType::Shot, &item.change, author, label, vec![attachment], None).await?;
        w.commit().await?;
        file.keep();
        Ok(AttachChangeShotOutput { message: ctx.present_message(message), key })
    }
}

impl Op for CompleteChange {
    type Answer = ChangeOutput<StoredCapture>;

    /// "`complete` → `done` (a `note` becomes an agent message)". `live` is true once
    /// the stage serves `headCommit` (set here if it already does, else on deploy).
    /// `completedBy` is `authorName`, else the claimant of the item's group.
    /// `commitUrl` is the page of `headCommit`, so it is kept or replaced with it (a new
    /// commit without a page of its own clears the old one's); `pullRequestUrl` is kept
    /// like `branch`, as a fix sent back usually goes on in the same pull request. Both
    /// stay through a reopening, as `headCommit` does. The last item of a group done ends
    /// the group's lease.
    async fn run(ctx: &Ctx<'_>, input: CompleteChangeInput) -> Result<Self::Answer, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        for (field, url) in [("commitUrl", &input.commit_url), ("pullRequestUrl", &input.pull_request_url)] {
            if url.as_deref().is_some_and(|u| !is_https_link(u)) {
                return Err(ApiError::bad_input(field, "must be an https:// link without spaces"));
            }
        }
        // Compared with git's ids by `stage deploy`, and passed to git there.
        let head_commit = match input.head_commit.as_deref().map(commit_sha) {
            Some(None) => {
                return Err(ApiError::bad_input("headCommit", "must be a commit id: 7 to 40 hex digits"));
            }
            Some(sha) => sha,
            None => None,
        };
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        check_agent_write(ctx, &item, input.group_id.as_deref(), input.fence, input.author_name.as_deref())?;
        if item.change.status == ChangeStatus::Done {
            return Err(ApiError::conflict(codes::WRONG_STATUS, "this item is already done"));
        }
        sqlx::query(
            "UPDATE changes SET status = 'done', resolved_at = $2, branch = COALESCE($3, branch), \
             head_commit = COALESCE($4, head_commit), \
             commit_url = CASE WHEN $4 IS NULL THEN COALESCE($6, commit_url) ELSE $6 END, \
             pull_request_url = COALESCE($7, pull_request_url), \
             completed_by = COALESCE($5, (SELECT g.claimed_by FROM claim_groups g WHERE g.group_id = changes.group_id)), \
             live = CASE WHEN COALESCE($4, head_commit) IS NULL THEN NULL \
                         WHEN COALESCE($4, head_commit) = (SELECT git_sha FROM stages s WHERE s.stage_id = changes.stage_id) \
                         THEN 1 ELSE 0 END \
             WHERE change_id = $1",
        )
        .bind(&item.change.change_id)
        .bind(ctx.now.unix_millis())
        .bind(input.branch)
        .bind(head_commit)
        .bind(input.author_name.as_deref().map(str::trim).filter(|a| !a.is_empty()))
        .bind(input.commit_url)
        .bind(input.pull_request_url)
        .execute(w.conn())
        .await?;
        let done = w.item(&item.change.change_id).await?;
        if let Some(group_id) = &done.change.group_id {
            end_lease_if_finished(&mut w, group_id).await?;
        }
        if let Some(by) = done.change.completed_by.clone() {
            presence::seen_writing(&mut w, &ctx.who.user_id, &[&by]).await?;
        }
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

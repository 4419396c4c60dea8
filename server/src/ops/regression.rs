//! `reportRegression` (ours, docs/protocol-additions.md, "Regressions"): `redline guard`
//! found a verified fix gone on a later build. The item is reopened as a `still_wrong`
//! verdict reopens it, with a `verdict` message carrying the verified after-shot,
//! today's shot and their difference, and a `regressed` event.

use redline_protocol::*;

use super::{Ctx, Op};
use crate::error::ApiError;
use crate::store::blobs::{Blobs, ImageInput, Written, decode};
use crate::store::rows::StoredCapture;

impl Op for ReportRegression {
    type Answer = VerifyChangeOutput<StoredCapture>;

    /// Only a `done` item with `verifiedAt` regresses (409 `wrong_status` otherwise, so a
    /// second report of the same regression is refused, not repeated). Reopens it as
    /// `still_wrong` does: `open`, no hold, no group, `resolvedAt`, `live` and the
    /// verification cleared.
    async fn run(ctx: &Ctx<'_>, input: ReportRegressionInput) -> Result<Self::Answer, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        let sha = commit_sha(&input.git_sha)
            .ok_or_else(|| ApiError::bad_input("gitSha", "must be 7 to 40 hex digits"))?;
        if input.body.trim().is_empty() {
            return Err(ApiError::bad_input("body", "must say what changed"));
        }
        // Decoded and written before the write's turn, as every image is.
        let images = images(ctx, input.images.unwrap_or_default()).await?;
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        if item.change.status != ChangeStatus::Done || item.change.verified_at.is_none() {
            return Err(ApiError::conflict(
                codes::WRONG_STATUS,
                format!("only a verified done item can regress; this one is {}", item.change.status.as_str()),
            ));
        }
        let mut attachments = Vec::new();
        if let Some(key) = &input.verified_key {
            if !Blobs::attach(w.conn(), &item.change.project_id, key).await? {
                return Err(ApiError::not_found("verifiedKey: no image of this project has this key"));
            }
            attachments.push(evidence(key.clone(), VERIFIED_SHOT_LABEL.to_owned()));
        }
        for (label, file) in &images {
            w.record_image(file).await?;
            attachments.push(evidence(file.key().to_owned(), label.clone()));
        }
        sqlx::query(
            "UPDATE changes SET status = 'open', hold_id = NULL, group_id = NULL, resolved_at = NULL, \
             live = NULL, verified_at = NULL, verified_by = NULL WHERE change_id = $1",
        )
        .bind(&item.change.change_id)
        .execute(w.conn())
        .await?;
        let item = w.item(&item.change.change_id).await?;
        let author = (AuthorKind::User, Some(ctx.who.user_name.clone()));
        let body = regression_text(short_sha(&sha), &input.body);
        let message =
            w.message(ChangeEventType::Regressed, &item.change, author, body, attachments, None).await?;
        w.commit().await?;
        for (_, file) in images {
            file.keep();
        }
        Ok(VerifyChangeOutput { change: ctx.present(item.change), message: ctx.present_message(message) })
    }
}

fn evidence(key: String, label: String) -> Attachment {
    Attachment { key, label, kind: AttachmentKind::Evidence, url: None }
}

/// The report's images, checked and stored (not yet recorded), together at most
/// [`IMAGE_MAX_BYTES`], as a question's option images are.
async fn images(ctx: &Ctx<'_>, images: Vec<OptionImage>) -> Result<Vec<(String, Written)>, ApiError> {
    // Base64 is 4/3 of the bytes: refused before anything is decoded.
    let encoded: usize = images.iter().map(|i| i.image_base64.len()).sum();
    if encoded / 4 * 3 > IMAGE_MAX_BYTES + 3 * images.len() {
        return Err(ApiError::too_large(format!(
            "images: a report's images are limited to {IMAGE_MAX_BYTES} bytes together"
        )));
    }
    let mut stored = Vec::new();
    for (i, image) in images.into_iter().enumerate() {
        let label = image.label.trim().to_owned();
        if label.is_empty() {
            return Err(ApiError::bad_input(&format!("images[{i}].label"), "must not be empty"));
        }
        let input = ImageInput {
            field: "images.imageBase64",
            content_type: image.content_type,
            base64: image.image_base64,
        };
        stored.push((label, ctx.state.blobs.write(decode(input).await?).await?));
    }
    Ok(stored)
}

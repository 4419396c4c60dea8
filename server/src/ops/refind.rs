//! `recordRefind` **(ours)**: what the filer's page found of an item's elements on a
//! later build, kept one per item (the latest replaces the one before) in `refinds`,
//! and read back with the item by `getChange` so the agent sees it.

use redline_protocol::{RecordRefind, RecordRefindInput, RecordRefindOutput, Refind, Timestamp, Whereabouts};
use sqlx::{AnyConnection, Row};

use super::{Ctx, Op};
use crate::error::ApiError;
use crate::store::rows::to_json;

impl Op for RecordRefind {
    type Answer = RecordRefindOutput;

    async fn run(ctx: &Ctx<'_>, input: RecordRefindInput) -> Result<Self::Answer, ApiError> {
        ctx.project(input.project_id.as_deref())?;
        let git_sha = input.git_sha.trim();
        if git_sha.is_empty() {
            return Err(ApiError::bad_input("gitSha", "must not be blank"));
        }
        if input.elements.is_empty() {
            return Err(ApiError::bad_input("elements", "must name at least one element"));
        }
        let mut elements = input.elements;
        for (i, element) in elements.iter_mut().enumerate() {
            if element.label.trim().is_empty() {
                return Err(ApiError::bad_input(&format!("elements[{i}].label"), "must not be blank"));
            }
            // A gone element is nowhere: a path sent with it says nothing.
            if element.whereabouts == Whereabouts::Gone {
                element.css_path = None;
            }
        }
        let refind = Refind {
            git_sha: git_sha.to_owned(),
            elements,
            found_by: Some(ctx.who.user_name.clone()),
            found_at: ctx.now,
        };
        let mut w = ctx.write().await?;
        let item = w.item(&input.change_id).await?;
        sqlx::query(
            "INSERT INTO refinds (change_id, git_sha, elements, found_by, found_at) VALUES ($1, $2, $3, $4, $5) \
             ON CONFLICT (change_id) DO UPDATE SET git_sha = excluded.git_sha, elements = excluded.elements, \
             found_by = excluded.found_by, found_at = excluded.found_at",
        )
        .bind(&item.change.change_id)
        .bind(&refind.git_sha)
        .bind(to_json(&refind.elements))
        .bind(&refind.found_by)
        .bind(refind.found_at.unix_millis())
        .execute(w.conn())
        .await?;
        w.commit().await?;
        Ok(RecordRefindOutput { refind })
    }
}

/// The item's latest finding, if any.
pub(super) async fn stored(conn: &mut AnyConnection, change_id: &str) -> Result<Option<Refind>, ApiError> {
    let row = sqlx::query("SELECT git_sha, elements, found_by, found_at FROM refinds WHERE change_id = $1")
        .bind(change_id)
        .fetch_optional(conn)
        .await?;
    let Some(row) = row else { return Ok(None) };
    let elements: String = row.try_get("elements")?;
    Ok(Some(Refind {
        git_sha: row.try_get("git_sha")?,
        elements: serde_json::from_str(&elements).map_err(|e| sqlx::Error::Decode(Box::new(e)))?,
        found_by: row.try_get("found_by")?,
        found_at: Timestamp::from_unix_millis(row.try_get("found_at")?),
    }))
}

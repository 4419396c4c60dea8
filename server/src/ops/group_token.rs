//! Group tokens (docs/protocol-additions.md, "A token for one group"): `redline run`
//! gives the agent it starts on a claimed group a token of its own, made here, instead
//! of the person's. Such a token has no scopes; [`allows`] and [`check_item`] are what
//! it may do: read (`getChange`, and `listChanges` of its group) and write (`askChangeQuestion`, `replyToChange`,
//! `attachChangeShot`, `completeChange`) its group's items, under that group's lease,
//! and `getSession`. It works only while the group's lease is live (`crate::auth`),
//! until revoked.

use std::any::Any;

use redline_protocol::*;
use sqlx::Row;

use super::{Ctx, Op};
use crate::auth::{generate_token, hash_token};
use crate::error::ApiError;
use crate::queue::find_item;
use crate::store::new_id;

/// Whether a group token may call RPC `name` at all (before its body is read).
pub fn allows(name: &str) -> bool {
    [
        GetSession::NAME,
        GetChange::NAME,
        ListChanges::NAME,
        AskChangeQuestion::NAME,
        ReplyToChange::NAME,
        AttachChangeShot::NAME,
        CompleteChange::NAME,
    ]
    .contains(&name)
}

/// The item an input is about and, for a write, the group it is made under.
fn item_of(input: &dyn Any) -> Option<(&str, Option<Option<&str>>)> {
    if let Some(i) = input.downcast_ref::<GetChangeInput>() {
        return Some((&i.change_id, None));
    }
    if let Some(i) = input.downcast_ref::<AskChangeQuestionInput>() {
        return Some((&i.change_id, Some(i.group_id.as_deref())));
    }
    if let Some(i) = input.downcast_ref::<ReplyToChangeInput>() {
        return Some((&i.change_id, Some(i.group_id.as_deref())));
    }
    if let Some(i) = input.downcast_ref::<AttachChangeShotInput>() {
        return Some((&i.change_id, Some(i.group_id.as_deref())));
    }
    if let Some(i) = input.downcast_ref::<CompleteChangeInput>() {
        return Some((&i.change_id, Some(i.group_id.as_deref())));
    }
    None
}

/// 403 unless a call of a token limited to `group_id` is about an item of that group;
/// a write must also name the group as its lease, so the write's own lease check (in
/// its write turn) refuses it should the item leave the group meanwhile.
pub async fn check_item(ctx: &Ctx<'_>, group_id: &str, input: &(dyn Any + Sync)) -> Result<(), ApiError> {
    let outside = || ApiError::forbidden(format!("this token is limited to the items of group {group_id}"));
    if let Some(list) = (input as &dyn Any).downcast_ref::<ListChangesInput>() {
        return match list.group_id.as_deref() {
            Some(listed) if listed == group_id => Ok(()),
            _ => Err(ApiError::bad_input("groupId", format!("must be {group_id}, this token's group"))),
        };
    }
    let Some((change_id, lease)) = item_of(input) else {
        // `getSession`: about no item.
        return Ok(());
    };
    if lease.is_some_and(|named| named != Some(group_id)) {
        return Err(ApiError::bad_input("groupId", format!("must be {group_id}, this token's group")));
    }
    let mut conn = ctx.state.store.pool().acquire().await?;
    let item = find_item(&mut conn, &ctx.who.project_id, change_id, ctx.now).await.map_err(|_| outside())?;
    if item.change.group_id.as_deref() == Some(group_id) { Ok(()) } else { Err(outside()) }
}

impl Op for CreateGroupToken {
    type Answer = GroupToken;

    /// A token of the caller's person limited to `groupId`, whose lease must be live.
    async fn run(ctx: &Ctx<'_>, input: CreateGroupTokenInput) -> Result<Self::Answer, ApiError> {
        let project_id = ctx.project(Some(&input.project_id))?;
        let mut tx = ctx.state.store.begin_write().await?;
        let lease_end: Option<i64> =
            sqlx::query("SELECT claim_expires_at FROM claim_groups WHERE group_id = $1 AND project_id = $2")
                .bind(&input.group_id)
                .bind(project_id)
                .fetch_optional(&mut *tx)
                .await?
                .ok_or_else(|| ApiError::not_found(format!("no group {} in this project", input.group_id)))?
                .try_get("claim_expires_at")?;
        if !is_lease_live(lease_end.map(Timestamp::from_unix_millis), ctx.now) {
            return Err(ApiError::conflict(codes::LEASE_LOST, "this group's lease has lapsed"));
        }
        let token = generate_token();
        let token_id = new_id();
        sqlx::query(
            "INSERT INTO tokens (token_id, token_hash, project_id, user_id, scopes, created_at, group_id) \
             VALUES ($1, $2, $3, $4, '', $5, $6)",
        )
        .bind(&token_id)
        .bind(hash_token(&token))
        .bind(project_id)
        .bind(&ctx.who.user_id)
        .bind(ctx.now.unix_millis())
        .bind(&input.group_id)
        .execute(&mut *tx)
        .await?;
        tx.commit().await?;
        Ok(GroupToken { token, token_id, group_id: input.group_id })
    }
}

impl Op for RevokeGroupToken {
    type Answer = RevokeGroupTokenOutput;

    /// Revokes a group token of the caller's person (refused from at most
    /// [`crate::auth::CHECK_REUSE_MS`] later, as `redline token revoke`).
    async fn run(ctx: &Ctx<'_>, input: RevokeGroupTokenInput) -> Result<Self::Answer, ApiError> {
        let project_id = ctx.project(Some(&input.project_id))?;
        let mut tx = ctx.state.store.begin_write().await?;
        let revoked = sqlx::query(
            "UPDATE tokens SET revoked_at = COALESCE(revoked_at, $4) \
             WHERE token_id = $1 AND project_id = $2 AND user_id = $3 AND group_id IS NOT NULL",
        )
        .bind(&input.token_id)
        .bind(project_id)
        .bind(&ctx.who.user_id)
        .bind(ctx.now.unix_millis())
        .execute(&mut *tx)
        .await?;
        if revoked.rows_affected() == 0 {
            return Err(ApiError::not_found(format!("tokenId: no group token {} of yours", input.token_id)));
        }
        tx.commit().await?;
        Ok(RevokeGroupTokenOutput {})
    }
}

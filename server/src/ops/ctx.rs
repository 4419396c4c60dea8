//! The per-request context every operation runs in.

use std::sync::Arc;

use redline_protocol::{Message, Timestamp};
use sqlx::any::AnyRow;

use crate::auth::Principal;
use crate::error::ApiError;
use crate::ops::ClaimQueue;
use crate::queue::ProjectWrite;
use crate::services::Services;
use crate::store::blobs::is_blob_key;
use crate::store::rows::{StoredChange, summary_from_row};

/// One request: the services, the claims waiting for a write, the caller, the base URL
/// for links, and the one reading of the server clock every rule of this request uses.
pub struct Ctx<'a> {
    pub state: &'a Services,
    pub claims: &'a Arc<ClaimQueue>,
    pub who: Principal,
    pub base_url: String,
    pub now: Timestamp,
}

impl Ctx<'_> {
    /// The project a call is about: `projectId` if given (403 unless the token's),
    /// else the token's own.
    pub fn project<'p>(&'p self, project_id: Option<&'p str>) -> Result<&'p str, ApiError> {
        match project_id {
            Some(p) => {
                self.who.require_project(p)?;
                Ok(p)
            }
            None => Ok(&self.who.project_id),
        }
    }

    /// A change as read outputs show it: `screenshotUrl` signed.
    pub fn present(&self, mut change: StoredChange) -> StoredChange {
        change.screenshot_url =
            change.screenshot_key.as_deref().map(|key| self.state.blobs.url(&self.base_url, key, self.now));
        change
    }

    /// The summaries a read or a committed write returned ([`SUMMARY_COLUMNS`] or
    /// [`SUMMARY_RETURNING`]), presented. Writes call it after their commit: decoding
    /// the rows is not worth holding every other write for.
    ///
    /// [`SUMMARY_COLUMNS`]: crate::store::rows::SUMMARY_COLUMNS
    /// [`SUMMARY_RETURNING`]: crate::store::rows::SUMMARY_RETURNING
    pub fn present_summaries(&self, rows: &[AnyRow]) -> Result<Vec<StoredChange>, ApiError> {
        rows.iter().map(|row| Ok(self.present(summary_from_row(row, self.now)?))).collect()
    }

    /// Begins a write on the caller's project (see [`ProjectWrite`]).
    pub async fn write(&self) -> Result<ProjectWrite<'_>, ApiError> {
        ProjectWrite::begin(self.state, &self.who.project_id, self.now).await
    }

    /// A message as read outputs show it: image attachments get signed `url`s.
    pub fn present_message(&self, mut message: Message) -> Message {
        for a in &mut message.attachments {
            a.url = is_blob_key(&a.key).then(|| self.state.blobs.url(&self.base_url, &a.key, self.now));
        }
        message
    }
}

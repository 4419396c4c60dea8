//! Scopes, the error body and the change-event data.

use serde::{Deserialize, Serialize};

use crate::Timestamp;

/// Scope wire names: "Every read needs `changes:project:read`. Agent writes need
/// `changes:project:write`; filer and reviewer writes need `changes:project:file`."
pub const SCOPE_READ: &str = "changes:project:read";
pub const SCOPE_WRITE: &str = "changes:project:write";
pub const SCOPE_FILE: &str = "changes:project:file";
pub const SCOPE_ADMIN: &str = "changes:project:admin";

/// A token scope. Serialized as its wire name.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub enum Scope {
    #[serde(rename = "changes:project:read")]
    Read,
    #[serde(rename = "changes:project:write")]
    Write,
    #[serde(rename = "changes:project:file")]
    File,
    /// **(ours)** A project's settings: its webhooks (`listWebhooks`).
    #[serde(rename = "changes:project:admin")]
    Admin,
}

impl Scope {
    pub const ALL: [Scope; 4] = [Scope::Read, Scope::Write, Scope::File, Scope::Admin];

    pub const fn as_str(self) -> &'static str {
        match self {
            Scope::Read => SCOPE_READ,
            Scope::Write => SCOPE_WRITE,
            Scope::File => SCOPE_FILE,
            Scope::Admin => SCOPE_ADMIN,
        }
    }

    pub fn from_wire(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// Error `code`s. The 409 ones are the protocol's **(ours)** list; the others are
/// ours too (the protocol names only the HTTP status for them).
pub mod codes {
    /// 409: nothing named could be claimed; the body has `items`.
    pub const NOT_CLAIMABLE: &str = "not_claimable";
    /// 409: the caller's `groupId`/`fence` no longer match, or another claimant holds a
    /// live lease.
    pub const LEASE_LOST: &str = "lease_lost";
    /// 409: "a `changeId` sent again with a different payload".
    pub const ID_REUSED: &str = "id_reused";
    /// 409: "edit, withdraw or release after the hold ended".
    pub const NOT_HELD: &str = "not_held";
    /// 409: only the filer may do this.
    pub const NOT_FILER: &str = "not_filer";
    /// 409: "e.g. answering an item that asked nothing".
    pub const WRONG_STATUS: &str = "wrong_status";
    /// 400
    pub const BAD_INPUT: &str = "bad_input";
    /// 401
    pub const UNAUTHORIZED: &str = "unauthorized";
    /// 403
    pub const FORBIDDEN: &str = "forbidden";
    /// 404
    pub const NOT_FOUND: &str = "not_found";
    /// 408 **(ours)**: a request's body did not arrive in time (clients treat 408 as
    /// transient).
    pub const TIMEOUT: &str = "timeout";
    /// 413
    pub const TOO_LARGE: &str = "too_large";
    /// 415
    pub const UNSUPPORTED_MEDIA_TYPE: &str = "unsupported_media_type";
    /// 429 (with `Retry-After`)
    pub const RATE_LIMITED: &str = "rate_limited";
    /// 5xx
    pub const INTERNAL: &str = "internal";
}

/// The error body: `{"message": "...", "code": "..."}`; a 409 `not_claimable` adds
/// `items`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ErrorBody {
    pub message: String,
    pub code: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub items: Option<Vec<NotClaimableItem>>,
}

/// Why an item named in a claim was not taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum NotClaimableReason {
    Held,
    Leased,
    Done,
    Dismissed,
    NotFound,
}

/// One entry of a 409 `not_claimable` body's `items`: "`{changeId, shortId, reason:
/// "held"|"leased"|"done"|"dismissed"|"not_found", claimableAt|null, claimedBy|null}`".
/// For `not_found` the ids echo what the caller sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct NotClaimableItem {
    pub change_id: String,
    #[serde(default)]
    pub short_id: Option<String>,
    pub reason: NotClaimableReason,
    #[serde(default)]
    pub claimable_at: Option<Timestamp>,
    #[serde(default)]
    pub claimed_by: Option<String>,
}

/// The `type` of a change event.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ChangeEventType {
    Filed,
    Updated,
    Claimed,
    Released,
    Asked,
    Answered,
    Replied,
    Shot,
    Done,
    Status,
    /// **(ours)** `verifyChange`: a person checked the fix (`fixed` or `still_wrong`).
    Verified,
    /// **(ours)** `reportRegression`: a verified fix is gone on a later build.
    Regressed,
}

impl ChangeEventType {
    pub const ALL: [ChangeEventType; 12] = [
        ChangeEventType::Filed,
        ChangeEventType::Updated,
        ChangeEventType::Claimed,
        ChangeEventType::Released,
        ChangeEventType::Asked,
        ChangeEventType::Answered,
        ChangeEventType::Replied,
        ChangeEventType::Shot,
        ChangeEventType::Done,
        ChangeEventType::Status,
        ChangeEventType::Verified,
        ChangeEventType::Regressed,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ChangeEventType::Filed => "filed",
            ChangeEventType::Updated => "updated",
            ChangeEventType::Claimed => "claimed",
            ChangeEventType::Released => "released",
            ChangeEventType::Asked => "asked",
            ChangeEventType::Answered => "answered",
            ChangeEventType::Replied => "replied",
            ChangeEventType::Shot => "shot",
            ChangeEventType::Done => "done",
            ChangeEventType::Status => "status",
            ChangeEventType::Verified => "verified",
            ChangeEventType::Regressed => "regressed",
        }
    }

    pub fn from_wire(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// The `data:` of a change event: `{"type": ..., "changeId": ..., "shortId": ...,
/// "seq": ...}`. "Events are hints: a client re-reads the list, never trusts a payload
/// as state." `seq` equals the event's SSE `id:` (the per-project sequence).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ChangeEvent {
    #[serde(rename = "type")]
    pub event_type: ChangeEventType,
    pub change_id: String,
    pub short_id: String,
    pub seq: u64,
}

/// The SSE event name the server sends when `Last-Event-ID` is too old to replay:
/// the client re-reads everything.
pub const EVENT_RESET: &str = "reset";

/// The path of a project's change events: `/events/changes:{projectId}`.
pub fn events_path(project_id: &str) -> String {
    format!("/events/changes:{project_id}")
}

//! Claiming (served by `ops/claim.rs`): `claimChanges` and **(ours)** `releaseGroup`.

use serde::{Deserialize, Serialize};

use crate::records::*;

/// `claimChanges`: "`projectId, groupId?, changeIds?, title?, claimedBy, leaseMinutes?`".
/// No `changeIds` (and no `groupId`) claims every claimable item, at most 50.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClaimChangesInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub group_id: Option<String>,
    /// Change ids, or `#7` / `7` short ids of `projectId`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_vec_of_strings::<_, { crate::CLAIM_NAMES_MAX }, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::CLAIM_NAMES_MAX), inner(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF))))]
    pub change_ids: Option<Vec<String>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::TITLE_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::TITLE_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub title: Option<String>,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::NAME_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub claimed_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = crate::MAX_LEASE_MINUTES)))]
    pub lease_minutes: Option<u32>,
}

/// `claimChanges` → `{group, changes}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ClaimChangesOutput<C = Capture> {
    pub group: Group,
    pub changes: Vec<Change<C>>,
}

/// `releaseGroup` **(ours)**: `projectId, groupId, claimedBy` (the group's claimant).
/// The lease ends now; the items not `done` or `dismissed` become `open` in no group,
/// claimable at once. Answers `{group, changes}`: the group as it ends, and the items
/// that went back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReleaseGroupInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: String,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub group_id: String,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::NAME_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub claimed_by: String,
}

//! Claiming (served by `ops/claim.rs`): `claimChanges` and **(ours)** `releaseGroup`.

use serde::{Deserialize, Serialize};

use crate::bound::{List, NoNul, NonBlank, Opt, Reference, Text};
use crate::records::*;
use crate::{CLAIM_NAMES_MAX, ID_MAX_CHARS, NAME_MAX_CHARS, TITLE_MAX_CHARS};

/// `claimChanges`: "`projectId, groupId?, changeIds?, title?, claimedBy, leaseMinutes?`".
/// No `changeIds` (and no `groupId`) claims every claimable item, at most 50.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClaimChangesInput {
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub project_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub group_id: Option<String>,
    /// Change ids, or `#7` / `7` short ids of `projectId`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<List<Text<Reference, 1, ID_MAX_CHARS>, 1, CLAIM_NAMES_MAX>>"
    )]
    pub change_ids: Option<Vec<String>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NonBlank, 1, TITLE_MAX_CHARS>>"
    )]
    pub title: Option<String>,
    #[serde(with = "Text::<NonBlank, 1, NAME_MAX_CHARS>")]
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
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub project_id: String,
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub group_id: String,
    #[serde(with = "Text::<NonBlank, 1, NAME_MAX_CHARS>")]
    pub claimed_by: String,
}

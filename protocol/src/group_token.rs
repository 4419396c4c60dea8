//! The inputs and outputs of the group tokens (**ours**, docs/protocol-additions.md,
//! "A token for one group"): `redline run` gives the agent it starts on a claimed group
//! a token limited to that group's items instead of the person's.

use serde::{Deserialize, Serialize};

use crate::ID_MAX_CHARS;
use crate::bound::{NoNul, Text};

/// `createGroupToken` **(ours)**: `projectId, groupId`: the group's lease must be live.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreateGroupTokenInput {
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub project_id: String,
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub group_id: String,
}

/// `createGroupToken` → `{token, tokenId, groupId}`: `token` is shown this once; it
/// works only while the group's lease is live, until revoked.
#[derive(Clone, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GroupToken {
    pub token: String,
    pub token_id: String,
    pub group_id: String,
}

impl std::fmt::Debug for GroupToken {
    /// Never the secret.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GroupToken")
            .field("token_id", &self.token_id)
            .field("group_id", &self.group_id)
            .finish()
    }
}

/// `revokeGroupToken` **(ours)**: `projectId, tokenId` (a group token of the caller's
/// person; revoking one twice is no error).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct RevokeGroupTokenInput {
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub project_id: String,
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub token_id: String,
}

/// `revokeGroupToken` → `{}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RevokeGroupTokenOutput {}

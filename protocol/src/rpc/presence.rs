//! **(ours)** `listAgents`: the project's agents, which is waiting (served by
//! `ops/presence.rs`).

use serde::{Deserialize, Serialize};

use crate::ID_MAX_CHARS;
use crate::bound::{NoNul, Text};
use crate::records::*;

/// `listAgents` **(ours)**: `projectId`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListAgentsInput {
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub project_id: String,
}

/// `listAgents` → `{agents}`: the agents seen in the last [`crate::AGENTS_SEEN_DAYS`]
/// days, the latest seen first, at most [`crate::AGENTS_MAX`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListAgentsOutput {
    pub agents: Vec<AgentPresence>,
}

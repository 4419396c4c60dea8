//! Stages (served by `ops/stages.rs`): `listStages` and **(ours)** `resolveStage`.

use serde::{Deserialize, Serialize};

use crate::records::*;

/// `listStages`: `projectId`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListStagesInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: String,
}

/// `listStages` → `{stages}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ListStagesOutput {
    pub stages: Vec<Stage>,
}

/// `resolveStage` **(ours)**: `url` of a page.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ResolveStageInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::URL_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::URL_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub url: String,
}

/// `resolveStage` → `{projectId, stageId, branch, gitSha}` (or 404).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ResolvedStage {
    pub project_id: String,
    pub stage_id: String,
    pub branch: String,
    #[serde(default)]
    pub git_sha: Option<String>,
}

//! Stages (served by `ops/stages.rs`): `listStages` and **(ours)** `resolveStage`.

use serde::{Deserialize, Serialize};

use crate::bound::{NoNul, Text};
use crate::records::*;
use crate::{ID_MAX_CHARS, URL_MAX_CHARS};

/// `listStages`: `projectId`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListStagesInput {
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
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
    #[serde(with = "Text::<NoNul, 1, URL_MAX_CHARS>")]
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

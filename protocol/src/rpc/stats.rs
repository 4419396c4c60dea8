//! **(ours)** `getStats`: the loop's numbers (served by `ops/stats.rs`).

use serde::{Deserialize, Serialize};

use crate::bound::{NoNul, Text};
use crate::records::*;
use crate::{ID_MAX_CHARS, Timestamp};

/// `getStats` **(ours)**: `projectId, sinceDays?` (items filed in the last `sinceDays`
/// days, default [`crate::STATS_DEFAULT_DAYS`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GetStatsInput {
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub project_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = crate::STATS_MAX_DAYS)))]
    pub since_days: Option<u32>,
}

/// `getStats` → the project's totals, then one row per agent and per filer (most items
/// first, at most [`crate::STATS_MAX_ROWS`] each).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GetStatsOutput {
    pub since: Timestamp,
    pub total: LoopStats,
    pub agents: Vec<LoopStats>,
    pub filers: Vec<LoopStats>,
}

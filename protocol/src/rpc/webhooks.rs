//! **(ours)** `listWebhooks`: a project's outgoing webhooks and their deliveries (served
//! by the server's `webhooks.rs`).

use serde::{Deserialize, Serialize};

use crate::ID_MAX_CHARS;
use crate::bound::{NoNul, Text};
use crate::records::*;

/// `listWebhooks` **(ours)**: `projectId`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListWebhooksInput {
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub project_id: String,
}

/// `listWebhooks` → `{webhooks}`, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListWebhooksOutput {
    pub webhooks: Vec<Webhook>,
}

//! **(ours)** `listWebhooks`: a project's outgoing webhooks and their deliveries (served
//! by the server's `webhooks.rs`).

use serde::{Deserialize, Serialize};

use crate::records::*;

/// `listWebhooks` **(ours)**: `projectId`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListWebhooksInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: String,
}

/// `listWebhooks` → `{webhooks}`, oldest first.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListWebhooksOutput {
    pub webhooks: Vec<Webhook>,
}

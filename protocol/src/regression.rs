//! **(ours)** `reportRegression` (docs/protocol-additions.md, "Regressions"): a fix a
//! person verified on the stage no longer shows there (`redline guard` found its element
//! gone or changed on a later build). The item is reopened as a `still_wrong` verdict
//! reopens it, and the agent is woken the same way.

use serde::{Deserialize, Serialize};

use crate::bound::{CommitSha, List, NoNul, NonBlank, Object, Opt, Reference, Text};
use crate::{ID_MAX_CHARS, OptionImage, SHORT_MAX_CHARS, TEXT_MAX_CHARS};

/// How many images a report may carry (today's shot and the difference); the verified
/// after-shot is named by its key.
pub const REGRESSION_IMAGES_MAX: usize = 2;

/// `reportRegression` **(ours)**: `changeId, projectId?, gitSha, body, verifiedKey?,
/// images?` (each `label, contentType, imageBase64`, at most two, together at most one
/// image's bytes). Only a `done` item with `verifiedAt` can regress.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReportRegressionInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    /// The build the stage served when the fix was found gone (7 to 40 hex digits).
    #[serde(with = "Text::<CommitSha, 7, SHORT_MAX_CHARS>")]
    pub git_sha: String,
    /// What was seen: which element is gone, or how much of it changed.
    #[serde(with = "Text::<NonBlank, 1, TEXT_MAX_CHARS>")]
    pub body: String,
    /// The verified after-shot's key (its `verdict` message's attachment), attached
    /// again to the report.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub verified_key: Option<String>,
    /// Today's shot and the difference image, each `label, contentType, imageBase64`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<List<Object<OptionImage>, 0, REGRESSION_IMAGES_MAX>>"
    )]
    pub images: Option<Vec<OptionImage>>,
}

/// The label of the verified after-shot in a regression's message.
pub const VERIFIED_SHOT_LABEL: &str = "verified";

/// What a regression's `verdict` message says: "Regressed in a91c4e2: …". It says
/// neither "Fixed" nor "Still wrong", so `getStats` counts it as neither.
pub fn regression_text(short_sha: &str, words: &str) -> String {
    format!("{REGRESSED} {short_sha}: {}", words.trim())
}

/// How a regression's message starts.
pub const REGRESSED: &str = "Regressed in";

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_report_reads_its_fields_and_refuses_a_third_image() {
        let image = json!({"label": "today", "contentType": "image/png", "imageBase64": "AAAA"});
        let input: ReportRegressionInput = serde_json::from_value(json!({
            "changeId": "#7", "gitSha": "a91c4e2", "body": "gone", "verifiedKey": "k", "images": [image, image],
        }))
        .unwrap();
        assert_eq!(input.images.as_ref().map(Vec::len), Some(2));
        assert_eq!(input.verified_key.as_deref(), Some("k"));
        let three =
            json!({"changeId": "7", "gitSha": "a91c4e2", "body": "x", "images": [image, image, image]});
        assert!(serde_json::from_value::<ReportRegressionInput>(three).is_err());
        assert_eq!(regression_text("a91c4e2", " button gone "), "Regressed in a91c4e2: button gone");
    }
}

//! The filer's and reviewer's side (served by `ops/filer.rs`): `createChange`,
//! `answerChangeQuestion`, `setChangeStatus` and **(ours)** `uploadShot`, `updateChange`,
//! `withdrawChange`, `releaseChanges`, `verifyChange`.

use serde::{Deserialize, Serialize};

use crate::bound::{List, NoNul, NonBlank, Opt, Reference, Route, Text, Uuid};
use crate::records::*;
use crate::{
    CONSOLE_ERROR_MAX_CHARS, CONSOLE_ERRORS_MAX, ID_MAX_CHARS, IMAGE_BASE64_MAX_CHARS, SHORT_MAX_CHARS,
    TEXT_MAX_CHARS, TITLE_MAX_CHARS, URL_MAX_CHARS,
};

/// `createChange`: "`stageId, title, body?, route?, deploymentId?, gitSha?, locale?,
/// viewport?, capture?, screenshotKey?, consoleErrors?`" + **(ours)** `changeId?`
/// ("client-made UUID: the same call twice files once").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreateChangeInput {
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub stage_id: String,
    #[serde(with = "Text::<NonBlank, 1, TITLE_MAX_CHARS>")]
    pub title: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, TEXT_MAX_CHARS>>"
    )]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<Route, 0, URL_MAX_CHARS>>")]
    pub route: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, SHORT_MAX_CHARS>>"
    )]
    pub deployment_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, SHORT_MAX_CHARS>>"
    )]
    pub git_sha: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, SHORT_MAX_CHARS>>"
    )]
    pub locale: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_object"
    )]
    pub viewport: Option<Viewport>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_object"
    )]
    pub capture: Option<Capture>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub screenshot_key: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<List<Text<NoNul, 0, CONSOLE_ERROR_MAX_CHARS>, 0, CONSOLE_ERRORS_MAX>>"
    )]
    pub console_errors: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<Uuid, 0, ID_MAX_CHARS>>")]
    pub change_id: Option<String>,
    /// **(ours)** Where the item is filed from; `extension` when left out (the
    /// protocol's `createChange` input has no `source`, and the extension is its filer).
    /// The agent CLI's `redline file` sends `cli`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<Source>,
}

/// `{change}`: the output of `createChange`, `completeChange`, `setChangeStatus`,
/// `updateChange` and `withdrawChange`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChangeOutput<C = Capture> {
    pub change: Change<C>,
}

/// `{changes}`: the output of `releaseChanges` (the items whose hold ended).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ChangesOutput<C = Capture> {
    pub changes: Vec<Change<C>>,
}

/// `{message}`: the output of `askChangeQuestion`, `replyToChange` and
/// `answerChangeQuestion`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct MessageOutput {
    pub message: Message,
}

/// `uploadShot` **(ours)**: `projectId, contentType, imageBase64`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::image_required))]
pub struct UploadShotInput {
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub project_id: String,
    #[serde(with = "Text::<NoNul, 1, SHORT_MAX_CHARS>")]
    pub content_type: String,
    /// Base64 of a png, jpeg or webp image of at most 8 MiB (413 beyond), of the type
    /// `contentType` names; a `data:…;base64,` URL is read as well.
    #[serde(with = "Text::<NoNul, 1, IMAGE_BASE64_MAX_CHARS>")]
    pub image_base64: String,
}

/// `uploadShot` → `{screenshotKey}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UploadShotOutput {
    pub screenshot_key: String,
}

/// `answerChangeQuestion`: `changeId, body, chosenOption?`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::answer_says_something))]
pub struct AnswerChangeQuestionInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    #[serde(with = "Text::<NoNul, 0, TEXT_MAX_CHARS>")]
    pub body: String,
    /// The chosen option attachment's `key`.
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub chosen_option: Option<String>,
}

/// `setChangeStatus`: `changeId, status` (`open`, `in_progress` or `dismissed`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SetChangeStatusInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    #[cfg_attr(feature = "schema", schemars(schema_with = "crate::schema::settable_status"))]
    pub status: ChangeStatus,
}

/// `verifyChange` **(ours)**: `changeId, verdict` (`fixed` or `still_wrong`), `body?`,
/// `screenshotKey?` (an "after" screenshot from `uploadShot`). "Only a `done` item can
/// be verified." `still_wrong` needs the person's words in `body`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::still_wrong_says_what))]
pub struct VerifyChangeInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    pub verdict: Verdict,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, TEXT_MAX_CHARS>>"
    )]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub screenshot_key: Option<String>,
}

/// `verifyChange` and `reportRegression` → `{change, message}`: the item after the
/// verdict and the `verdict` message added to its thread.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct VerifyChangeOutput<C = Capture> {
    pub change: Change<C>,
    pub message: Message,
}

/// `updateChange` **(ours)**: `changeId, title?, body?` (filer, while held).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct UpdateChangeInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NonBlank, 1, TITLE_MAX_CHARS>>"
    )]
    pub title: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, TEXT_MAX_CHARS>>"
    )]
    pub body: Option<String>,
}

/// `withdrawChange` **(ours)**: `changeId` (filer, while held; "the item becomes
/// `dismissed` and never reaches the agent").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct WithdrawChangeInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
}

/// `releaseChanges` **(ours)**: `stageId` ("ends the caller's hold; nothing held is not
/// an error").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReleaseChangesInput {
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub stage_id: String,
}

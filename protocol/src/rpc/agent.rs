//! The agent's writes to an item (served by `ops/agent.rs`): `askChangeQuestion`,
//! `replyToChange`, `attachChangeShot`, `completeChange` and **(ours)**
//! `acknowledgeChangeMessages`.

use serde::{Deserialize, Serialize};

use crate::bound::{CommitSha, HttpsLink, List, NoNul, NonBlank, Object, Opt, Reference, Text};
use crate::records::*;
use crate::{
    ACKNOWLEDGE_MAX, ID_MAX_CHARS, IMAGE_BASE64_MAX_CHARS, NAME_MAX_CHARS, OPTIONS_MAX, SHORT_MAX_CHARS,
    TEXT_MAX_CHARS, URL_MAX_CHARS,
};

/// `acknowledgeChangeMessages` **(ours)**: `changeId, projectId?, claimedBy, messageIds`:
/// the wait of agent `claimedBy` has shown it these messages of the item (answers,
/// verdicts), so they no longer wake it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AcknowledgeChangeMessagesInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    #[serde(with = "Text::<NonBlank, 1, NAME_MAX_CHARS>")]
    pub claimed_by: String,
    /// Messages of this item's thread (a message of another item: 404).
    #[serde(with = "List::<Text<NoNul, 1, ID_MAX_CHARS>, 1, ACKNOWLEDGE_MAX>")]
    pub message_ids: Vec<String>,
}

/// `acknowledgeChangeMessages` → `{shownMessageIds}`: the messages of the item shown to
/// the claimant so far, the latest [`crate::ACKNOWLEDGE_MAX`] (by id, time-ordered).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AcknowledgeChangeMessagesOutput {
    pub shown_message_ids: Vec<String>,
}

/// `askChangeQuestion`: "`changeId, question, authorName, option?[]`" plus **(ours)**
/// `groupId?`, `fence?` (see Leases). Options (≤ 6) become attachments of kind `option`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::fence_needs_group))]
pub struct AskChangeQuestionInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    #[serde(with = "Text::<NonBlank, 1, TEXT_MAX_CHARS>")]
    pub question: String,
    #[serde(with = "Text::<NonBlank, 1, NAME_MAX_CHARS>")]
    pub author_name: String,
    /// Option labels; each becomes an attachment of kind `option` with `url: null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<List<Text<NonBlank, 1, NAME_MAX_CHARS>, 0, OPTIONS_MAX>>"
    )]
    pub option: Option<Vec<String>>,
    /// **(ours)** Images of the options, each naming its option by `label` (equal to one
    /// of `option`, trimmed, ignoring case; a label naming none is a choice of its own):
    /// each is stored with the question and becomes an attachment of kind `option` of
    /// the question message itself, so the question arrives with its images in one
    /// write. Together at most `IMAGE_MAX_BYTES` (413 beyond).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<List<Object<OptionImage>, 0, OPTIONS_MAX>>"
    )]
    pub option_images: Option<Vec<OptionImage>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = u64::MAX)))]
    pub fence: Option<u64>,
}

/// **(ours)** An option's image in `askChangeQuestion`: `label, contentType, imageBase64`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::image_required))]
pub struct OptionImage {
    /// The option it shows: one of the question's `option` labels.
    #[serde(with = "Text::<NonBlank, 1, NAME_MAX_CHARS>")]
    pub label: String,
    #[serde(with = "Text::<NoNul, 1, SHORT_MAX_CHARS>")]
    pub content_type: String,
    /// Base64 of a png, jpeg or webp image, of the type `contentType` names.
    #[serde(with = "Text::<NoNul, 1, IMAGE_BASE64_MAX_CHARS>")]
    pub image_base64: String,
}

/// `replyToChange`: "`changeId, projectId?, body, authorName, imageBase64?,
/// contentType?, imageLabel?`" plus **(ours)** `groupId?`, `fence?`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::image_optional))]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::fence_needs_group))]
pub struct ReplyToChangeInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    #[serde(with = "Text::<NonBlank, 1, TEXT_MAX_CHARS>")]
    pub body: String,
    #[serde(with = "Text::<NonBlank, 1, NAME_MAX_CHARS>")]
    pub author_name: String,
    /// Base64 of a png, jpeg or webp image of at most 8 MiB (413 beyond), of the type
    /// `contentType` names; a `data:…;base64,` URL is read as well.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, IMAGE_BASE64_MAX_CHARS>>"
    )]
    pub image_base64: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, SHORT_MAX_CHARS>>"
    )]
    pub content_type: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, NAME_MAX_CHARS>>"
    )]
    pub image_label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = u64::MAX)))]
    pub fence: Option<u64>,
}

/// `attachChangeShot`: "`changeId, label, kind, contentType (png/jpeg/webp),
/// imageBase64, authorName`" plus **(ours)** `groupId?`, `fence?`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::image_required))]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::fence_needs_group))]
pub struct AttachChangeShotInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    #[serde(with = "Text::<NonBlank, 1, NAME_MAX_CHARS>")]
    pub label: String,
    pub kind: AttachmentKind,
    #[serde(with = "Text::<NoNul, 1, SHORT_MAX_CHARS>")]
    pub content_type: String,
    /// Base64 of a png, jpeg or webp image of at most 8 MiB (413 beyond), of the type
    /// `contentType` names; a `data:…;base64,` URL is read as well.
    #[serde(with = "Text::<NoNul, 1, IMAGE_BASE64_MAX_CHARS>")]
    pub image_base64: String,
    #[serde(with = "Text::<NonBlank, 1, NAME_MAX_CHARS>")]
    pub author_name: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = u64::MAX)))]
    pub fence: Option<u64>,
}

/// `attachChangeShot` → `{message, key}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct AttachChangeShotOutput {
    pub message: Message,
    pub key: String,
}

/// `completeChange`: "`changeId, branch?, headCommit?, note?, authorName?`" plus
/// **(ours)** `groupId?`, `fence?`. A `note` becomes an agent message.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::fence_needs_group))]
pub struct CompleteChangeInput {
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, SHORT_MAX_CHARS>>"
    )]
    pub branch: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<CommitSha, 0, SHORT_MAX_CHARS>>"
    )]
    /// **(ours)** 7 to 40 hex digits (see [`crate::commit_sha`]); anything else is 400.
    pub head_commit: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, TEXT_MAX_CHARS>>"
    )]
    pub note: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, NAME_MAX_CHARS>>"
    )]
    pub author_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = u64::MAX)))]
    pub fence: Option<u64>,
    /// **(ours)** where the commit can be seen (the agent derives it from its remote).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<HttpsLink, 0, URL_MAX_CHARS>>"
    )]
    pub commit_url: Option<String>,
    /// **(ours)** the pull (merge) request the fix is in.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<HttpsLink, 0, URL_MAX_CHARS>>"
    )]
    pub pull_request_url: Option<String>,
}

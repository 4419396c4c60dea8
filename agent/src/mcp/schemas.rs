//! What `redline mcp`'s tools take: each tool's parameters, as serde reads them and as
//! the JSON schema the client is shown states them.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::client::Error;
use crate::format::CssDetail;
use crate::rules::parse_item;

// The parameters' types are `inline`: their schemas are written out where they are used,
// as some MCP clients do not follow `$ref`.

/// An item as a tool takes it: its number (`3` or `"#3"`) or its id.
#[derive(Debug, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
pub enum ItemRef {
    /// `"3"`, `"#3"` or the item's id (a UUID).
    Text(String),
    /// The item's number.
    Number(u64),
}

impl ItemRef {
    /// As the user wrote it (`3`, `#3` or an id), for the remembered claim and messages.
    pub fn as_typed(&self) -> String {
        match self {
            ItemRef::Text(s) => s.trim().to_owned(),
            ItemRef::Number(n) => n.to_string(),
        }
    }

    /// As the server takes it.
    pub fn change_id(&self) -> Result<String, Error> {
        parse_item(&self.as_typed()).map_err(Error::Local)
    }

    /// `3` for `#3`, for the texts.
    pub fn name(&self) -> String {
        self.as_typed().trim_start_matches('#').to_owned()
    }
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct NextParams {
    /// Your agent name. With it, changes_wait also returns when the filer answers one of
    /// your questions (in a group you claimed), or checks an item you completed on the
    /// stage and sends it back as still wrong. Required to claim.
    pub claimed_by: Option<String>,
    /// Claim one changeset as one group, leased to claimedBy: the ready items of one
    /// route (at most 50), oldest route first, so another agent's changes_wait takes the
    /// next route.
    #[serde(default)]
    pub claim: bool,
    /// With claim: claim everything ready as one group (at most 50 items), leaving
    /// nothing for another agent.
    #[serde(default)]
    pub all: bool,
    /// Only items on this route (the page's path, e.g. "/orders").
    pub route: Option<String>,
    /// The claim's lease in minutes (default 30).
    #[schemars(range(min = 1, max = 1440))]
    pub lease_minutes: Option<u32>,
    /// Only items of this stage: its branch, URL or id.
    pub stage: Option<String>,
    /// How long to wait for work, in seconds (default 50; 0 looks once without waiting).
    /// When nothing comes the answer is "nothing yet": call again to keep waiting.
    #[schemars(range(max = 600))]
    pub timeout_seconds: Option<u64>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ClaimParams {
    /// The items to claim. Without it (and without groupId): every claimable item, at
    /// most 50.
    #[serde(default)]
    pub change_ids: Vec<ItemRef>,
    /// The group's title (default: "Changes on /route" or "Changes batch").
    pub title: Option<String>,
    /// Your agent name.
    pub claimed_by: String,
    /// The lease in minutes (default 30).
    #[schemars(range(min = 1, max = 1440))]
    pub lease_minutes: Option<u32>,
    /// Renew this group's lease (yours); with changeIds, also add those items to it.
    pub group_id: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReleaseParams {
    /// The group to give up (yours).
    pub group_id: String,
    /// Your agent name: the group's claimant.
    pub claimed_by: String,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShowParams {
    /// The item: its number (3 or "#3") or its id.
    pub change_id: ItemRef,
    /// How much of each circled element's computed styles to show: "changed" (the
    /// default: what differs from its parent or its tag's default), "full" (font,
    /// colour, background, spacing, size, display and position) or "none".
    #[serde(default)]
    pub css: Option<CssDetail>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct AskParams {
    /// The item: its number (3 or "#3") or its id.
    pub change_id: ItemRef,
    /// The question for the person who filed the item.
    pub question: String,
    /// Answers to offer (at most 6); the person picks one or writes their own. Each is
    /// its label, or an object with its label and an image (imagePath or imageBase64)
    /// that is sent with the question, so the person sees the question with its images.
    #[serde(default)]
    #[schemars(length(max = 6))]
    pub options: Vec<AskOption>,
    /// Your agent name, shown in the thread (default: the name you last claimed as).
    pub author_name: Option<String>,
}

/// An option of `changes_ask`: a label, or a label with its image.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(untagged)]
#[schemars(inline)]
pub enum AskOption {
    /// The option's label.
    Label(String),
    /// The option's label and its image.
    WithImage(OptionWithImage),
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
#[schemars(inline)]
pub struct OptionWithImage {
    /// The option's label.
    pub label: String,
    /// Its image: a png, jpeg or webp file under this checkout or your temp
    /// folder ($TMPDIR/redline-<uid>). Not with imageBase64.
    pub image_path: Option<String>,
    /// Its image, base64-encoded png, jpeg or webp (a data: URL works too). Not with
    /// imagePath.
    pub image_base64: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ReplyParams {
    /// The item: its number (3 or "#3") or its id.
    pub change_id: ItemRef,
    /// The message.
    pub message: String,
    /// An image to attach: a png, jpeg or webp file under this checkout or your temp
    /// folder, $TMPDIR/redline-<uid> (a path relative to this server's working directory, or
    /// absolute). Not with imageBase64.
    pub image_path: Option<String>,
    /// An image to attach, base64-encoded png, jpeg or webp (a data: URL works too).
    /// Not with imagePath.
    pub image_base64: Option<String>,
    /// The image's label (default: the file name, or "image").
    pub image_label: Option<String>,
    /// Your agent name, shown in the thread (default: the name you last claimed as).
    pub author_name: Option<String>,
}

/// What an attached image is for.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[schemars(inline)]
pub enum ShotKindParam {
    /// Something to look at: a before/after, a proof of the fix.
    #[default]
    Evidence,
    /// A choice the person can pick as the answer to your open question (label it like
    /// one of the question's options to show that option).
    Option,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ShotParams {
    /// The item: its number (3 or "#3") or its id.
    pub change_id: ItemRef,
    /// What the image shows.
    pub label: String,
    /// evidence (default) or option.
    #[serde(default)]
    pub kind: ShotKindParam,
    /// The image: a png, jpeg or webp file under this checkout or your temp
    /// folder, $TMPDIR/redline-<uid> (relative to this server's working directory, or absolute). Give this
    /// or imageBase64.
    pub image_path: Option<String>,
    /// The image, base64-encoded png, jpeg or webp (a data: URL works too). Give this or
    /// imagePath.
    pub image_base64: Option<String>,
    /// Your agent name, shown in the thread (default: the name you last claimed as).
    pub author_name: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct DoneParams {
    /// The item: its number (3 or "#3") or its id.
    pub change_id: ItemRef,
    /// A note for the person who filed it: what was changed (added to the thread).
    pub note: Option<String>,
    /// The commit that fixed it (default: the newest commit on the branch of the git checkout this
    /// server runs in whose `Change-Id:` or `Change: #N` trailer names the item).
    pub commit: Option<String>,
    /// The branch (default: the checkout's; none on a detached HEAD).
    pub branch: Option<String>,
    /// The pull (merge) request the fix is in, by number (default: the one the commit's
    /// `PR: #N` or `Pull-Request: N` trailer names); linked when the remote is on GitHub
    /// or GitLab.
    #[schemars(range(min = 1))]
    pub pr: Option<u64>,
    /// Your agent name (default: the name you last claimed as).
    pub author_name: Option<String>,
}

#[derive(Debug, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct ListParams {
    /// Include done and dismissed items.
    #[serde(default)]
    pub all: bool,
    /// Only items of this stage: its branch, URL or id.
    pub stage: Option<String>,
    /// At most this many items (default 50).
    #[schemars(range(min = 1, max = 200))]
    pub limit: Option<u32>,
    /// The next page: the cursor the page before named.
    pub cursor: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn items_are_numbers_or_ids() {
        let args: ShowParams = serde_json::from_str(r#"{"changeId": 7}"#).unwrap();
        assert_eq!((args.change_id.change_id().unwrap(), args.change_id.name()), ("7".into(), "7".into()));
        let args: ShowParams = serde_json::from_str(r##"{"changeId": "#7"}"##).unwrap();
        assert_eq!(args.change_id.name(), "7");
        assert!(serde_json::from_str::<ShowParams>(r#"{"changeId": 7, "extra": 1}"#).is_err());
        assert_eq!(args.css, None, "the styles that changed, by default");
        let args: ShowParams = serde_json::from_str(r#"{"changeId": 7, "css": "full"}"#).unwrap();
        assert_eq!(args.css, Some(CssDetail::Full));
        assert!(serde_json::from_str::<ShowParams>(r#"{"changeId": 7, "css": "all"}"#).is_err());
    }
}

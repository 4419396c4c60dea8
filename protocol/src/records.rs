//! The records of protocol.md ("Records"): Change, Capture, Element, Group, Message,
//! Stage and their enums, with the exact camelCase wire names.
//!
//! Fields the protocol writes as `x|null` are `Option<T>` that serialize as `null`
//! and default to `None` when absent, so a record from Fabric that omits one of our
//! **(ours)** fields still reads.

use serde::{Deserialize, Serialize};

use crate::bound::{List, Object};
use crate::styles::FAILED_REQUESTS_MAX;
use crate::{ELEMENTS_MAX, FailedRequest, STROKE_POINTS_MAX, Timestamp};

/// "`status` is one of `open`, `claimed`, `needs_answer`, `in_progress`, `done`,
/// `dismissed`."
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ChangeStatus {
    Open,
    Claimed,
    NeedsAnswer,
    InProgress,
    Done,
    Dismissed,
}

impl ChangeStatus {
    pub const ALL: [ChangeStatus; 6] = [
        ChangeStatus::Open,
        ChangeStatus::Claimed,
        ChangeStatus::NeedsAnswer,
        ChangeStatus::InProgress,
        ChangeStatus::Done,
        ChangeStatus::Dismissed,
    ];

    /// The wire name, e.g. `needs_answer`.
    pub const fn as_str(self) -> &'static str {
        match self {
            ChangeStatus::Open => "open",
            ChangeStatus::Claimed => "claimed",
            ChangeStatus::NeedsAnswer => "needs_answer",
            ChangeStatus::InProgress => "in_progress",
            ChangeStatus::Done => "done",
            ChangeStatus::Dismissed => "dismissed",
        }
    }

    pub fn from_wire(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// Where an item was filed from: "`source` (`extension`, `panel`, `console`, `cli`)".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Source {
    Extension,
    Panel,
    Console,
    Cli,
}

impl Source {
    pub const ALL: [Source; 4] = [Source::Extension, Source::Panel, Source::Console, Source::Cli];

    pub const fn as_str(self) -> &'static str {
        match self {
            Source::Extension => "extension",
            Source::Panel => "panel",
            Source::Console => "console",
            Source::Cli => "cli",
        }
    }

    pub fn from_wire(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// "`type` (`production` | `environment` | `preview`)" of a Stage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum StageType {
    Production,
    Environment,
    Preview,
}

impl StageType {
    pub const ALL: [StageType; 3] = [StageType::Production, StageType::Environment, StageType::Preview];

    pub const fn as_str(self) -> &'static str {
        match self {
            StageType::Production => "production",
            StageType::Environment => "environment",
            StageType::Preview => "preview",
        }
    }

    pub fn from_wire(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// "`authorKind` (`agent` | `user`)" of a Message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AuthorKind {
    Agent,
    User,
}

impl AuthorKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            AuthorKind::Agent => "agent",
            AuthorKind::User => "user",
        }
    }

    pub fn from_wire(s: &str) -> Option<Self> {
        [AuthorKind::Agent, AuthorKind::User].into_iter().find(|v| v.as_str() == s)
    }
}

/// "`kind: "option"|"evidence"`" of an Attachment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum AttachmentKind {
    Option,
    Evidence,
}

impl AttachmentKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            AttachmentKind::Option => "option",
            AttachmentKind::Evidence => "evidence",
        }
    }

    pub fn from_wire(s: &str) -> Option<Self> {
        [AttachmentKind::Option, AttachmentKind::Evidence].into_iter().find(|v| v.as_str() == s)
    }
}

/// **(ours)** A message's `type`: which operation made it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum MessageType {
    /// `askChangeQuestion`.
    Question,
    /// `answerChangeQuestion`.
    Answer,
    /// `replyToChange`.
    Reply,
    /// `attachChangeShot`.
    Shot,
    /// A `completeChange` note.
    Note,
    /// `verifyChange`.
    Verdict,
}

impl MessageType {
    pub const ALL: [MessageType; 6] = [
        MessageType::Question,
        MessageType::Answer,
        MessageType::Reply,
        MessageType::Shot,
        MessageType::Note,
        MessageType::Verdict,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            MessageType::Question => "question",
            MessageType::Answer => "answer",
            MessageType::Reply => "reply",
            MessageType::Shot => "shot",
            MessageType::Note => "note",
            MessageType::Verdict => "verdict",
        }
    }

    pub fn from_wire(s: &str) -> Option<Self> {
        MessageType::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// **(ours)** `verifyChange`'s `verdict`: what the person saw on the live stage. `fixed`:
/// the fix works, the item is verified; `still_wrong`: it does not, and the item goes
/// back to the agents at once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Fixed,
    StillWrong,
}

impl Verdict {
    pub const ALL: [Verdict; 2] = [Verdict::Fixed, Verdict::StillWrong];

    pub const fn as_str(self) -> &'static str {
        match self {
            Verdict::Fixed => "fixed",
            Verdict::StillWrong => "still_wrong",
        }
    }

    pub fn from_wire(s: &str) -> Option<Self> {
        Verdict::ALL.into_iter().find(|v| v.as_str() == s)
    }
}

/// A point `{x, y}` in viewport CSS pixels (a stroke sample, or **(ours)** `scroll`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Point {
    pub x: f64,
    pub y: f64,
}

/// A rectangle `{x, y, width, height}` in viewport CSS pixels.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Rect {
    pub x: f64,
    pub y: f64,
    pub width: f64,
    pub height: f64,
}

/// The capture's `bounds` is a [`Rect`].
pub type Bounds = Rect;

/// "`viewport {width,height}`" of the filer's window, in CSS pixels.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct Viewport {
    pub width: f64,
    pub height: f64,
}

/// "`capture` = `{stroke: [{x,y}], bounds: {x,y,width,height}|null, elements: [Element]}`,
/// in viewport CSS pixels at the moment of capture, plus **(ours)** `devicePixelRatio`
/// and `scroll {x,y}`", and **(ours, beyond protocol.md)** `failedRequests`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Capture {
    #[serde(default, with = "List::<Object<Point>, 0, STROKE_POINTS_MAX>")]
    pub stroke: Vec<Point>,
    #[serde(default, deserialize_with = "crate::bounded::opt_object")]
    pub bounds: Option<Bounds>,
    #[serde(default, with = "List::<Object<Element>, 0, ELEMENTS_MAX>")]
    pub elements: Vec<Element>,
    /// **(ours)**
    #[serde(default)]
    pub device_pixel_ratio: Option<f64>,
    /// **(ours)** the page's scroll offset at capture.
    #[serde(default, deserialize_with = "crate::bounded::opt_object")]
    pub scroll: Option<Point>,
    /// **(ours)** the page's requests that failed since it loaded, oldest first (on
    /// stages whose console is kept); empty in items filed before there were any.
    #[serde(default, with = "List::<Object<FailedRequest>, 0, FAILED_REQUESTS_MAX>")]
    pub failed_requests: Vec<FailedRequest>,
}

/// "Element = `{testId|null, sourceAnchor|null, cssPath|null, text|null, rect|null}`
/// plus **(ours)** `componentTestId|null` (nearest ancestor component-root test id),
/// `role|null`, `name|null` (accessible name), `tag`", and **(ours, beyond protocol.md)**
/// `styles`.
///
/// Its strings' lengths are stated to the schema only, not bounded while read: the
/// server checks them once the capture is parsed ([`crate::validate_capture`], which
/// names the element), and a record read from another server may hold longer ones.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Element {
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ELEMENT_ATTR_MAX_CHARS)))]
    pub test_id: Option<String>,
    /// `data-fabric-src`, e.g. `src/routes/app.orders.tsx:42`, read "at the stage's `gitSha`".
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ELEMENT_ATTR_MAX_CHARS)))]
    pub source_anchor: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::CSS_PATH_MAX_CHARS)))]
    pub css_path: Option<String>,
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ELEMENT_TEXT_MAX_CHARS)))]
    pub text: Option<String>,
    #[serde(default, deserialize_with = "crate::bounded::opt_object")]
    pub rect: Option<Rect>,
    /// **(ours)**
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ELEMENT_ATTR_MAX_CHARS)))]
    pub component_test_id: Option<String>,
    /// **(ours)**
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ELEMENT_WORD_MAX_CHARS)))]
    pub role: Option<String>,
    /// **(ours)** the accessible name.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ELEMENT_TEXT_MAX_CHARS)))]
    pub name: Option<String>,
    /// **(ours)** lower-case tag name, e.g. `button`. Empty when the sender omitted it.
    #[serde(default)]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ELEMENT_WORD_MAX_CHARS)))]
    pub tag: String,
    /// **(ours)** the compact set of computed styles; `null` for elements past the first
    /// few of a capture and in items filed before there were any.
    #[serde(default, deserialize_with = "crate::bounded::opt_object")]
    pub styles: Option<crate::ElementStyles>,
}

/// "Change (an item)". `held` is computed on the server's clock (see [`crate::is_held`]);
/// `screenshotUrl` is filled on read outputs only.
///
/// `C` is how `capture` is held: parsed (a [`Capture`], what clients read), or on the
/// server the JSON text it stored, passed through to answers without a parse and a
/// serialisation each (the same on the wire).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase", bound(deserialize = "C: Deserialize<'de>"))]
pub struct Change<C = Capture> {
    pub change_id: String,
    /// Decimal string per project, shown `#7`.
    pub short_id: String,
    pub project_id: String,
    pub stage_id: String,
    #[serde(default)]
    pub group_id: Option<String>,
    pub title: String,
    #[serde(default)]
    pub body: Option<String>,
    pub status: ChangeStatus,
    /// The path the filer was on.
    #[serde(default)]
    pub route: Option<String>,
    /// The build the item was filed against.
    #[serde(default)]
    pub git_sha: Option<String>,
    #[serde(default)]
    pub deployment_id: Option<String>,
    #[serde(default)]
    pub locale: Option<String>,
    #[serde(default)]
    pub viewport: Option<Viewport>,
    #[serde(default)]
    pub capture: Option<C>,
    #[serde(default)]
    pub screenshot_key: Option<String>,
    #[serde(default)]
    pub console_errors: Vec<String>,
    pub source: Source,
    /// **(ours)** the name of the person whose token filed it.
    #[serde(default)]
    pub filed_by: Option<String>,
    #[serde(default)]
    pub branch: Option<String>,
    #[serde(default)]
    pub head_commit: Option<String>,
    #[serde(default)]
    pub resolved_at: Option<Timestamp>,
    /// **(ours)** true once the stage serves a build that contains `headCommit`.
    #[serde(default)]
    pub live: Option<bool>,
    /// **(ours)** when a person checked the fix on the live stage and said `fixed`
    /// (see `verifyChange`); cleared when the item is reopened.
    #[serde(default)]
    pub verified_at: Option<Timestamp>,
    /// **(ours)** the name of the person who said `fixed`.
    #[serde(default)]
    pub verified_by: Option<String>,
    /// **(ours, beyond protocol.md)** the name the item was last completed as:
    /// `completeChange`'s `authorName`, else the claimant of its group. Kept when a
    /// `still_wrong` verdict reopens the item (which leaves it in no group), so the
    /// agent that did the work knows the verdict is for it.
    #[serde(default)]
    pub completed_by: Option<String>,
    /// **(ours)** where `headCommit` can be seen on the checkout's forge (GitHub or
    /// GitLab), as the agent derived it from its remote; `https` only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_url: Option<String>,
    /// **(ours)** the pull (merge) request the fix is in, when the agent named one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pull_request_url: Option<String>,
    pub created_at: Timestamp,
    pub held: bool,
    #[serde(default)]
    pub held_until: Option<Timestamp>,
    /// A signed, expiring link to the screenshot; read outputs only.
    #[serde(default)]
    pub screenshot_url: Option<String>,
    /// **(ours)** In list answers (a summary, whose `capture` is null): how many elements
    /// the capture holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element_count: Option<u32>,
    /// **(ours)** In list answers (whose `consoleErrors` is empty): how many were filed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub console_error_count: Option<u32>,
    /// **(ours)** In list answers: how many messages the thread has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_count: Option<u32>,
}

/// "Group (a claim)": `groupId, projectId, title, claimedBy|null, claimExpiresAt|null,
/// createdAt`, plus **(ours)** `fence` ("a number that grows with every claim in the
/// project").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Group {
    pub group_id: String,
    pub project_id: String,
    pub title: String,
    #[serde(default)]
    pub claimed_by: Option<String>,
    #[serde(default)]
    pub claim_expires_at: Option<Timestamp>,
    pub created_at: Timestamp,
    /// **(ours)**; 0 when the sender (e.g. Fabric) has no fences.
    #[serde(default)]
    pub fence: u64,
}

/// An attachment of a Message: `{key, label, kind: "option"|"evidence", url|null}`.
/// `url` is filled on read outputs only; an option without an image has `url: null`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Attachment {
    pub key: String,
    pub label: String,
    pub kind: AttachmentKind,
    #[serde(default)]
    pub url: Option<String>,
}

/// "Message (the thread)".
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Message {
    pub message_id: String,
    pub change_id: String,
    pub author_kind: AuthorKind,
    #[serde(default)]
    pub author_name: Option<String>,
    pub body: String,
    #[serde(default)]
    pub attachments: Vec<Attachment>,
    /// The chosen option's `key`.
    #[serde(default)]
    pub chosen_option: Option<String>,
    pub created_at: Timestamp,
    /// **(ours)** What the message is. Optional on the wire, so a sender that does not
    /// state it (Fabric) still parses; [`Message::role`] then infers it.
    #[serde(rename = "type", default, skip_serializing_if = "Option::is_none")]
    pub message_type: Option<MessageType>,
}

/// "Stage": a place the app is deployed. "Production maps to branch `main`."
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Stage {
    pub stage_id: String,
    pub project_id: String,
    pub branch: String,
    #[serde(rename = "type")]
    pub stage_type: StageType,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub git_sha: Option<String>,
    #[serde(default)]
    pub deployment_id: Option<String>,
    pub changes_enabled: bool,
    pub created_at: Timestamp,
}

/// **(ours)** An agent as the queue sees it (`listAgents`): the name it claims and writes
/// as, whether a wait of it is open right now (`redline wait --claimed-by NAME`, MCP
/// `changes_wait`), and when it was last seen waiting or writing.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AgentPresence {
    pub name: String,
    pub waiting: bool,
    pub last_seen_at: Option<Timestamp>,
}

/// **(ours)** One of a project's outgoing webhooks as `listWebhooks` shows it to an
/// admin: never its secret, and its address without the path, which for Slack's and
/// most receivers' URLs is itself a secret.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Webhook {
    pub webhook_id: String,
    /// Scheme, host and port of the receiver (`https://hooks.slack.com`).
    pub target: String,
    /// The event types sent (the event stream's `type`s).
    pub events: Vec<String>,
    /// `json` or `slack`.
    pub format: String,
    pub created_at: Timestamp,
    /// Deliveries waiting to be sent (including those being retried).
    pub pending: u64,
    /// Deliveries given up on (retried for a day).
    pub failed: u64,
    /// The latest attempt, if any.
    #[serde(default)]
    pub last_attempt: Option<WebhookAttempt>,
}

/// **(ours)** A webhook's latest delivery attempt.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct WebhookAttempt {
    pub at: Timestamp,
    /// Whether the receiver answered 2xx.
    pub ok: bool,
    /// The receiver's HTTP status, when it answered.
    #[serde(default)]
    pub http_status: Option<u16>,
    /// What went wrong, when it did (the receiver's status or the network error).
    #[serde(default)]
    pub error: Option<String>,
}

/// **(ours)** Durations in milliseconds over a set of items (`getStats`).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct DurationStats {
    /// How many durations were measured.
    pub count: u64,
    #[serde(default)]
    pub median_ms: Option<u64>,
    #[serde(default)]
    pub p90_ms: Option<u64>,
}

/// **(ours)** The loop's numbers over the items filed since a time, for the whole
/// project, one agent (by the name items were completed as) or one filer.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct LoopStats {
    /// The agent's or filer's name; absent for the project's totals.
    #[serde(default)]
    pub name: Option<String>,
    pub filed: u64,
    pub done: u64,
    pub dismissed: u64,
    pub verified: u64,
    /// Items a `still_wrong` verdict sent back (at least once).
    pub still_wrong: u64,
    /// `stillWrong` over the items that got a verdict; absent when none did.
    #[serde(default)]
    pub still_wrong_rate: Option<f64>,
    /// Questions asked over items filed.
    #[serde(default)]
    pub questions_per_item: Option<f64>,
    /// From filing to (the latest) `done`.
    pub to_done: DurationStats,
    /// From filing to `verified`.
    pub to_verified: DurationStats,
}

//! The operations of protocol.md ("Operations"): one input and one output struct per
//! RPC, and a marker type implementing [`Rpc`] that ties the RPC name to both, so a
//! client writes `client.call::<GetSession>(GetSessionInput {})`.
//!
//! Optional inputs (`x?` in the tables) are `Option<T>`, absent when `None` so a
//! request to Fabric carries only what the caller set. Every input that takes a
//! `changeId` also takes `projectId?`: "every call that takes a `changeId` also takes
//! `#7` or `7` together with `projectId`".

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::group_token::*;
use crate::records::*;
use crate::{Scope, Timestamp};

/// One operation: `POST {apiUrl}/rpc/{NAME}` with `Input`, answered with `Output`.
pub trait Rpc {
    /// The exact RPC name, e.g. `getSession`.
    const NAME: &'static str;
    /// The scope the token needs; `None` for calls any valid token (or none) may make.
    const SCOPE: Option<Scope>;
    type Input: Serialize + DeserializeOwned;
    type Output: Serialize + DeserializeOwned;
}

/// The request body: `{"rpcName": name, "data": {...}}`. The server also accepts the
/// bare input object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Envelope<T> {
    pub rpc_name: String,
    pub data: T,
}

impl<T> Envelope<T> {
    /// The envelope for RPC `R`.
    pub fn new<R: Rpc<Input = T>>(data: T) -> Self {
        Envelope { rpc_name: R::NAME.to_owned(), data }
    }
}

macro_rules! rpcs {
    ($( $(#[$doc:meta])* $marker:ident = $name:literal, $scope:expr, $input:ty => $output:ty; )*) => {
        $(
            $(#[$doc])*
            #[derive(Clone, Copy, Debug)]
            pub enum $marker {}
            impl Rpc for $marker {
                const NAME: &'static str = $name;
                const SCOPE: Option<Scope> = $scope;
                type Input = $input;
                type Output = $output;
            }
        )*
        /// Every RPC name of the protocol.
        pub const RPC_NAMES: &[&str] = &[$($name),*];
    };
}

rpcs! {
    /// Agent: list items.
    ListChanges = "listChanges", Some(Scope::Read), ListChangesInput => ListChangesOutput;
    /// Agent: one item with its thread.
    GetChange = "getChange", Some(Scope::Read), GetChangeInput => GetChangeOutput;
    /// **(ours)** How many items of each status, and what waits for the caller.
    CountChanges = "countChanges", Some(Scope::Read), CountChangesInput => CountChangesOutput;
    /// Agent: claim items as a group, or renew a group's lease.
    ClaimChanges = "claimChanges", Some(Scope::Write), ClaimChangesInput => ClaimChangesOutput;
    /// Agent **(ours)**: give up a claimed group: its lease ends, its items not done
    /// go back to the queue.
    ReleaseGroup = "releaseGroup", Some(Scope::Write), ReleaseGroupInput => ClaimChangesOutput;
    /// Agent **(ours)**: a wait has shown the claimant these messages.
    AcknowledgeChangeMessages = "acknowledgeChangeMessages", Some(Scope::Write), AcknowledgeChangeMessagesInput => AcknowledgeChangeMessagesOutput;
    /// **(ours)** The project's agents: which is waiting now, when each was last seen.
    ListAgents = "listAgents", Some(Scope::Read), ListAgentsInput => ListAgentsOutput;
    /// Agent **(ours)**: a token limited to one claimed group's items, for the agent
    /// process `redline run` starts on that group.
    CreateGroupToken = "createGroupToken", Some(Scope::Write), CreateGroupTokenInput => GroupToken;
    /// Agent **(ours)**: end a token [`CreateGroupToken`] made.
    RevokeGroupToken = "revokeGroupToken", Some(Scope::Write), RevokeGroupTokenInput => RevokeGroupTokenOutput;
    /// Agent: ask the filer a question (→ `needs_answer`).
    AskChangeQuestion = "askChangeQuestion", Some(Scope::Write), AskChangeQuestionInput => MessageOutput;
    /// Agent: add a message to the thread.
    ReplyToChange = "replyToChange", Some(Scope::Write), ReplyToChangeInput => MessageOutput;
    /// Agent: attach an image (an option or evidence).
    AttachChangeShot = "attachChangeShot", Some(Scope::Write), AttachChangeShotInput => AttachChangeShotOutput;
    /// Agent: mark an item `done`.
    CompleteChange = "completeChange", Some(Scope::Write), CompleteChangeInput => ChangeOutput;
    /// Filer: file an item.
    CreateChange = "createChange", Some(Scope::File), CreateChangeInput => ChangeOutput;
    /// Filer **(ours)**: store a screenshot before filing.
    UploadShot = "uploadShot", Some(Scope::File), UploadShotInput => UploadShotOutput;
    /// Reviewer: answer the agent's question (→ `in_progress`).
    AnswerChangeQuestion = "answerChangeQuestion", Some(Scope::File), AnswerChangeQuestionInput => MessageOutput;
    /// Reviewer: dismiss or reopen.
    SetChangeStatus = "setChangeStatus", Some(Scope::File), SetChangeStatusInput => ChangeOutput;
    /// Filer **(ours)**: edit while held.
    UpdateChange = "updateChange", Some(Scope::File), UpdateChangeInput => ChangeOutput;
    /// Filer **(ours)**: withdraw while held.
    WithdrawChange = "withdrawChange", Some(Scope::File), WithdrawChangeInput => ChangeOutput;
    /// Filer **(ours)**: "send now".
    ReleaseChanges = "releaseChanges", Some(Scope::File), ReleaseChangesInput => ChangesOutput;
    /// Reviewer **(ours)**: say whether a `done` item's fix works on the live stage.
    VerifyChange = "verifyChange", Some(Scope::File), VerifyChangeInput => VerifyChangeOutput;
    /// Filer **(ours)**: what the page found of an item's elements on a later build.
    RecordRefind = "recordRefind", Some(Scope::File), crate::RecordRefindInput => crate::RecordRefindOutput;
    /// **(ours)** A project's outgoing webhooks and how their deliveries went (admins).
    ListWebhooks = "listWebhooks", Some(Scope::Admin), ListWebhooksInput => ListWebhooksOutput;
    /// **(ours)** The loop's numbers: filed, done, time to done and to verified, per
    /// agent and per filer.
    GetStats = "getStats", Some(Scope::Read), GetStatsInput => GetStatsOutput;
    /// The project's stages.
    ListStages = "listStages", Some(Scope::Read), ListStagesInput => ListStagesOutput;
    /// **(ours)** the stage whose `url` is the longest prefix of a page URL.
    ResolveStage = "resolveStage", Some(Scope::Read), ResolveStageInput => ResolvedStage;
    /// Who the token belongs to.
    GetSession = "getSession", None, GetSessionInput => Session;
    /// Sign-in: start the device flow.
    RequestCliAuth = "requestCliAuth", None, RequestCliAuthInput => CliAuthRequest;
    /// Sign-in: poll the device flow.
    PollCliAuth = "pollCliAuth", None, PollCliAuthInput => CliAuthPoll;
}

// ---- agent side ----

/// `listChanges`: "`projectId, stageId?, route?, status?[], groupId?, pickupOnly,
/// includeDone, limit (≤200, default 50)`".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListChangesInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub stage_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::URL_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::URL_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub route: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_vec::<_, _, { crate::STATUSES_MAX }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::STATUSES_MAX)))]
    pub status: Option<Vec<ChangeStatus>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub group_id: Option<String>,
    /// Only items an agent may claim now.
    #[serde(default)]
    pub pickup_only: bool,
    /// "`done` and `dismissed` are hidden from lists unless `includeDone`."
    #[serde(default)]
    pub include_done: bool,
    /// ≤ [`crate::LIST_LIMIT_MAX`], default [`crate::LIST_LIMIT_DEFAULT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = crate::LIST_LIMIT_MAX)))]
    pub limit: Option<u32>,
    /// **(ours)** The next page: a previous answer's `nextCursor`, sent with the same
    /// filter and `order`. Opaque to clients.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::CURSOR_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::CURSOR_MAX_CHARS), regex(pattern = crate::schema::CURSOR)))]
    pub cursor: Option<String>,
    /// **(ours)** `oldest` first (by `shortId`, the default, as Fabric lists) or `newest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<ListOrder>,
    /// **(ours)** Only these items (change ids, or `#7` / `7`), e.g. to refresh the rows an
    /// event named; the other filters still apply.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_vec_of_strings::<_, { crate::CLAIM_NAMES_MAX }, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::CLAIM_NAMES_MAX), inner(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF))))]
    pub change_ids: Option<Vec<String>>,
}

/// **(ours)** The order of a `listChanges` page.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum ListOrder {
    #[default]
    Oldest,
    Newest,
}

/// `listChanges` → `{changes, groups}` (the groups of the listed items), plus **(ours)**
/// `nextCursor` and `total`. Our server lists summaries: each change's `capture` and
/// `body` are null and `consoleErrors` empty, with `elementCount`, `consoleErrorCount`
/// and `messageCount` saying what `getChange` holds (docs/protocol-additions.md,
/// "Lists are summaries").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListChangesOutput<C = Capture> {
    pub changes: Vec<Change<C>>,
    pub groups: Vec<Group>,
    /// **(ours)** The cursor for the next page; absent on the last one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    /// **(ours)** How many items match the filter (every page, not this one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<u64>,
}

/// `getChange`: `changeId, projectId?`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GetChangeInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF)))]
    pub change_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: Option<String>,
    /// **(ours)** The agent reading: the answer then says which of the thread's messages
    /// were already shown to it as work (`shownMessageIds`, see
    /// `acknowledgeChangeMessages`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::NAME_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub claimed_by: Option<String>,
    /// **(ours)** How many of the thread's latest messages to return: ≤
    /// [`crate::THREAD_PAGE_MAX`], default [`crate::THREAD_PAGE_DEFAULT`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = crate::THREAD_PAGE_MAX)))]
    pub message_limit: Option<u32>,
    /// **(ours)** Older messages: a previous answer's `olderCursor`; the answer then holds
    /// the messages before it.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::CURSOR_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::CURSOR_MAX_CHARS), regex(pattern = crate::schema::CURSOR)))]
    pub before: Option<String>,
}

/// `getChange` → `{change, thread, stageUrl}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GetChangeOutput<C = Capture> {
    pub change: Change<C>,
    pub thread: Vec<Message>,
    #[serde(default)]
    pub stage_url: Option<String>,
    /// **(ours)** With `claimedBy`: the ids of the messages of `thread` (this page)
    /// already shown to that claimant by a wait (`acknowledgeChangeMessages`). Absent
    /// without `claimedBy`, and from servers that do not keep it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shown_message_ids: Option<Vec<String>>,
    /// **(ours)** `thread` is the latest messages, oldest first; this cursor (for `before`)
    /// reads the ones before them, absent when there are none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub older_cursor: Option<String>,
    /// **(ours)** How many messages the whole thread has.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message_count: Option<u64>,
    /// **(ours)** The filer's latest finding on a later build (`recordRefind`), if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refind: Option<crate::Refind>,
}

/// `countChanges` **(ours)**: `projectId, stageId?`: how many items of each status, and
/// what waits for the caller, in one small answer (the toolbar badge's poll).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CountChangesInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub stage_id: Option<String>,
}

/// `countChanges` → `{byStatus, held, waiting, waitingTotal}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CountChangesOutput {
    pub by_status: StatusCounts,
    /// Items held in their grace window now.
    pub held: u64,
    /// What waits for the caller (the person the token belongs to): items they filed
    /// (or filed by nobody named) that ask them a question, or are `done`, live and not
    /// yet checked; newest first, at most [`crate::WAITING_MAX`].
    pub waiting: Vec<WaitingChange>,
    /// How many wait for the caller in all (`waiting` may hold fewer).
    pub waiting_total: u64,
}

/// How many items have each status.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub struct StatusCounts {
    pub open: u64,
    pub claimed: u64,
    pub needs_answer: u64,
    pub in_progress: u64,
    pub done: u64,
    pub dismissed: u64,
}

/// An item waiting for the caller, and why.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct WaitingChange {
    pub change_id: String,
    pub short_id: String,
    pub title: String,
    pub reason: WaitingReason,
}

/// Why an item waits for the person who filed it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum WaitingReason {
    /// `needs_answer`: the agent asked.
    Question,
    /// `done` and live, not yet checked (`verifyChange`).
    Check,
}

/// `acknowledgeChangeMessages` **(ours)**: `changeId, projectId?, claimedBy, messageIds`:
/// the wait of agent `claimedBy` has shown it these messages of the item (answers,
/// verdicts), so they no longer wake it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AcknowledgeChangeMessagesInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF)))]
    pub change_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: Option<String>,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::NAME_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub claimed_by: String,
    /// Messages of this item's thread (a message of another item: 404).
    #[serde(
        deserialize_with = "crate::bounded::vec_of_strings::<_, { crate::ACKNOWLEDGE_MAX }, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ACKNOWLEDGE_MAX), inner(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL))))]
    pub message_ids: Vec<String>,
}

/// `listAgents` **(ours)**: `projectId`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListAgentsInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: String,
}

/// `listAgents` → `{agents}`: the agents seen in the last [`crate::AGENTS_SEEN_DAYS`]
/// days, the latest seen first, at most [`crate::AGENTS_MAX`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListAgentsOutput {
    pub agents: Vec<AgentPresence>,
}

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

/// `getStats` **(ours)**: `projectId, sinceDays?` (items filed in the last `sinceDays`
/// days, default [`crate::STATS_DEFAULT_DAYS`]).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct GetStatsInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
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

/// `acknowledgeChangeMessages` → `{shownMessageIds}`: the messages of the item shown to
/// the claimant so far, the latest [`crate::ACKNOWLEDGE_MAX`] (by id, time-ordered).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct AcknowledgeChangeMessagesOutput {
    pub shown_message_ids: Vec<String>,
}

/// `claimChanges`: "`projectId, groupId?, changeIds?, title?, claimedBy, leaseMinutes?`".
/// No `changeIds` (and no `groupId`) claims every claimable item, at most 50.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ClaimChangesInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub group_id: Option<String>,
    /// Change ids, or `#7` / `7` short ids of `projectId`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_vec_of_strings::<_, { crate::CLAIM_NAMES_MAX }, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::CLAIM_NAMES_MAX), inner(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF))))]
    pub change_ids: Option<Vec<String>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::TITLE_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::TITLE_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub title: Option<String>,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::NAME_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub claimed_by: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(min = 1, max = crate::MAX_LEASE_MINUTES)))]
    pub lease_minutes: Option<u32>,
}

/// `claimChanges` → `{group, changes}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct ClaimChangesOutput<C = Capture> {
    pub group: Group,
    pub changes: Vec<Change<C>>,
}

/// `releaseGroup` **(ours)**: `projectId, groupId, claimedBy` (the group's claimant).
/// The lease ends now; the items not `done` or `dismissed` become `open` in no group,
/// claimable at once. Answers `{group, changes}`: the group as it ends, and the items
/// that went back.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReleaseGroupInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: String,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub group_id: String,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::NAME_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub claimed_by: String,
}

/// `askChangeQuestion`: "`changeId, question, authorName, option?[]`" plus **(ours)**
/// `groupId?`, `fence?` (see Leases). Options (≤ 6) become attachments of kind `option`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::fence_needs_group))]
pub struct AskChangeQuestionInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF)))]
    pub change_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: Option<String>,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::TEXT_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::TEXT_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub question: String,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::NAME_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub author_name: String,
    /// Option labels; each becomes an attachment of kind `option` with `url: null`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_vec_of_strings::<_, { crate::OPTIONS_MAX }, { crate::NAME_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::OPTIONS_MAX), inner(length(min = 1, max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK))))]
    pub option: Option<Vec<String>>,
    /// **(ours)** Images of the options, each naming its option by `label` (equal to one
    /// of `option`, trimmed, ignoring case; a label naming none is a choice of its own):
    /// each is stored with the question and becomes an attachment of kind `option` of
    /// the question message itself, so the question arrives with its images in one
    /// write. Together at most `IMAGE_MAX_BYTES` (413 beyond).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_vec_of_objects::<_, _, { crate::OPTIONS_MAX }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::OPTIONS_MAX)))]
    pub option_images: Option<Vec<OptionImage>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
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
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::NAME_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub label: String,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::SHORT_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::SHORT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub content_type: String,
    /// Base64 of a png, jpeg or webp image, of the type `contentType` names.
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::IMAGE_BASE64_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::IMAGE_BASE64_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
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
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF)))]
    pub change_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: Option<String>,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::TEXT_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::TEXT_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub body: String,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::NAME_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub author_name: String,
    /// Base64 of a png, jpeg or webp image of at most 8 MiB (413 beyond), of the type
    /// `contentType` names; a `data:…;base64,` URL is read as well.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::IMAGE_BASE64_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::IMAGE_BASE64_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub image_base64: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::SHORT_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::SHORT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub content_type: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::NAME_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub image_label: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
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
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF)))]
    pub change_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: Option<String>,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::NAME_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub label: String,
    pub kind: AttachmentKind,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::SHORT_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::SHORT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub content_type: String,
    /// Base64 of a png, jpeg or webp image of at most 8 MiB (413 beyond), of the type
    /// `contentType` names; a `data:…;base64,` URL is read as well.
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::IMAGE_BASE64_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::IMAGE_BASE64_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub image_base64: String,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::NAME_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub author_name: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
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
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF)))]
    pub change_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::SHORT_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::SHORT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub branch: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::SHORT_MAX_CHARS }>"
    )]
    /// **(ours)** 7 to 40 hex digits (see [`crate::commit_sha`]); anything else is 400.
    #[cfg_attr(feature = "schema", schemars(length(max = crate::SHORT_MAX_CHARS), regex(pattern = crate::schema::COMMIT_SHA)))]
    pub head_commit: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::TEXT_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::TEXT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub note: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::NAME_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::NAME_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub author_name: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub group_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "schema", schemars(range(max = u64::MAX)))]
    pub fence: Option<u64>,
    /// **(ours)** where the commit can be seen (the agent derives it from its remote).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::URL_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::URL_MAX_CHARS), regex(pattern = crate::schema::HTTPS_LINK)))]
    pub commit_url: Option<String>,
    /// **(ours)** the pull (merge) request the fix is in.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::URL_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::URL_MAX_CHARS), regex(pattern = crate::schema::HTTPS_LINK)))]
    pub pull_request_url: Option<String>,
}

// ---- filer and reviewer side ----

/// `createChange`: "`stageId, title, body?, route?, deploymentId?, gitSha?, locale?,
/// viewport?, capture?, screenshotKey?, consoleErrors?`" + **(ours)** `changeId?`
/// ("client-made UUID: the same call twice files once").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CreateChangeInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub stage_id: String,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::TITLE_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::TITLE_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub title: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::TEXT_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::TEXT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub body: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::URL_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::URL_MAX_CHARS), regex(pattern = crate::schema::ROUTE)))]
    pub route: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::SHORT_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::SHORT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub deployment_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::SHORT_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::SHORT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub git_sha: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::SHORT_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::SHORT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
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
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub screenshot_key: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_vec_of_strings::<_, { crate::CONSOLE_ERRORS_MAX }, { crate::CONSOLE_ERROR_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::CONSOLE_ERRORS_MAX), inner(length(max = crate::CONSOLE_ERROR_MAX_CHARS), regex(pattern = crate::schema::NO_NUL))))]
    pub console_errors: Option<Vec<String>>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::UUID)))]
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
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: String,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::SHORT_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::SHORT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub content_type: String,
    /// Base64 of a png, jpeg or webp image of at most 8 MiB (413 beyond), of the type
    /// `contentType` names; a `data:…;base64,` URL is read as well.
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::IMAGE_BASE64_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::IMAGE_BASE64_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
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
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF)))]
    pub change_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: Option<String>,
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::TEXT_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::TEXT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub body: String,
    /// The chosen option attachment's `key`.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub chosen_option: Option<String>,
}

/// `setChangeStatus`: `changeId, status` (`open`, `in_progress` or `dismissed`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SetChangeStatusInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF)))]
    pub change_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
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
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF)))]
    pub change_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: Option<String>,
    pub verdict: Verdict,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::TEXT_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::TEXT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub body: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub screenshot_key: Option<String>,
}

/// `verifyChange` → `{change, message}`: the item after the verdict and the `verdict`
/// message added to its thread.
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
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF)))]
    pub change_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::TITLE_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::TITLE_MAX_CHARS), regex(pattern = crate::schema::NON_BLANK)))]
    pub title: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::TEXT_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::TEXT_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub body: Option<String>,
}

/// `withdrawChange` **(ours)**: `changeId` (filer, while held; "the item becomes
/// `dismissed` and never reaches the agent").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct WithdrawChangeInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::CHANGE_REF)))]
    pub change_id: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub project_id: Option<String>,
}

/// `releaseChanges` **(ours)**: `stageId` ("ends the caller's hold; nothing held is not
/// an error").
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ReleaseChangesInput {
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub stage_id: String,
}

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

/// `getSession`: `{}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GetSessionInput {}

/// A project the session may use, as listed in [`Session::projects`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionProject {
    pub project_id: String,
    pub name: String,
}

/// `getSession` → `{userId, name, projects, scopes}`. `scopes` are wire names such as
/// `changes:project:read` (see [`Scope`]); kept as strings so an unknown Fabric scope
/// still reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub user_id: String,
    pub name: String,
    pub projects: Vec<SessionProject>,
    pub scopes: Vec<String>,
}

/// `requestCliAuth`: `{}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RequestCliAuthInput {}

/// `requestCliAuth` → `{code, expiresAt, verifyUrl}`, and **(ours)** `deviceSecret`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CliAuthRequest {
    pub code: String,
    pub expires_at: Timestamp,
    pub verify_url: String,
    /// **(ours)** A long random secret known only to the device that asked: the short
    /// `code` (read aloud, typed, shown in URLs) only approves; the token is handed to
    /// a poll that presents this secret. Absent from servers that do not make one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_secret: Option<String>,
}

/// `pollCliAuth`: `{code}`, and **(ours)** `deviceSecret`, which a Redline server
/// requires (the `deviceSecret` its `requestCliAuth` answered); send it whenever the
/// request answered one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::device_secret_required))]
pub struct PollCliAuthInput {
    /// A code that names no request (an empty one too) is answered `expired`.
    #[serde(deserialize_with = "crate::bounded::string::<_, { crate::ID_MAX_CHARS }>")]
    #[cfg_attr(feature = "schema", schemars(length(max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub code: String,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "crate::bounded::opt_string::<_, { crate::ID_MAX_CHARS }>"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "String", length(min = 1, max = crate::ID_MAX_CHARS), regex(pattern = crate::schema::NO_NUL)))]
    pub device_secret: Option<String>,
}

/// The state of a sign-in code: `pending|confirmed|expired|rejected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CliAuthStatus {
    Pending,
    Confirmed,
    Expired,
    Rejected,
}

/// `pollCliAuth` → `{status, token?}`; `token` only once `confirmed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CliAuthPoll {
    pub status: CliAuthStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

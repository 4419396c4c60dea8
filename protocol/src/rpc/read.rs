//! The reading RPCs (`crate::rpc`, served by the server's `ops/read.rs`): `listChanges`,
//! `getChange` and **(ours)** `countChanges`.

use serde::{Deserialize, Serialize};

use crate::bound::{Cursor, List, NoNul, Opt, Plain, Reference, Text};
use crate::records::*;
use crate::{CLAIM_NAMES_MAX, CURSOR_MAX_CHARS, ID_MAX_CHARS, NAME_MAX_CHARS, STATUSES_MAX, URL_MAX_CHARS};

/// `listChanges`: "`projectId, stageId?, route?, status?[], groupId?, pickupOnly,
/// includeDone, limit (≤200, default 50)`".
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct ListChangesInput {
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub project_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub stage_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, URL_MAX_CHARS>>")]
    pub route: Option<String>,
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<List<Plain<ChangeStatus>, 0, STATUSES_MAX>>"
    )]
    pub status: Option<Vec<ChangeStatus>>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
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
        with = "Opt::<Text<Cursor, 1, CURSOR_MAX_CHARS>>"
    )]
    pub cursor: Option<String>,
    /// **(ours)** `oldest` first (by `shortId`, the default, as Fabric lists) or `newest`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub order: Option<ListOrder>,
    /// **(ours)** Only these items (change ids, or `#7` / `7`), e.g. to refresh the rows an
    /// event named; the other filters still apply.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<List<Text<Reference, 1, ID_MAX_CHARS>, 1, CLAIM_NAMES_MAX>>"
    )]
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
    #[serde(with = "Text::<Reference, 1, ID_MAX_CHARS>")]
    pub change_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
    pub project_id: Option<String>,
    /// **(ours)** The agent reading: the answer then says which of the thread's messages
    /// were already shown to it as work (`shownMessageIds`, see
    /// `acknowledgeChangeMessages`).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        with = "Opt::<Text<NoNul, 0, NAME_MAX_CHARS>>"
    )]
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
        with = "Opt::<Text<Cursor, 1, CURSOR_MAX_CHARS>>"
    )]
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
    #[serde(with = "Text::<NoNul, 1, ID_MAX_CHARS>")]
    pub project_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "Opt::<Text<NoNul, 0, ID_MAX_CHARS>>")]
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

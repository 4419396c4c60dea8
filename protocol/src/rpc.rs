//! The operations of protocol.md ("Operations"): one input and one output struct per
//! RPC, and a marker type implementing [`Rpc`] that ties the RPC name to both, so a
//! client writes `client.call::<GetSession>(GetSessionInput {})`. The inputs and outputs
//! live in a file per side, as the server's `ops/` serves them (`read`, `agent`, `claim`,
//! `filer`, `presence`, `session`, `stages`, `stats`, `webhooks`).
//!
//! Optional inputs (`x?` in the tables) are `Option<T>`, absent when `None` so a
//! request to Fabric carries only what the caller set. Every input that takes a
//! `changeId` also takes `projectId?`: "every call that takes a `changeId` also takes
//! `#7` or `7` together with `projectId`".

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::Scope;
use crate::group_token::*;

mod agent;
mod claim;
mod filer;
mod presence;
mod read;
mod session;
mod stages;
mod stats;
mod webhooks;

pub use agent::*;
pub use claim::*;
pub use filer::*;
pub use presence::*;
pub use read::*;
pub use session::*;
pub use stages::*;
pub use stats::*;
pub use webhooks::*;

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
    /// Agent **(ours)**: a verified fix is gone on a later build (`redline guard`; → `open`).
    ReportRegression = "reportRegression", Some(Scope::Write), crate::regression::ReportRegressionInput => VerifyChangeOutput;
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

//! The command line of the agent commands: the clap tree (`redline login|wait|claim|…`)
//! and what turns its arguments into the domain types the commands take (a
//! [`ServerChoice`], a [`Lease`], a [`Wait`], [`RunOptions`]). Nothing below `commands`
//! sees a clap type.

use std::path::PathBuf;
use std::time::Duration;

use clap::{Args, Subcommand, ValueEnum};
use tokio::time::Instant;

use crate::format::CssDetail;
use crate::guard::compare::Tolerance;
use crate::guard::{Guard, Programs};
use crate::next::Wait;
use crate::rules;
use crate::run::RunOptions;
use crate::session::{CLAIMED_BY_ENV, FENCE_ENV, GROUP_ID_ENV, Lease, ServerChoice};

/// Where the server is and which project to work on.
#[derive(Args, Debug, Clone)]
pub struct ApiArgs {
    /// The changes server's API URL (https, or http to loopback only). Defaults to the
    /// last one signed in to.
    #[arg(long, env = "REDLINE_API_URL", value_name = "URL")]
    pub api_url: Option<String>,
    /// The project (name or id), when the token has several.
    #[arg(long, short = 'p', visible_alias = "project-id", env = "REDLINE_PROJECT", value_name = "PROJECT")]
    pub project: Option<String>,
}

/// The item a command acts on, in Fabric's form (`--change-id 2`) or as the first
/// argument (`2`); exactly one of the two.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct ItemArg {
    /// The item: 2, #2 or its id (or give it as the first argument: `redline show 2`).
    #[arg(long = "change-id", value_name = "ITEM")]
    change_id: Option<String>,
    /// The item as the first argument; help shows Fabric's --change-id only.
    #[arg(value_name = "ITEM", hide = true)]
    item: Option<String>,
}

impl ItemArg {
    /// The item as typed (clap guarantees exactly one form was given).
    pub fn as_str(&self) -> &str {
        self.change_id.as_deref().or(self.item.as_deref()).unwrap_or_default()
    }
}

/// The lease an agent write is made under, and its author.
#[derive(Args, Debug, Clone)]
pub struct WriteArgs {
    /// Your agent name (the thread shows it). Defaults to the name `redline run` started
    /// you as, else the name you last claimed as.
    #[arg(long = "author-name", visible_alias = "author", value_name = "NAME", env = CLAIMED_BY_ENV)]
    pub author: Option<String>,
    /// The group you claimed the item in. Defaults to the claim `redline run` started you
    /// under, else your last claim's, if the item is in it.
    #[arg(long, value_name = "GROUP_ID", env = GROUP_ID_ENV)]
    pub group_id: Option<String>,
    /// Your claim's fence. Defaults as --group-id does.
    #[arg(long, requires = "group_id", env = FENCE_ENV)]
    pub fence: Option<u64>,
}

#[derive(Subcommand, Debug)]
pub enum AgentCommand {
    /// Sign in to a changes server and remember the token for its API URL.
    ///
    /// Without --token: prints a code to approve, then waits (up to 5 minutes) for the
    /// approval. The token is stored in the config dir (~/.config/redline/, mode 0600);
    /// REDLINE_TOKEN, when set, is used instead of any stored token.
    Login(LoginArgs),
    /// Wait until there is work, print it and exit.
    ///
    /// Work is an item an agent may claim (not held by its filer, no live lease) or,
    /// with --claimed-by, an answer to one of your questions. With --claim it claims one
    /// changeset: the ready items of one route, oldest route first, so agents sharing the
    /// queue each take the next route (--all takes everything, as Fabric's --claim does).
    /// Woken by the server's event
    /// stream the moment an item is filed, released or answered; polls every --interval
    /// seconds only when the stream is unavailable.
    ///
    /// Exit status: 0 work printed, 2 nothing before --timeout (or with --once),
    /// 3 signed out or refused (401/403), 1 anything else. `next` is the older name.
    #[command(name = "wait", visible_alias = "next")]
    Next(NextArgs),
    /// Claim items as one group, with a lease.
    ///
    /// The lease lasts 30 minutes unless --lease-minutes. When nothing named can be
    /// claimed, says why for each item and when it becomes claimable. With --group-id,
    /// renews that group's lease, and adds the claimable ones of --change-ids to it.
    Claim(ClaimArgs),
    /// Show an item, its thread and its screenshot.
    ///
    /// Prints the title, body, status, when it is claimable, the stage URL and route, the
    /// viewport, each circled element (test ids, source anchor, CSS path, text, computed
    /// styles), console errors, failed requests and the thread with its options. The
    /// screenshot is saved to a temporary file whose path is printed.
    Show(ShowArgs),
    /// Ask the filer a question, optionally with options to choose from.
    Ask(AskArgs),
    /// Add a message to an item's thread, optionally with an image.
    Reply(ReplyArgs),
    /// Attach an image to an item's thread: evidence, or an option to choose.
    Shot(ShotArgs),
    /// Mark an item done, with the commit that fixed it.
    ///
    /// The commit is the newest one on the checkout's branch whose trailer names the
    /// item (`Change-Id: <uuid>` or `Change: #N`), so items close in any order; without
    /// one it is refused and says the trailer to add. The branch is the checkout's (a
    /// detached HEAD records none). When the checkout's remote (the branch's upstream,
    /// else origin) is on GitHub or GitLab, the commit's page is recorded too, and the
    /// pull request's (--pr N, or the commit's `PR: #N` trailer). Refused (lease lost)
    /// when another agent has claimed the item since your claim.
    Done(DoneArgs),
    /// List the queue (without done and dismissed items unless --all).
    List(ListArgs),
    /// File an item from the terminal (words only).
    File(FileArgs),
    /// Merge a group's changeset into the branch you are on, once its items are done.
    ///
    /// One `--no-ff` merge commit whose trailer is `Changeset: <groupId>`; then the
    /// changeset's worktree and branch are removed. Refused while an item of the group is
    /// not done, and on the changeset's own branch. The group's lease ends (the server
    /// ends it when its last item is done).
    Merge(MergeArgs),
    /// Give up a group you claimed: its lease ends and its items not done go back to the
    /// queue, claimable by any agent at once (the server's `releaseGroup`).
    Release(ReleaseArgs),
    /// Run an agent command on each claimable batch, each in a changeset of its own.
    ///
    /// Claims the items of each route as one group, makes its changeset (as `claim
    /// --worktree`) and runs `sh -c CMD` there with the claim in its environment
    /// (REDLINE_GROUP_ID, REDLINE_FENCE, REDLINE_CLAIMED_BY, REDLINE_CHANGE_IDS,
    /// REDLINE_WORKTREE, REDLINE_API_URL, REDLINE_TOKEN, REDLINE_PROJECT) and the work
    /// (JSON: the group and its items) in the file REDLINE_WORK_FILE and on its standard
    /// input. REDLINE_TOKEN is not yours: it is a token limited to the group's items
    /// (show, ask, reply, shot, done), ended when CMD exits or the lease lapses.
    /// `redline done|reply|ask|shot|show` run by it write under that claim. When CMD
    /// exits 0 with every item done, the changeset is merged into the branch this
    /// checkout is on (with --no-merge, left for you to merge); otherwise it is left
    /// unmerged and each item not done says so in its thread (unless it waits for an
    /// answer). Answers to questions start CMD again in their changeset; items sent back
    /// as still wrong are claimed in a new one.
    ///
    /// Exit status: 0 every changeset merged (or done with --no-merge, or waiting for an
    /// answer), 2 nothing to do (--once), 1 a changeset left unmerged or anything else,
    /// 128 + the signal when stopped (130 Ctrl-C, 143 SIGTERM, 129 SIGHUP; the agents
    /// are stopped, their leases lapse).
    Run(RunArgs),
    /// Print the skill that teaches a coding agent this loop, or install it.
    Skill(SkillArgs),
    /// Serve the agent commands as Model Context Protocol tools, over stdio.
    ///
    /// For MCP clients (Claude Code, Cursor, …): add `redline` with the argument `mcp`
    /// as a stdio server. It signs in like the other commands (REDLINE_API_URL and
    /// REDLINE_TOKEN, or the stored login) and records the commit of the git checkout it
    /// runs in when an item is marked done.
    Mcp(McpArgs),
    /// Check that an agent can work here, and say how to fix what it cannot.
    ///
    /// Checks, in order: the server answers (GET /healthz); the token is accepted and
    /// may claim (changes:project:write); the project's event stream opens; this folder
    /// is in a git checkout with a remote (`done` records commits the team must find);
    /// the skill is installed and current; an MCP client (Claude Code, Cursor, Codex)
    /// starts `redline mcp`. Prints a line per check (`ok`, `note` or `FAIL`), each note
    /// and failure followed by its fix; never prints the token. The server, sign-in,
    /// stream and checkout are required; the skill and MCP checks are advice (`note`:
    /// an agent needs the one it is taught by), and so is a checkout with no remote
    /// (`done` then records commits without their links).
    ///
    /// Exit status: 0 when every required check passes, 1 otherwise.
    Doctor(DoctorArgs),
    /// The loop's numbers: items filed, done, dismissed, verified and sent back as still
    /// wrong, questions per item, and the time to done and to verified (median and 90th
    /// percentile), for the project, per agent and per filer.
    ///
    /// Counts the items filed in the last --since days (30 unless told).
    Stats(StatsArgs),
    /// Checks each verified item of a stage again after a deploy: opens its page in
    /// headless Chromium, finds its elements, compares them with the verified
    /// after-shot, and reopens the items whose fix is gone ("regressed in <sha>"), which
    /// wakes their agents as a "still wrong" does. --dry-run only reports.
    ///
    /// Exit status: 1 when an item regressed, 4 when nothing did but a page could not
    /// be checked, 0 otherwise.
    Guard(GuardArgs),
}

#[derive(Args, Debug)]
pub struct StatsArgs {
    /// Count the items filed in this many days up to now: `30d` or `30` (1 to 3650;
    /// default 30).
    #[arg(long, value_name = "DAYS", value_parser = rules::parse_days)]
    pub since: Option<u32>,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct SkillArgs {
    #[command(subcommand)]
    pub action: Option<SkillAction>,
}

#[derive(Subcommand, Debug)]
pub enum SkillAction {
    /// Write the skill as SKILL.md where agents find it.
    Install {
        /// The folder (default: .claude/skills/redline-changes at the top of this checkout).
        #[arg(long, value_name = "DIR")]
        dir: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct LoginArgs {
    /// Store this token instead of signing in with a code ("-" reads it from stdin).
    #[arg(long, value_name = "TOKEN")]
    pub token: Option<String>,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct NextArgs {
    /// Your agent name: also wait for answers to your questions in your groups.
    #[arg(long, value_name = "NAME")]
    pub claimed_by: Option<String>,
    /// Claim one changeset as one group: the ready items of one route (at most 50),
    /// oldest route first; another agent's next `wait --claim` takes the next route.
    /// Needs --claimed-by.
    #[arg(long, requires = "claimed_by")]
    pub claim: bool,
    /// With --claim: claim everything ready as one group (at most 50 items), as Fabric's
    /// `pikku changes wait --claim` does, leaving nothing for another agent.
    #[arg(long, requires = "claim")]
    pub all: bool,
    /// Only items on this route (the page's path, e.g. /orders).
    #[arg(long, value_name = "ROUTE")]
    pub route: Option<String>,
    /// The claim's group title (default "Changes on <route>", or "Changes batch").
    #[arg(long, requires = "claim")]
    pub title: Option<String>,
    /// The lease of the claim, in minutes.
    #[arg(long, value_name = "MINUTES", requires = "claim")]
    pub lease_minutes: Option<u32>,
    /// Only items of this stage: its branch, URL or id.
    #[arg(long, value_name = "STAGE")]
    pub stage: Option<String>,
    /// Give up after this many seconds (exit 2).
    #[arg(long, value_name = "SECONDS")]
    pub timeout: Option<u64>,
    /// Look once and exit: 0 with work, 2 without (any --timeout is then moot).
    #[arg(long)]
    pub once: bool,
    /// Seconds between polls when the event stream is unavailable (below 5 counts as 5).
    #[arg(long, value_name = "SECONDS", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..))]
    pub interval: u64,
    /// Work on the claim in a changeset: a branch and worktree of its own (see `claim`).
    #[arg(long, requires = "claim")]
    pub worktree: bool,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct ClaimArgs {
    /// The items: numbers (3 or #3) or ids, comma-separated. Without it (and without
    /// --group-id), every claimable item, at most 50.
    #[arg(long, value_delimiter = ',', value_name = "ITEMS")]
    pub change_ids: Vec<String>,
    /// The group's title.
    #[arg(long)]
    pub title: Option<String>,
    /// Your agent name.
    #[arg(long, value_name = "NAME")]
    pub claimed_by: String,
    /// The lease, in minutes (default 30).
    #[arg(long, value_name = "MINUTES")]
    pub lease_minutes: Option<u32>,
    /// Renew this group's lease (yours); with --change-ids, also add those of them that
    /// are claimable to the group.
    #[arg(long, value_name = "GROUP_ID")]
    pub group_id: Option<String>,
    /// Work on the claim in a changeset: branch changeset/<slug of the title> in a
    /// worktree at <checkout>-changesets/<slug>, made from HEAD; prints its path.
    #[arg(long)]
    pub worktree: bool,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct MergeArgs {
    /// The group whose changeset to merge.
    #[arg(long, value_name = "GROUP_ID")]
    pub group_id: String,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct ReleaseArgs {
    /// The group to give up. Defaults to the claim `redline run` started you under.
    #[arg(long, value_name = "GROUP_ID", env = GROUP_ID_ENV)]
    pub group_id: String,
    /// Your agent name: the group's claimant.
    #[arg(long, value_name = "NAME", env = CLAIMED_BY_ENV)]
    pub claimed_by: String,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
#[group(id = "how_long", required = true, multiple = false, args = ["once", "forever"])]
pub struct RunArgs {
    /// The agent command, run with `sh -c` in each changeset's worktree.
    #[arg(long, value_name = "CMD")]
    pub exec: String,
    /// Your agent name: the claims are made as it, and the agents write as it.
    #[arg(long, value_name = "NAME")]
    pub claimed_by: String,
    /// Run up to this many agents at once, each on a changeset of its own.
    #[arg(long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(1..=16))]
    pub parallel: u32,
    /// Handle what is claimable now, and exit when those agents are done.
    #[arg(long)]
    pub once: bool,
    /// Keep waiting for work until stopped (Ctrl-C).
    #[arg(long = "loop", id = "forever")]
    pub forever: bool,
    /// The lease of each claim, in minutes (renewed while its agent runs).
    #[arg(long, value_name = "MINUTES")]
    pub lease_minutes: Option<u32>,
    /// Seconds between polls when the event stream is unavailable (below 5 counts as 5).
    #[arg(long, value_name = "SECONDS", default_value_t = 15, value_parser = clap::value_parser!(u64).range(1..))]
    pub interval: u64,
    /// Merge nothing: a changeset whose items are all done keeps its branch and worktree,
    /// for you to review and `redline merge --group-id` (or merge by hand).
    #[arg(long)]
    pub no_merge: bool,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct ShowArgs {
    #[command(flatten)]
    pub item: ItemArg,
    /// How much of each circled element's computed styles to print.
    #[arg(long, value_enum, value_name = "DETAIL", default_value_t = CssDetail::Changed)]
    pub css: CssDetail,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct AskArgs {
    #[command(flatten)]
    pub item: ItemArg,
    #[command(flatten)]
    pub question: QuestionArg,
    /// An answer to offer (repeat for each; at most 6).
    #[arg(long = "option", value_name = "LABEL")]
    pub options: Vec<String>,
    /// An option's image, sent with the question: `LABEL=FILE` (png, jpeg or webp; the
    /// label is what comes before the first `=` and names one of the --option labels).
    #[arg(long = "option-image", value_name = "LABEL=FILE", value_parser = parse_option_image)]
    pub option_images: Vec<(String, PathBuf)>,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub api: ApiArgs,
}

/// `--option-image LABEL=FILE`: split at the first `=`.
fn parse_option_image(s: &str) -> Result<(String, PathBuf), String> {
    match s.split_once('=') {
        Some((label, file)) if !label.trim().is_empty() && !file.is_empty() => {
            Ok((label.trim().to_owned(), PathBuf::from(file)))
        }
        _ => Err(format!("expected LABEL=FILE, e.g. --option-image 'Red=red.png' (got {s:?})")),
    }
}

/// The question, as `--question Q` (Fabric's form) or as the argument after the item.
#[derive(Args, Debug)]
#[group(required = true, multiple = false)]
pub struct QuestionArg {
    /// The question to ask the filer (or give it as the argument after the item).
    #[arg(long = "question", value_name = "QUESTION")]
    question: Option<String>,
    /// The question as the argument after the item; help shows --question only.
    #[arg(value_name = "QUESTION", hide = true)]
    text: Option<String>,
}

impl QuestionArg {
    pub fn into_string(self) -> String {
        self.question.or(self.text).unwrap_or_default()
    }
}

#[derive(Args, Debug)]
pub struct ReplyArgs {
    #[command(flatten)]
    pub item: ItemArg,
    /// The message.
    #[arg(long, short)]
    pub message: String,
    /// An image to attach (png, jpeg or webp).
    #[arg(long, value_name = "FILE")]
    pub image: Option<PathBuf>,
    /// The image's label (default: the file name).
    #[arg(long, value_name = "LABEL", requires = "image")]
    pub image_label: Option<String>,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ShotKind {
    /// Something to look at (a before/after).
    Evidence,
    /// A choice the filer can pick as an answer.
    Option,
}

#[derive(Args, Debug)]
pub struct ShotArgs {
    #[command(flatten)]
    pub item: ItemArg,
    /// The image (png, jpeg or webp; the type is read from the file's bytes).
    #[arg(long, value_name = "FILE")]
    pub image: PathBuf,
    /// What the image shows.
    #[arg(long)]
    pub label: String,
    #[arg(long, value_enum, default_value_t = ShotKind::Evidence)]
    pub kind: ShotKind,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct DoneArgs {
    #[command(flatten)]
    pub item: ItemArg,
    /// A note for the filer (added to the thread).
    #[arg(long)]
    pub note: Option<String>,
    /// The commit that fixed it (default: the newest on the checkout's branch whose
    /// `Change-Id:` or `Change: #N` trailer names the item).
    #[arg(long, visible_alias = "head-commit", value_name = "SHA")]
    pub commit: Option<String>,
    /// The branch (default: the checkout's; none on a detached HEAD).
    #[arg(long)]
    pub branch: Option<String>,
    /// The pull (merge) request the fix is in, by number (default: the one the commit's
    /// `PR: #N` or `Pull-Request: N` trailer names). Linked when the remote is on GitHub
    /// or GitLab, as the commit is.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub pr: Option<u64>,
    #[command(flatten)]
    pub write: WriteArgs,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct ListArgs {
    /// Include done and dismissed items.
    #[arg(long, visible_alias = "include-done")]
    pub all: bool,
    /// Only items of this stage: its branch, URL or id.
    #[arg(long, value_name = "STAGE")]
    pub stage: Option<String>,
    /// At most this many items (up to 200).
    #[arg(long, default_value_t = 50)]
    pub limit: u32,
    /// The next page: the cursor the page before printed.
    #[arg(long, value_name = "CURSOR")]
    pub cursor: Option<String>,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct McpArgs {
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct FileArgs {
    /// The title: what is wrong.
    pub title: String,
    /// More detail.
    #[arg(long)]
    pub body: Option<String>,
    /// The stage: its branch, URL or id (default: the only stage, else production).
    #[arg(long, value_name = "STAGE")]
    pub stage: Option<String>,
    /// The page's path on the stage, e.g. /orders.
    #[arg(long)]
    pub route: Option<String>,
    #[command(flatten)]
    pub api: ApiArgs,
}

#[derive(Args, Debug)]
pub struct GuardArgs {
    /// The stage (id or branch) whose verified items to check.
    #[arg(long = "stage-id", visible_alias = "stage", value_name = "STAGE")]
    pub stage_id: String,
    /// Open the pages here instead of at the stage's URL (the item's route is kept).
    #[arg(long, value_name = "URL")]
    pub base_url: Option<String>,
    /// Report only: reopen nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// A pixel differs when a channel differs by more than this (0–255).
    #[arg(long, default_value_t = Tolerance::default().channel, value_name = "LEVELS")]
    pub channel_tolerance: u8,
    /// The share of an element's pixels that may differ, in percent.
    #[arg(long, default_value_t = Tolerance::default().share * 100.0, value_name = "PERCENT")]
    pub pixel_tolerance: f64,
    /// chromedriver, to drive headless Chromium.
    #[arg(long, env = "REDLINE_CHROMEDRIVER", default_value = "chromedriver", value_name = "PATH")]
    pub chromedriver: PathBuf,
    /// The Chromium binary (chromedriver's own choice when not given).
    #[arg(long, env = "CHROMIUM", value_name = "PATH")]
    pub chromium: Option<PathBuf>,
    #[command(flatten)]
    pub api: ApiArgs,
}

impl ApiArgs {
    /// The server and project the flags (or their environment variables) name.
    pub fn server(&self) -> ServerChoice {
        ServerChoice { api_url: self.api_url.clone(), project: self.project.clone() }
    }
}

impl WriteArgs {
    /// The lease the flags (or `redline run`'s environment) name, the rest to be found
    /// in the remembered claim.
    pub fn lease(&self) -> Lease {
        Lease { author: self.author.clone(), group_id: self.group_id.clone(), fence: self.fence }
    }
}

impl NextArgs {
    /// What `wait` waits for, only items of `stage_id` (`--stage`, looked up); the
    /// deadline counts from now.
    pub fn wait(&self, stage_id: Option<String>) -> Wait {
        Wait {
            claimed_by: self.claimed_by.clone(),
            claim: self.claim,
            all: self.all,
            title: self.title.clone(),
            route: self.route.clone(),
            lease_minutes: self.lease_minutes,
            stage_id,
            deadline: self.timeout.map(|s| Instant::now() + Duration::from_secs(s)),
            once: self.once,
            // Fabric takes any interval; polling faster than every 5 s only loads the server.
            interval: Duration::from_secs(self.interval.max(5)),
        }
    }
}

impl GuardArgs {
    /// The check the flags ask for.
    pub fn guard(&self) -> Guard {
        Guard {
            stage_id: self.stage_id.clone(),
            base_url: self.base_url.clone(),
            dry_run: self.dry_run,
            tolerance: Tolerance {
                channel: self.channel_tolerance,
                share: self.pixel_tolerance / 100.0,
                ..Tolerance::default()
            },
            programs: Programs { chromedriver: self.chromedriver.clone(), chromium: self.chromium.clone() },
        }
    }
}

impl RunArgs {
    /// What `run` runs, as how many agents, until when.
    pub fn options(&self) -> RunOptions {
        RunOptions {
            exec: self.exec.clone(),
            claimed_by: self.claimed_by.clone(),
            parallel: self.parallel,
            once: self.once,
            lease_minutes: self.lease_minutes,
            interval: self.interval,
            no_merge: self.no_merge,
        }
    }
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(subcommand)]
        command: AgentCommand,
    }

    fn css_of(args: &[&str]) -> Result<CssDetail, clap::Error> {
        match Cli::try_parse_from([&["redline", "show", "3"], args].concat())?.command {
            AgentCommand::Show(show) => Ok(show.css),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn show_takes_how_much_css_to_print() {
        assert_eq!(css_of(&[]).unwrap(), CssDetail::Changed);
        assert_eq!(css_of(&["--css", "full"]).unwrap(), CssDetail::Full);
        assert_eq!(css_of(&["--css", "none"]).unwrap(), CssDetail::None);
        assert_eq!(css_of(&["--css=changed"]).unwrap(), CssDetail::Changed);
        let refused = css_of(&["--css", "all"]).unwrap_err().to_string();
        assert!(refused.contains("changed, full, none"), "{refused}");
    }
}

//! `redline run --exec CMD`: a fresh agent process per changeset.
//!
//! It looks for work with `next.rs`'s [`wait`] (as `--claimed-by`, without its claim),
//! and for each batch, the claimable items of one route, claims a group, makes its
//! changeset ([`changeset::create`]) and runs `sh -c CMD` in the worktree, with the
//! claim in the environment and the work (the group and its items) in a file and on
//! standard input. While CMD runs the lease is renewed (which keeps the fence). When CMD
//! exits 0 with every item done, the changeset is merged into the branch this checkout
//! is on (with `--no-merge`, left for the person); when every item not done waits for
//! its filer's answer, it is parked until the answer; otherwise it stays unmerged and
//! each item not done says so in its thread.
//!
//! CMD never gets the person's token: it gets a token limited to its group's items
//! (`createGroupToken`), revoked when it exits (and dead anyway once the lease lapses).
//! SIGINT, SIGTERM and SIGHUP all stop `run` alike: the agents are killed, their
//! leases lapse.
//!
//! An answer to one of the agents' questions, for a group no agent is working on now,
//! starts CMD again in that group's changeset; items sent back as still wrong are
//! claimed as a new batch. Up to `--parallel` agents run at once; merges take turns,
//! since they share this checkout.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex as StdMutex};
use std::time::Duration;

use redline_protocol::*;
use serde::Serialize;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;
use tokio::signal::unix::{Signal, SignalKind, signal};
use tokio::sync::{Mutex, OwnedSemaphorePermit, Semaphore};
use tokio::task::JoinSet;
use tokio::time::Instant;

use super::anchors::{FiledAnchor, Follower};
use super::changeset::{self, Changeset};
use super::client::{Error, exit};
use super::format::{SavedImages, terminal_safe, warn};
use super::next::{self, Found, Wait, wait};
use super::rules::{batches, group_title};
use super::session::{CLAIMED_BY_ENV, Claimant, Ctx, FENCE_ENV, GROUP_ID_ENV, Lease, save_images};
use super::writes::Writer;

/// How long `--loop` pauses after a look that started nothing (the look itself waited).
const RELOOK_PAUSE: Duration = Duration::from_secs(1);

/// Why an agent is started on a changeset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub enum Reason {
    /// The items were just claimed.
    Claimed,
    /// The filer answered a question on some of them.
    Answered,
    /// A person checked them on the stage and sent them back as still wrong.
    SentBack,
}

/// The work file: what an agent is started on.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkFile<'a> {
    pub reason: Reason,
    pub group: &'a Group,
    pub branch: &'a str,
    pub worktree: &'a Path,
    pub items: Vec<WorkItem<'a>>,
}

/// One item of a [`WorkFile`].
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WorkItem<'a> {
    /// The short number (`3` for `#3`).
    pub number: &'a str,
    /// The changeId, which the commit's `Change-Id:` trailer names.
    pub id: &'a str,
    pub title: &'a str,
    pub body: Option<&'a str>,
    pub route: Option<&'a str>,
    pub status: ChangeStatus,
    /// The saved screenshot, then the thread's saved images.
    pub screenshots: Vec<&'a str>,
    /// This start is for an answer to a question on it.
    pub answered: bool,
    /// This start is for a still-wrong verdict on it.
    pub sent_back: bool,
    /// The circled elements' source anchors, each as filed and at the worktree's `HEAD`.
    pub anchors: Vec<FiledAnchor<'a>>,
}

impl<'a> WorkItem<'a> {
    /// `c` as an agent is given it: `flagged` says whether `reason` is about it; its
    /// anchors are followed by `follower`.
    pub fn new(
        c: &'a Change,
        saved: &'a SavedImages,
        reason: Reason,
        flagged: bool,
        follower: &mut Follower,
    ) -> WorkItem<'a> {
        let screenshots =
            saved.screenshot.iter().chain(saved.attachments.values()).map(String::as_str).collect();
        WorkItem {
            number: &c.short_id,
            id: &c.change_id,
            title: &c.title,
            body: c.body.as_deref(),
            route: c.route.as_deref(),
            status: c.status,
            screenshots,
            answered: flagged && reason == Reason::Answered,
            sent_back: flagged && reason == Reason::SentBack,
            anchors: follower.filed_anchors(c),
        }
    }
}

/// What an agent's thread is told about an item it left not done.
pub fn left_unmerged_note(claimed_by: &str, code: Option<i32>, branch: &str) -> String {
    let how = match code {
        Some(0) => "exited 0 without marking this item done".to_owned(),
        Some(code) => format!("exited with code {code} before this item was done"),
        None => "was stopped by a signal before this item was done".to_owned(),
    };
    format!("The agent {claimed_by} {how}; its changeset {branch} is left unmerged.")
}

/// A changeset and the work to start an agent on there.
struct Job {
    group: Group,
    changeset: Changeset,
    reason: Reason,
    /// The items to give the agent, and which of them `reason` is about.
    items: Vec<(Change, Vec<Message>, bool)>,
}

/// How an agent's changeset ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Ending {
    Merged,
    /// Every item done, the changeset left for the person to merge (`--no-merge`).
    Kept,
    /// The agent exited 0 with every item not done waiting for its filer's answer.
    Parked,
    Unmerged,
}

/// What all runs share.
struct Runner {
    ctx: Ctx,
    /// The checkout `run` was started in: changesets are made from its `HEAD` and
    /// merged into its branch.
    checkout: PathBuf,
    exec: String,
    claimed_by: String,
    lease_minutes: Option<u32>,
    /// `--no-merge`: a changeset whose items are all done is kept, not merged.
    no_merge: bool,
    /// Merges take turns: they share the checkout.
    merging: Mutex<()>,
    /// The groups an agent is working on now.
    busy: StdMutex<HashSet<String>>,
    /// The agents running now, by process id (each leads a process group of its own),
    /// with the id of the group token each was given.
    children: StdMutex<HashMap<u32, String>>,
}

/// Counts of how the agents ended.
#[derive(Default)]
struct Tally {
    started: usize,
    unmerged: usize,
}

impl Tally {
    fn add(&mut self, ended: Result<Ending, tokio::task::JoinError>) {
        if !matches!(ended, Ok(Ending::Merged | Ending::Kept | Ending::Parked)) {
            self.unmerged += 1;
        }
    }
}

/// What `redline run` runs, as how many agents, until when.
pub struct RunOptions {
    /// The agent command, run with `sh -c` in each changeset's worktree.
    pub exec: String,
    /// The claims are made as it, and the agents write as it.
    pub claimed_by: String,
    /// How many agents at once.
    pub parallel: u32,
    /// Handle what is claimable now, and stop when those agents are done.
    pub once: bool,
    /// The lease of each claim, in minutes.
    pub lease_minutes: Option<u32>,
    /// Seconds between polls while the event stream is unavailable (at least 5 apply).
    pub interval: u64,
    /// Merge nothing: keep each finished changeset for review.
    pub no_merge: bool,
}

pub async fn run(ctx: Ctx, a: RunOptions) -> Result<i32, Error> {
    let checkout = changeset::checkout_top(&changeset::current_dir()?)?;
    let runner = Arc::new(Runner {
        ctx,
        checkout,
        exec: a.exec.clone(),
        claimed_by: a.claimed_by.clone(),
        lease_minutes: a.lease_minutes,
        no_merge: a.no_merge,
        merging: Mutex::new(()),
        busy: StdMutex::new(HashSet::new()),
        children: StdMutex::new(HashMap::new()),
    });
    let mut stops = Stops::new()?;
    let mut agents = JoinSet::new();
    let finished = tokio::select! {
        tally = dispatch(&runner, &mut agents, &a) => Ok(tally),
        signal = stops.next() => Err(signal),
    };
    let tally = match finished {
        Ok(tally) => tally,
        Err(signal) => {
            let tokens = runner.kill_agents();
            agents.shutdown().await;
            for token_id in &tokens {
                runner.revoke(token_id).await;
            }
            eprintln!("redline: stopped; {} agent(s) killed, their leases lapse", tokens.len());
            return Ok(128 + signal);
        }
    };
    let tally = tally?;
    Ok(match (tally.started, tally.unmerged) {
        (0, _) => {
            eprintln!("redline: no work");
            exit::NOTHING
        }
        (_, 0) => exit::OK,
        _ => exit::FAILED,
    })
}

/// Starts agents on the work found, up to `--parallel` at once, until (with `--once`)
/// a look finds nothing to start, then waits for them. A look that fails ends the
/// looking, not the agents running.
async fn dispatch(
    runner: &Arc<Runner>,
    agents: &mut JoinSet<Ending>,
    a: &RunOptions,
) -> Result<Tally, Error> {
    let slots = Arc::new(Semaphore::new(a.parallel as usize));
    let interval = Duration::from_secs(a.interval.max(5));
    let mut tally = Tally::default();
    let mut failure = None;
    loop {
        while let Some(ended) = agents.try_join_next() {
            tally.add(ended);
        }
        let free = slots.available_permits();
        if free == 0 {
            if let Some(ended) = agents.join_next().await {
                tally.add(ended);
            }
            continue;
        }
        let jobs = match runner.find_work(free, a.once, interval).await {
            Ok(jobs) => jobs,
            Err(e) => {
                if !agents.is_empty() {
                    eprintln!("redline: {e}; waiting for the {} running agent(s)", agents.len());
                }
                failure = Some(e);
                break;
            }
        };
        if jobs.is_empty() {
            if a.once {
                break;
            }
            // Nothing startable (answers only for groups an agent is on, or claims
            // another agent won): look again once an agent ends, or after a pause.
            tokio::select! {
                Some(ended) = agents.join_next() => tally.add(ended),
                () = tokio::time::sleep(RELOOK_PAUSE) => {}
            }
            continue;
        }
        for job in jobs {
            let permit = slots.clone().acquire_owned().await.expect("the semaphore is never closed");
            runner.busy.lock().expect("not poisoned").insert(job.group.group_id.clone());
            tally.started += 1;
            agents.spawn(runner.clone().work(job, permit));
        }
    }
    while let Some(ended) = agents.join_next().await {
        tally.add(ended);
    }
    failure.map_or(Ok(tally), Err)
}

impl Runner {
    /// Kills every running agent with all it started (its process group); the ids of
    /// their group tokens.
    fn kill_agents(&self) -> Vec<String> {
        let children = self.children.lock().expect("not poisoned");
        for &pid in children.keys() {
            if let Ok(pid) = i32::try_from(pid) {
                // SAFETY: kill(2) takes any pid; a negative one names a process group.
                unsafe { libc::kill(-pid, libc::SIGKILL) };
            }
        }
        children.values().cloned().collect()
    }

    /// A token limited to the group's items, for its agent: never the person's own.
    async fn group_token(&self, group_id: &str) -> Result<GroupToken, Error> {
        let input =
            CreateGroupTokenInput { project_id: self.ctx.project_id.clone(), group_id: group_id.to_owned() };
        self.ctx.api.call::<CreateGroupToken>(input).await.map_err(|e| {
            if e.status() == Some(404) && e.code().is_none() {
                Error::local(format!(
                    "this server cannot make a token limited to a group ({e}); \
                     `redline run` gives its agents no other token"
                ))
            } else {
                e
            }
        })
    }

    /// Ends an agent's group token (else it ends with the lease); a failure is said.
    async fn revoke(&self, token_id: &str) {
        let input =
            RevokeGroupTokenInput { project_id: self.ctx.project_id.clone(), token_id: token_id.to_owned() };
        if let Err(e) = self.ctx.api.call::<RevokeGroupToken>(input).await {
            warn(&format!("could not revoke the agent's token {token_id} (it ends with the lease): {e}"));
        }
    }

    fn is_busy(&self, group_id: &str) -> bool {
        self.busy.lock().expect("not poisoned").contains(group_id)
    }

    /// A look for work (without claiming it): as `claimed_by`, also at its answers and
    /// sent-back items.
    fn looking(&self, claimed_by: Option<String>, once: bool, interval: Duration) -> Wait {
        Wait {
            claimed_by,
            claim: false,
            all: false,
            title: None,
            route: None,
            lease_minutes: self.lease_minutes,
            stage_id: None,
            deadline: None,
            once,
            interval,
        }
    }

    /// Looks for work (waiting for some unless `once`) and prepares up to `free` jobs.
    async fn find_work(&self, free: usize, once: bool, interval: Duration) -> Result<Vec<Job>, Error> {
        match wait(&self.ctx, &self.looking(Some(self.claimed_by.clone()), once, interval)).await? {
            Found::Answers(answers, groups) => {
                let jobs = self.answered_jobs(answers, groups, free).await;
                if !jobs.is_empty() {
                    return Ok(jobs);
                }
                // Every answer is for a group an agent is on (it reads them itself):
                // look for new items only, for at most the interval, then at answers again.
                let mut w = self.looking(None, once, interval);
                w.deadline = (!once).then(|| Instant::now() + interval);
                match wait(&self.ctx, &w).await? {
                    Found::Claimable(list) => self.claim_batches(&list.changes, Reason::Claimed, free).await,
                    _ => Ok(Vec::new()),
                }
            }
            Found::SentBack(items, _) => {
                let changes: Vec<Change> = items.into_iter().map(|(c, _)| c).collect();
                self.claim_batches(&changes, Reason::SentBack, 1).await
            }
            Found::Claimable(list) => self.claim_batches(&list.changes, Reason::Claimed, free).await,
            Found::Claimed(_) | Found::Nothing { .. } => Ok(Vec::new()),
        }
    }

    /// Claims each batch (see [`batches`]) as a group of its own, up to `free` of them,
    /// and makes its changeset. A batch another agent took first is skipped; one whose
    /// changeset cannot be made is said and left to its lease.
    async fn claim_batches(
        &self,
        changes: &[Change],
        reason: Reason,
        free: usize,
    ) -> Result<Vec<Job>, Error> {
        let mut jobs = Vec::new();
        let all = if reason == Reason::SentBack { vec![changes.to_vec()] } else { batches(changes) };
        for batch in all.into_iter().take(free) {
            let change_ids = batch.iter().map(|c| c.change_id.clone()).collect();
            let who = self.claimant();
            let out = match self.ctx.claim(&who, None, Some(change_ids), Some(group_title(&batch))).await {
                Ok(out) => out,
                Err(e) if e.code() == Some(codes::NOT_CLAIMABLE) => continue,
                Err(e) => return Err(e),
            };
            match self.claimed_job(out, reason).await {
                Ok(job) => jobs.push(job),
                Err((group_id, e)) => self.say("failed", &group_id, || format!("group {group_id}: {e}")),
            }
        }
        Ok(jobs)
    }

    /// The job for a claim just made: its changeset and every item.
    async fn claimed_job(&self, out: ClaimChangesOutput, reason: Reason) -> Result<Job, (String, Error)> {
        let group_id = out.group.group_id.clone();
        let failed = |e| (group_id.clone(), e);
        let cs = changeset::create(&self.checkout, &out.group).map_err(failed)?;
        let numbers: Vec<String> = out.changes.iter().map(|c| format!("#{}", c.short_id)).collect();
        self.say("claimed", &group_id, || {
            format!(
                "claimed {} as \"{}\" (group {group_id}) in {} at {}",
                numbers.join(", "),
                terminal_safe(&out.group.title),
                cs.branch,
                cs.worktree.as_deref().unwrap_or(Path::new("?")).display()
            )
        });
        let items = self.read_items(&out.changes, |_| true).await.map_err(failed)?;
        Ok(Job { group: out.group, changeset: cs, reason, items })
    }

    /// A job per group with answers that no agent is on now, up to `free` (see
    /// [`Runner::answered_job`]); a group whose job cannot be made is said and skipped.
    async fn answered_jobs(
        &self,
        answers: Vec<(Change, Vec<Message>)>,
        groups: Vec<Group>,
        free: usize,
    ) -> Vec<Job> {
        let mut jobs = Vec::new();
        for group in groups {
            if jobs.len() == free || self.is_busy(&group.group_id) {
                continue;
            }
            let answered: Vec<&str> = answers
                .iter()
                .filter(|(c, _)| c.group_id.as_ref() == Some(&group.group_id))
                .map(|(c, _)| c.change_id.as_str())
                .collect();
            if answered.is_empty() {
                continue;
            }
            match self.answered_job(&group.group_id, &answered).await {
                Ok(job) => {
                    // The fresh agent is handed these answers: they are shown.
                    let handed: Vec<(Change, Vec<Message>)> = answers
                        .iter()
                        .filter(|(c, _)| c.group_id.as_ref() == Some(&group.group_id))
                        .cloned()
                        .collect();
                    next::acknowledge_items(&self.ctx, &self.claimed_by, &handed).await;
                    jobs.push(job)
                }
                Err(e) => self.say("failed", &group.group_id, || format!("group {}: {e}", group.group_id)),
            }
        }
        jobs
    }

    /// The job for answers in a group: its lease renewed, its items not done (the
    /// `answered` ones flagged), in its changeset (made again from `HEAD` when it has
    /// none).
    async fn answered_job(&self, group_id: &str, answered: &[&str]) -> Result<Job, Error> {
        let renewed = self.renew(group_id).await?;
        let cs = changeset::create(&self.checkout, &renewed.group)?;
        let (listed, _) = changeset::group_items(&self.ctx, group_id).await?;
        let left: Vec<Change> = changeset::unfinished(&listed).into_iter().cloned().collect();
        let items = self.read_items(&left, |id| answered.contains(&id)).await?;
        Ok(Job { group: renewed.group, changeset: cs, reason: Reason::Answered, items })
    }

    /// Each item with its thread, and whether `flagged` says the job is about it.
    async fn read_items(
        &self,
        changes: &[Change],
        flagged: impl Fn(&str) -> bool,
    ) -> Result<Vec<(Change, Vec<Message>, bool)>, Error> {
        let mut items = Vec::new();
        for c in changes {
            let (change, thread) = self.read(&c.change_id).await?;
            let about = flagged(&change.change_id);
            items.push((change, thread, about));
        }
        Ok(items)
    }

    /// An item and its thread.
    async fn read(&self, change_id: &str) -> Result<(Change, Vec<Message>), Error> {
        let got = self.ctx.get_change(change_id, None).await?;
        Ok((got.change, got.thread))
    }

    /// Renews a group's lease (its fence stays).
    async fn renew(&self, group_id: &str) -> Result<ClaimChangesOutput, Error> {
        self.ctx.claim(&self.claimant(), Some(group_id.to_owned()), None, None).await
    }

    /// Who the claims are made as, and for how long.
    fn claimant(&self) -> Claimant {
        Claimant { claimed_by: self.claimed_by.clone(), lease_minutes: self.lease_minutes }
    }

    /// Runs an agent on `job`, then merges its changeset or leaves it unmerged.
    async fn work(self: Arc<Self>, job: Job, _slot: OwnedSemaphorePermit) -> Ending {
        let group_id = job.group.group_id.clone();
        let ending = match self.agent(&job).await {
            Ok(code) => self.finish(&job, code).await,
            Err(e) => {
                self.say("failed", &group_id, || format!("group {group_id}: {e}"));
                Ending::Unmerged
            }
        };
        self.busy.lock().expect("not poisoned").remove(&group_id);
        ending
    }

    /// Runs CMD in the job's worktree until it exits (renewing the lease meanwhile);
    /// its exit code (`None`: killed by a signal).
    async fn agent(&self, job: &Job) -> Result<Option<i32>, Error> {
        let g = &job.group;
        let worktree = job.changeset.worktree.clone().ok_or_else(|| {
            Error::local(format!(
                "the worktree of {} is gone: merge or remove the branch",
                job.changeset.branch
            ))
        })?;
        let mut saved = Vec::new();
        for (c, thread, _) in &job.items {
            saved.push(save_images(&self.ctx, c, thread).await);
        }
        let mut follower = Follower::new(&worktree);
        let work = WorkFile {
            reason: job.reason,
            group: g,
            branch: &job.changeset.branch,
            worktree: &worktree,
            items: job
                .items
                .iter()
                .zip(&saved)
                .map(|((c, _, flagged), s)| WorkItem::new(c, s, job.reason, *flagged, &mut follower))
                .collect(),
        };
        let json = serde_json::to_vec_pretty(&work).expect("work files serialise");
        let file = write_work_file(&json)?;
        let ids: Vec<&str> = job.items.iter().map(|(c, _, _)| c.change_id.as_str()).collect();
        let credential = self.group_token(&g.group_id).await?;
        let child = Command::new("sh")
            .arg("-c")
            .arg(&self.exec)
            .current_dir(&worktree)
            .env(GROUP_ID_ENV, &g.group_id)
            .env(FENCE_ENV, g.fence.to_string())
            .env(CLAIMED_BY_ENV, &self.claimed_by)
            .env("REDLINE_CHANGE_IDS", ids.join(","))
            .env("REDLINE_WORKTREE", &worktree)
            .env("REDLINE_WORK_FILE", file.path())
            .env("REDLINE_API_URL", &self.ctx.api_url)
            .env("REDLINE_TOKEN", &credential.token)
            .env("REDLINE_PROJECT", &self.ctx.project_id)
            .stdin(Stdio::piped())
            // A group of its own, so stopping `run` stops whatever the agent started.
            .process_group(0)
            .kill_on_drop(true)
            .spawn();
        let mut child = match child {
            Ok(child) => child,
            Err(e) => {
                self.revoke(&credential.token_id).await;
                return Err(Error::local(format!("starting sh -c {:?}: {e}", self.exec)));
            }
        };
        let pid = child.id().unwrap_or(0);
        self.children.lock().expect("not poisoned").insert(pid, credential.token_id.clone());
        if let Some(mut stdin) = child.stdin.take() {
            // In a task of its own: an agent that never reads its input must not block us.
            tokio::spawn(async move {
                let _ = stdin.write_all(&json).await;
            });
        }
        self.say("started", &g.group_id, || {
            format!("started the agent on {} (pid {pid}) in {}", job.changeset.branch, worktree.display())
        });
        let lease = Duration::from_secs(u64::from(self.lease_minutes.unwrap_or(DEFAULT_LEASE_MINUTES)) * 60);
        let mut renewals = tokio::time::interval_at(Instant::now() + lease / 2, lease / 2);
        let status = loop {
            tokio::select! {
                status = child.wait() => break status,
                _ = renewals.tick() => {
                    if let Err(e) = self.renew(&g.group_id).await {
                        warn(&format!("could not renew the lease of group {}: {e}", g.group_id));
                    }
                }
            }
        };
        self.children.lock().expect("not poisoned").remove(&pid);
        self.revoke(&credential.token_id).await;
        let code = status.map_err(|e| Error::local(format!("waiting for the agent: {e}")))?.code();
        self.say("exited", &g.group_id, || {
            let how = code.map_or_else(|| "by a signal".to_owned(), |c| format!("with code {c}"));
            format!("the agent on {} exited {how}", job.changeset.branch)
        });
        Ok(code)
    }

    /// After the agent: merges the changeset when it exited 0 with every item done,
    /// else leaves it and says so on each item not done.
    async fn finish(&self, job: &Job, code: Option<i32>) -> Ending {
        let cs = &job.changeset;
        let (items, group) = match changeset::group_items(&self.ctx, &cs.group_id).await {
            Ok(found) => found,
            Err(e) => {
                self.say("unmerged", &cs.group_id, || format!("left {} unmerged: {e}", cs.branch));
                return Ending::Unmerged;
            }
        };
        let group = group.unwrap_or_else(|| job.group.clone());
        let left = changeset::unfinished(&items);
        if code == Some(0) && left.is_empty() && self.no_merge {
            self.say("kept", &cs.group_id, || {
                format!("every item is done; {} is left unmerged (--no-merge)", cs.branch)
            });
            return Ending::Kept;
        }
        if code == Some(0) && left.is_empty() {
            let _turn = self.merging.lock().await;
            match changeset::merge(&self.checkout, cs, &group, &items) {
                Ok(merged) => {
                    self.say("merged", &cs.group_id, || changeset::merged_text(&merged));
                    return Ending::Merged;
                }
                Err(e) => {
                    self.say("unmerged", &cs.group_id, || format!("left {} unmerged: {e}", cs.branch));
                    return Ending::Unmerged;
                }
            }
        }
        let asked = |c: &&Change| c.status == ChangeStatus::NeedsAnswer;
        if code == Some(0) && left.iter().all(asked) {
            self.say("parked", &cs.group_id, || {
                let numbers: Vec<String> = left.iter().map(|c| format!("#{}", c.short_id)).collect();
                format!("parked {} until the filer answers {}", cs.branch, numbers.join(", "))
            });
            return Ending::Parked;
        }
        let note = left_unmerged_note(&self.claimed_by, code, &cs.branch);
        let lease = Lease {
            author: Some(self.claimed_by.clone()),
            group_id: Some(group.group_id.clone()),
            fence: Some(group.fence),
        };
        let mut told = Vec::new();
        // An item waiting for its filer's answer is parked, not left: its thread
        // already ends with the question, and the answer starts an agent again.
        for c in left.iter().filter(|c| !asked(c)) {
            match Writer::new(&self.ctx, &c.change_id, &lease).reply(note.clone(), None).await {
                Ok(_) => told.push(format!("#{}", c.short_id)),
                Err(e) => warn(&format!("could not reply on #{}: {e}", c.short_id)),
            }
        }
        self.say("unmerged", &cs.group_id, || {
            let replied =
                if told.is_empty() { String::new() } else { format!("; replied on {}", told.join(", ")) };
            format!("left {} unmerged (group {}){replied}", cs.branch, cs.group_id)
        });
        Ending::Unmerged
    }

    /// Prints an event: a line, or with `--json` a JSON line `{event, groupId, text}`.
    fn say(&self, event: &str, group_id: &str, text: impl FnOnce() -> String) {
        let text = text();
        let json = serde_json::json!({ "event": event, "groupId": group_id, "text": text });
        self.ctx.print(&json, || text.clone());
    }
}

/// The signals that stop `run`: SIGINT (Ctrl-C), SIGTERM and SIGHUP, all alike.
struct Stops {
    interrupt: Signal,
    terminate: Signal,
    hang_up: Signal,
}

impl Stops {
    fn new() -> Result<Stops, Error> {
        let listen =
            |kind: SignalKind| signal(kind).map_err(|e| Error::local(format!("listening for signals: {e}")));
        Ok(Stops {
            interrupt: listen(SignalKind::interrupt())?,
            terminate: listen(SignalKind::terminate())?,
            hang_up: listen(SignalKind::hangup())?,
        })
    }

    /// The number of the first of them to arrive.
    async fn next(&mut self) -> i32 {
        tokio::select! {
            _ = self.interrupt.recv() => libc::SIGINT,
            _ = self.terminate.recv() => libc::SIGTERM,
            _ = self.hang_up.recv() => libc::SIGHUP,
        }
    }
}

/// Writes the work file, readable by the user only, in a temporary file removed when
/// the returned handle is dropped.
fn write_work_file(json: &[u8]) -> Result<tempfile::NamedTempFile, Error> {
    let io = |e: std::io::Error| Error::local(format!("writing the work file: {e}"));
    let mut file = tempfile::Builder::new().prefix("redline-work-").suffix(".json").tempfile().map_err(io)?;
    std::io::Write::write_all(&mut file, json).map_err(io)?;
    Ok(file)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::tests::{NOW, change, group};

    #[test]
    fn the_work_file_names_each_item_its_images_and_anchors() {
        let outside = tempfile::tempdir().unwrap();
        let g = group("g-1", "agent-a", NOW);
        let mut c = change(3);
        c.body = Some("Use VAT".into());
        c.route = Some("/orders".into());
        c.git_sha = Some("a91c4e2".into());
        c.capture = Some(redline_protocol::Capture {
            stroke: vec![],
            bounds: None,
            elements: vec![redline_protocol::Element {
                source_anchor: Some("demo/index.html:12".into()),
                ..Default::default()
            }],
            device_pixel_ratio: None,
            scroll: None,
            failed_requests: vec![],
        });
        let saved = SavedImages {
            screenshot: Some("/cache/3-shot.png".into()),
            attachments: [("k1".to_owned(), "/cache/3-k1.png".to_owned())].into(),
        };
        let work = WorkFile {
            reason: Reason::Answered,
            group: &g,
            branch: "changeset/changes-on-orders",
            worktree: Path::new("/src/shop-changesets/changes-on-orders"),
            items: vec![WorkItem::new(
                &c,
                &saved,
                Reason::Answered,
                true,
                &mut Follower::new(outside.path()),
            )],
        };
        let json = serde_json::to_value(&work).unwrap();
        assert_eq!(json["reason"], "answered");
        assert_eq!(json["group"]["groupId"], "g-1");
        assert_eq!(json["worktree"], "/src/shop-changesets/changes-on-orders");
        assert_eq!(
            json["items"][0],
            serde_json::json!({
                "number": "3", "id": c.change_id, "title": "Item 3", "body": "Use VAT",
                "route": "/orders", "status": "open",
                "screenshots": ["/cache/3-shot.png", "/cache/3-k1.png"],
                "answered": true, "sentBack": false,
                "anchors": [{
                    "sourceAnchor": "demo/index.html:12", "asOf": "a91c4e2",
                    "sourceAnchorNow": {"unknown": "not in a git checkout"},
                }],
            })
        );
    }

    #[test]
    fn an_item_left_not_done_is_told_why() {
        assert_eq!(
            left_unmerged_note("agent-a", Some(1), "changeset/x"),
            "The agent agent-a exited with code 1 before this item was done; its changeset changeset/x is left unmerged."
        );
        assert!(left_unmerged_note("a", Some(0), "b").contains("exited 0 without marking this item done"));
        assert!(left_unmerged_note("a", None, "b").contains("stopped by a signal"));
    }
}

//! `redline wait` (also `next`, the older name): block until there is work, print it, exit.
//!
//! It looks at the queue, and when there is nothing it waits for whichever comes
//! first: a change event that may mean work (the stream is followed in a task), the
//! soonest moment a held item or a lease ends (+1 s), the `--interval` poll (only while
//! the stream is not up), or `--timeout`.
//!
//! With `--claimed-by C` it also wakes for C's own items: an answer to C's question, and
//! an item C completed that the person checked on the stage and sent back as still
//! wrong (`verifyChange`'s `still_wrong`, which reopens it in no group); C's items are
//! those the server says were completed as C (`completedBy`). Each answer and verdict
//! wakes C until a wait has shown it to C, whatever C wrote since: the server keeps
//! what was shown ([`acknowledge`], `redline_protocol::undelivered`). A sent-back item is
//! claimed first with `--claim`, and printed with the person's words and the saved
//! after-screenshot.
//!
//! `--claim` takes one changeset: the first of [`batches`] (the ready items of one route,
//! oldest route first) that no other agent took first, so agents sharing a queue each
//! take a route. The server's `claimChanges` has no route filter: the claim names the
//! changeset's items, and as the server decides claims in the order they arrive, of two
//! agents naming the same items the second is refused (`not_claimable`) and names the
//! next changeset's instead: no item is claimed twice, and nothing is claimed to be
//! given back. `--all` claims everything ready as one group (Fabric's `--claim`).
//!
//! [`wait`] does the looking and waiting and returns what it found; `run` prints it.
//! The MCP server's `changes_wait` tool (and `changes_next`, its older name) calls [`wait`] too.

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use redline_protocol::*;
use serde::Serialize;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::anchors::Follower;
use super::changeset::{self, Changeset};
use super::client::{Error, exit};
use super::format;
use super::rules::{
    answer_candidates, backoff, batches, group_title, next_wake, sent_back_candidates, sleep_until_wake,
};
use super::session::{Claimant, Ctx, now, save_images};
use super::sse::{self, StreamState};

/// A claim's `--json`: the protocol's `claimChanges` output, and with `--worktree`
/// the folder of its changeset.
#[derive(Serialize)]
struct ClaimedJson<'a> {
    #[serde(flatten)]
    out: &'a ClaimChangesOutput,
    #[serde(skip_serializing_if = "Option::is_none")]
    worktree: Option<&'a Path>,
}

/// Prints a claim (or renewal), its changeset when it has one, and what to do next: a
/// wait's `--claim`, and the `claim` command.
pub fn print_claimed(ctx: &Ctx, out: &ClaimChangesOutput, renewed: bool, cs: Option<&Changeset>) {
    let shown = ClaimedJson { out, worktree: cs.and_then(|cs| cs.worktree.as_deref()) };
    ctx.print_items(&shown, &mut Follower::here(), |_| {
        let first = out.changes.first().map(|c| c.short_id.as_str()).unwrap_or("N");
        let lines = format::claimed_lines(out, renewed, now(), &ctx.local());
        let changeset = cs.map(|cs| format!("\n{}", changeset::worktree_text(cs))).unwrap_or_default();
        format!("{lines}{changeset}\nNext: redline show {first}")
    });
}

/// What one look at the queue found.
enum Look {
    /// Answers waiting for `--claimed-by`: the items, their threads, their groups.
    Answers(Vec<(Change, Vec<Message>)>, Vec<Group>),
    /// Items `--claimed-by` completed that a person sent back: the items and threads.
    SentBack(Vec<(Change, Vec<Message>)>),
    /// Items an agent may claim now.
    Claimable(ListChangesOutput),
    /// Nothing; `wake` is when something may become claimable by itself.
    Nothing { wake: Option<Timestamp>, held: usize, held_until: Option<Timestamp> },
}

/// What to wait for: the CLI's `wait` and the MCP server's `changes_wait` alike.
pub struct Wait {
    /// The agent's name: also wait for answers to its questions in its groups.
    pub claimed_by: Option<String>,
    /// Claim what was found (needs `claimed_by`): one changeset ([`batches`]), or with
    /// `all` everything ready, as one group.
    pub claim: bool,
    /// Claim everything ready, not one changeset.
    pub all: bool,
    /// The claim's group title (default: [`group_title`]).
    pub title: Option<String>,
    /// Only items on this route.
    pub route: Option<String>,
    /// The claim's lease, in minutes.
    pub lease_minutes: Option<u32>,
    /// Only items of this stage.
    pub stage_id: Option<String>,
    /// Give up at this moment; `None` waits as long as it takes.
    pub deadline: Option<Instant>,
    /// Look once and return, without following the event stream.
    pub once: bool,
    /// Between polls while the event stream is unavailable.
    pub interval: Duration,
}

/// What waiting found.
pub enum Found {
    /// Answers waiting for `claimed_by`: the items, their threads, their groups.
    Answers(Vec<(Change, Vec<Message>)>, Vec<Group>),
    /// Items `claimed_by` completed that a person checked on the stage and sent back as
    /// still wrong (the items and their threads, the verdict last); with `claim`, also
    /// the claim that took them.
    SentBack(Vec<(Change, Vec<Message>)>, Option<ClaimChangesOutput>),
    /// With `claim`: what was claimed (and remembered as the last claim).
    Claimed(ClaimChangesOutput),
    /// Without `claim`: items an agent may claim now.
    Claimable(ListChangesOutput),
    /// Nothing (once, or by the deadline): `held` items wait for their filer, the
    /// first of them claimable at `held_until`, as of the last look.
    Nothing { held: usize, held_until: Option<Timestamp> },
}

/// `redline wait`: waits for `w`, then prints what it found; with `worktree`, a claim
/// gets a changeset. `timeout` is `--timeout`, for saying there was no work in it.
pub async fn run(ctx: &Ctx, w: Wait, worktree: bool, timeout: Option<u64>) -> Result<i32, Error> {
    // Outside a checkout a changeset cannot be made: say so before waiting.
    let top = if worktree { Some(changeset::checkout_top(&changeset::current_dir()?)?) } else { None };
    let found = wait(ctx, &w).await?;
    match &found {
        Found::Answers(answers, groups) => print_answers(ctx, answers, groups).await,
        Found::SentBack(items, claimed) => {
            let cs = match (top, claimed) {
                (Some(top), Some(out)) => Some(changeset::create(&top, &out.group)?),
                _ => None,
            };
            print_sent_back(ctx, items, claimed.as_ref(), cs.as_ref(), &w).await
        }
        Found::Claimed(out) => {
            let cs = top.map(|top| changeset::create(&top, &out.group)).transpose()?;
            print_claimed(ctx, out, false, cs.as_ref())
        }
        Found::Claimable(list) => print_claimable(ctx, list, w.claimed_by.as_deref()),
        Found::Nothing { held, held_until } => {
            if w.once && *held > 0 {
                let at = held_until.map(|t| format!(", claimable from {}", ctx.local().hhmm(t)));
                eprintln!("redline: nothing to do now; {held} held by their filer{}", at.unwrap_or_default());
            }
            return Ok(nothing(w.once, timeout));
        }
    }
    acknowledge(ctx, &w, &found).await;
    Ok(exit::OK)
}

/// Looks at the queue until there is work (see the module's doc), or until the
/// deadline; transient errors are retried with backoff (said on stderr), others returned.
pub async fn wait(ctx: &Ctx, w: &Wait) -> Result<Found, Error> {
    let deadline = w.deadline;
    let wake = Arc::new(Notify::new());
    let (state_tx, mut state_rx) = watch::channel(StreamState::Down);
    let follower = (!w.once).then(|| {
        let (api, project_id, by) = (ctx.api.clone(), ctx.project_id.clone(), w.claimed_by.clone());
        tokio::spawn(sse::follow(api, project_id, by, wake.clone(), state_tx))
    });
    let _stop = follower.map(AbortOnDrop);
    let mut stream_alive = true;
    let interval = w.interval;
    // Wake-ups for a hold end that came before the server's clock passed it.
    let (mut early_wakes, mut failures, mut races) = (0u32, 0u32, 0u32);
    let mut slept_for: Option<Timestamp> = None;
    // What the last look saw held, for the answer when nothing comes.
    let (mut held_now, mut held_until_now) = (0usize, None);
    let idle = |held: usize, held_until: Option<Timestamp>| Ok(Found::Nothing { held, held_until });
    loop {
        tracing::debug!("looking for work");
        let found = match look(ctx, w).await {
            Ok(found) => {
                failures = 0;
                found
            }
            Err(e) if e.is_transient() && !w.once => {
                let delay = backoff(failures);
                failures += 1;
                eprintln!("redline: {e}; retrying in {} s", delay.as_secs());
                if sleep_or_deadline(delay, deadline).await {
                    return idle(held_now, held_until_now);
                }
                continue;
            }
            Err(e) => return Err(e),
        };
        let wake_at = match found {
            Look::Answers(answers, groups) => return Ok(Found::Answers(answers, groups)),
            Look::SentBack(items) if w.claim => {
                let changes: Vec<Change> = items.iter().map(|(c, _)| c.clone()).collect();
                match claim(ctx, w, &changes, None).await {
                    Ok(out) => {
                        // The items as claimed, each with its thread.
                        let items = items
                            .into_iter()
                            .filter_map(|(c, thread)| {
                                out.changes
                                    .iter()
                                    .find(|o| o.change_id == c.change_id)
                                    .map(|o| (o.clone(), thread))
                            })
                            .collect();
                        return Ok(Found::SentBack(items, Some(out)));
                    }
                    Err(e) if e.code() == Some(codes::NOT_CLAIMABLE) => {
                        tracing::debug!("a sent-back item was claimed by someone else first");
                        continue;
                    }
                    Err(e) => return Err(e),
                }
            }
            Look::SentBack(items) => return Ok(Found::SentBack(items, None)),
            Look::Claimable(list) if w.claim => match claim_changeset(ctx, w, &list.changes).await {
                Ok(Some(out)) => return Ok(Found::Claimed(out)),
                // Other agents took every one between the look and the claim: look
                // again (after a short pause, growing if it keeps happening).
                Ok(None) => {
                    tracing::debug!("claimed by someone else first");
                    let delay = backoff(races);
                    races += 1;
                    if sleep_or_deadline(delay, deadline).await {
                        return idle(held_now, held_until_now);
                    }
                    continue;
                }
                Err(e) => return Err(e),
            },
            Look::Claimable(list) => return Ok(Found::Claimable(list)),
            Look::Nothing { wake, held, held_until } => {
                (held_now, held_until_now) = (held, held_until);
                if w.once {
                    return idle(held, held_until);
                }
                wake
            }
        };
        early_wakes = match (slept_for, wake_at) {
            (Some(before), Some(w)) if w <= before => early_wakes + 1,
            _ => 0,
        };
        slept_for = None;
        // Said so that a watcher (the tests) knows the look is over and only an event,
        // the timer or the stream's state can end the wait.
        tracing::debug!("waiting for an event");
        // Wait for an event, the timer, or a change of the stream's state (which
        // changes whether to poll).
        loop {
            let up = *state_rx.borrow() == StreamState::Up;
            let mut until = deadline;
            let mut timer_is_hold = false;
            if let Some(w) = wake_at {
                let at = Instant::now() + sleep_until_wake(w, now(), early_wakes);
                if until.is_none_or(|u| at < u) {
                    until = Some(at);
                    timer_is_hold = true;
                }
            }
            if !up {
                let poll = Instant::now() + interval;
                if until.is_none_or(|u| poll < u) {
                    until = Some(poll);
                    timer_is_hold = false;
                }
            }
            let timer = async {
                match until {
                    Some(at) => tokio::time::sleep_until(at).await,
                    None => std::future::pending().await,
                }
            };
            tokio::select! {
                () = wake.notified() => break,
                () = timer => {
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return idle(held_now, held_until_now);
                    }
                    if timer_is_hold {
                        slept_for = wake_at;
                    }
                    break;
                }
                changed = state_rx.changed(), if stream_alive => {
                    if changed.is_err() {
                        stream_alive = false;
                    }
                }
            }
        }
    }
}

/// Exit 2, saying so.
fn nothing(once: bool, timeout: Option<u64>) -> i32 {
    match (once, timeout) {
        (true, _) => eprintln!("redline: no work"),
        (false, Some(s)) => eprintln!("redline: no work within {s} s"),
        (false, None) => {}
    }
    exit::NOTHING
}

/// Sleeps `delay`, or until the deadline; true when the deadline came first.
async fn sleep_or_deadline(delay: Duration, deadline: Option<Instant>) -> bool {
    match deadline {
        Some(d) if Instant::now() + delay >= d => {
            tokio::time::sleep_until(d).await;
            true
        }
        _ => {
            tokio::time::sleep(delay).await;
            false
        }
    }
}

async fn look(ctx: &Ctx, w: &Wait) -> Result<Look, Error> {
    let base =
        ListChangesInput { stage_id: w.stage_id.clone(), route: w.route.clone(), ..Default::default() };
    if let Some(by) = &w.claimed_by {
        let input = ListChangesInput {
            status: Some(vec![ChangeStatus::InProgress, ChangeStatus::NeedsAnswer]),
            limit: Some(LIST_LIMIT_MAX),
            ..base.clone()
        };
        let mine = ctx.list_all(input).await?;
        let mut answers = Vec::new();
        for c in answer_candidates(&mine.changes, &mine.groups, by) {
            let got = read_for(ctx, &c.change_id, by).await?;
            if !undelivered(got.change.status, &got.thread, got.shown_message_ids.as_deref()).is_empty() {
                answers.push((got.change, got.thread));
            }
        }
        if !answers.is_empty() {
            return Ok(Look::Answers(answers, mine.groups));
        }
        let input = ListChangesInput {
            status: Some(vec![ChangeStatus::Open]),
            limit: Some(LIST_LIMIT_MAX),
            ..base.clone()
        };
        let open = ctx.list_all(input).await?;
        let mut sent = Vec::new();
        for c in sent_back_candidates(&open.changes, by) {
            let got = read_for(ctx, &c.change_id, by).await?;
            if !undelivered(got.change.status, &got.thread, got.shown_message_ids.as_deref()).is_empty() {
                sent.push((got.change, got.thread));
            }
        }
        if !sent.is_empty() {
            return Ok(Look::SentBack(sent));
        }
    }
    let claimable = ctx.list(ListChangesInput { pickup_only: true, ..base.clone() }).await?;
    if !claimable.changes.is_empty() {
        return Ok(Look::Claimable(claimable));
    }
    let input = ListChangesInput {
        status: Some(vec![ChangeStatus::Open, ChangeStatus::Claimed]),
        limit: Some(LIST_LIMIT_MAX),
        ..base
    };
    let waiting = ctx.list_all(input).await?;
    let held: Vec<&Change> = waiting.changes.iter().filter(|c| c.held).collect();
    Ok(Look::Nothing {
        wake: next_wake(&waiting.changes, &waiting.groups, now()),
        held: held.len(),
        held_until: held.iter().filter_map(|c| c.held_until).min(),
    })
}

/// An item with its thread as `claimed_by` reads it: with what its waits have shown it.
async fn read_for(ctx: &Ctx, change_id: &str, claimed_by: &str) -> Result<GetChangeOutput, Error> {
    ctx.get_change(change_id, Some(claimed_by)).await
}

/// Records on the server that what `found` holds was shown to the claimant: every answer
/// and verdict in the threads printed, so none of them wakes it again (and one that
/// came since the look still will). A server that keeps no such record (Fabric) goes by
/// who spoke last instead; a failure here only means an answer may be shown twice.
pub async fn acknowledge(ctx: &Ctx, w: &Wait, found: &Found) {
    if let (Some(by), Found::Answers(items, _) | Found::SentBack(items, _)) = (&w.claimed_by, found) {
        acknowledge_items(ctx, by, items).await;
    }
}

/// [`acknowledge`] for `items` (each with the thread that was shown) as shown to `by`.
pub async fn acknowledge_items(ctx: &Ctx, by: &str, items: &[(Change, Vec<Message>)]) {
    for (change, thread) in items {
        let message_ids: Vec<String> = thread
            .iter()
            .filter(|m| m.author_kind == AuthorKind::User)
            .filter(|m| matches!(m.role(), MessageType::Answer | MessageType::Verdict))
            .map(|m| m.message_id.clone())
            .collect();
        if message_ids.is_empty() {
            continue;
        }
        let input = AcknowledgeChangeMessagesInput {
            change_id: change.change_id.clone(),
            project_id: Some(ctx.project_id.clone()),
            claimed_by: by.to_owned(),
            message_ids,
        };
        match ctx.api.call::<AcknowledgeChangeMessages>(input).await {
            Ok(_) => {}
            Err(Error::Api { status: 404 | 501, .. }) => {
                tracing::debug!("this server keeps no record of what was shown");
                return;
            }
            Err(e) => format::warn(&format!(
                "could not record that #{} was shown to you ({e}); it may be shown again",
                change.short_id
            )),
        }
    }
}

/// Claims the first changeset of `changes` ([`batches`]; with `all`, everything as one)
/// that another agent has not taken first; `None` when others took them all.
async fn claim_changeset(
    ctx: &Ctx,
    w: &Wait,
    changes: &[Change],
) -> Result<Option<ClaimChangesOutput>, Error> {
    let changesets = if w.all { vec![changes.to_vec()] } else { batches(changes) };
    for changeset in changesets {
        match claim(ctx, w, &changeset, w.title.clone()).await {
            Ok(out) => return Ok(Some(out)),
            Err(e) if e.code() == Some(codes::NOT_CLAIMABLE) => {
                tracing::debug!("another agent claimed this changeset first; trying the next");
            }
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// Claims `changes` (at most [`CLAIM_ALL_MAX`]) as one group, titled `title` or by
/// [`group_title`].
async fn claim(
    ctx: &Ctx,
    w: &Wait,
    changes: &[Change],
    title: Option<String>,
) -> Result<ClaimChangesOutput, Error> {
    let take: Vec<Change> = changes.iter().take(CLAIM_ALL_MAX).cloned().collect();
    let who =
        Claimant { claimed_by: w.claimed_by.clone().unwrap_or_default(), lease_minutes: w.lease_minutes };
    let change_ids = take.iter().map(|c| c.change_id.clone()).collect();
    let out =
        ctx.claim(&who, None, Some(change_ids), Some(title.unwrap_or_else(|| group_title(&take)))).await?;
    ctx.remember_claim(&out);
    Ok(out)
}

async fn print_answers(ctx: &Ctx, answers: &[(Change, Vec<Message>)], groups: &[Group]) {
    let changes: Vec<Change> = answers.iter().map(|(c, _)| c.clone()).collect();
    let groups: Vec<Group> = groups
        .iter()
        .filter(|g| changes.iter().any(|c| c.group_id.as_ref() == Some(&g.group_id)))
        .cloned()
        .collect();
    let out = ListChangesOutput { changes, groups, next_cursor: None, total: None };
    let mut lines = Vec::new();
    for (c, thread) in answers {
        let saved = save_images(ctx, c, thread).await;
        lines.push(format!("  {}", format::answer_lines(c, thread, &saved.attachments)));
    }
    ctx.print_items(&out, &mut Follower::here(), |_| {
        let reads: Vec<String> =
            answers.iter().map(|(c, _)| format!("redline show {}", c.short_id)).collect();
        format!(
            "{} answered:\n{}\nRead the thread{}: {}",
            if answers.len() == 1 { "1 item".to_owned() } else { format!("{} items", answers.len()) },
            lines.join("\n"),
            if answers.len() == 1 { "" } else { "s" },
            reads.join("; ")
        )
    });
}

/// `next --json`'s answer for sent-back items: each item with its thread and saved
/// images, and the claim that took them (with `--claim`).
#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SentBackJson<'a> {
    sent_back: Vec<SentBackItem<'a>>,
    claimed: Option<&'a ClaimChangesOutput>,
    /// With `--claim --worktree`: the changeset's worktree.
    #[serde(skip_serializing_if = "Option::is_none")]
    worktree: Option<&'a std::path::Path>,
}

#[derive(serde::Serialize)]
#[serde(rename_all = "camelCase")]
struct SentBackItem<'a> {
    change: &'a Change,
    thread: &'a [Message],
    image_paths: &'a std::collections::BTreeMap<String, String>,
}

async fn print_sent_back(
    ctx: &Ctx,
    items: &[(Change, Vec<Message>)],
    claimed: Option<&ClaimChangesOutput>,
    cs: Option<&changeset::Changeset>,
    w: &Wait,
) {
    let mut saved = Vec::new();
    for (c, thread) in items {
        saved.push(save_images(ctx, c, thread).await);
    }
    let json = SentBackJson {
        sent_back: items
            .iter()
            .zip(&saved)
            .map(|((change, thread), s)| SentBackItem { change, thread, image_paths: &s.attachments })
            .collect(),
        claimed,
        worktree: cs.and_then(|cs| cs.worktree.as_deref()),
    };
    ctx.print_items(&json, &mut Follower::here(), |_| {
        let by = w.claimed_by.as_deref().map(format::shell_word).unwrap_or_else(|| "NAME".to_owned());
        let mut text = format::sent_back_text(items, &saved);
        match claimed {
            Some(out) => {
                let g = &out.group;
                let until = g.claim_expires_at.map(|t| format!(", lease until {}", ctx.local().hhmm(t)));
                text.push_str(&format!(
                    "\nClaimed again as \"{}\" (group {}, fence {}{}).",
                    g.title,
                    g.group_id,
                    g.fence,
                    until.unwrap_or_default()
                ));
                if let Some(cs) = cs {
                    text.push_str(&format!("\n{}", changeset::worktree_text(cs)));
                }
            }
            None => {
                let ids: Vec<&str> = items.iter().map(|(c, _)| c.short_id.as_str()).collect();
                text.push_str(&format!(
                    "\nClaim: redline claim --change-ids {} --claimed-by {by}",
                    ids.join(",")
                ));
            }
        }
        if let Some((first, _)) = items.first() {
            text.push_str(&format!("\nRead the thread: redline show {}", first.short_id));
        }
        text
    });
}

fn print_claimable(ctx: &Ctx, list: &ListChangesOutput, claimed_by: Option<&str>) {
    ctx.print_items(list, &mut Follower::here(), |_| {
        let now = now();
        let lines: Vec<String> = list
            .changes
            .iter()
            .map(|c| format!("  {}", format::list_line(c, &list.groups, now, &ctx.local())))
            .collect();
        // The first changeset: what `wait --claim` would take.
        let first = batches(&list.changes).into_iter().next().unwrap_or_default();
        let ids: Vec<&str> = first.iter().map(|c| c.short_id.as_str()).collect();
        let name = claimed_by.map(format::shell_word).unwrap_or_else(|| "NAME".to_owned());
        format!(
            "{} to claim:\n{}\nClaim the first changeset: redline claim --change-ids {} --claimed-by {name}",
            if list.changes.len() == 1 {
                "1 item".to_owned()
            } else {
                format!("{} items", list.changes.len())
            },
            lines.join("\n"),
            ids.join(",")
        )
    });
}

/// Stops the stream task when `next` returns.
struct AbortOnDrop(tokio::task::JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        self.0.abort();
    }
}

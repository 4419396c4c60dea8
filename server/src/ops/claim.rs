//! Claiming. The claims of one project that arrive together are taken together: one
//! write reads every item they name, decides each claim in the order the claims
//! arrived (just as taking them one after another would) and stores the groups, the
//! items and the events in a fixed handful of statements, however many claims there
//! are. Every statement of a write is a round trip while the project's other writes
//! wait, so claims taken one by one would make each agent wait for the statements of
//! every agent ahead of it (docs/benchmarks-history.md, "Claims taken together"). A
//! claim naming a `groupId` renews its lease in a write of its own.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use redline_protocol::*;
use sqlx::Row;
use sqlx::any::AnyRow;
use tokio::sync::oneshot;

use super::{Ctx, Op, presence};
use crate::auth::Principal;
use crate::error::ApiError;
use crate::filter::{Bind, Filter, placeholders};
use crate::queue::{ChangeKey, Counter, ProjectWrite};
use crate::services::Services;
use crate::store::new_id;
use crate::store::rows::{
    GROUP_COLUMNS, HOLD_JOIN, SUMMARY_COLUMNS, SUMMARY_RETURNING, StoredCapture, group_from_row, opt_ts,
    status_of,
};

/// "Claimable … status `open` or `claimed`, not held, and no live lease", in SQL, for
/// choosing candidates (the item `c`, its hold `h`, its group `g`); [`claim_block`]
/// decides for each one.
pub const CLAIMABLE_SQL: &str = "c.status IN ('open', 'claimed') AND (h.held_until IS NULL OR h.held_until <= ?) \
     AND (g.claim_expires_at IS NULL OR g.claim_expires_at <= ?)";

/// The most items the claims of one write may name (a claim naming none counts as
/// [`CLAIM_ALL_MAX`]); the claims after them wait for the next write. It bounds the
/// binds of the write's statements, which both engines limit.
const NAMES_PER_WRITE: usize = 1000;

impl Op for ClaimChanges {
    type Answer = ClaimChangesOutput<StoredCapture>;

    /// A claim of named items takes the claimable ones as one new group (with a fresh
    /// fence); no `changeIds` takes every claimable item, at most 50; a `groupId` held
    /// by the same `claimedBy` renews its lease. Nothing claimable: 409 `not_claimable`
    /// with the reason for each named item.
    async fn run(ctx: &Ctx<'_>, input: ClaimChangesInput) -> Result<Self::Answer, ApiError> {
        ctx.who.require_project(&input.project_id)?;
        let claimed_by = input.claimed_by.trim();
        if claimed_by.is_empty() {
            return Err(ApiError::bad_input("claimedBy", "must not be empty"));
        }
        let lease_minutes = lease_minutes(input.lease_minutes)?;
        if let Some(title) = &input.title {
            validate_title("title", title)?;
        }
        let (group, rows) = match (input.group_id, input.change_ids) {
            (Some(group_id), names) => {
                let names = names.map(checked_names).transpose()?.unwrap_or_default();
                let lease_end = ctx.now.plus_minutes(i64::from(lease_minutes));
                let mut w = ctx.write().await?;
                let renewed =
                    renew(&mut w, &group_id, claimed_by, &ctx.who.user_id, lease_end, &names).await?;
                w.commit().await?;
                renewed
            }
            (None, names) => {
                let (answer, answered) = oneshot::channel();
                let claim = Claim {
                    names: names.map(checked_names).transpose()?,
                    title: input.title.map(|t| t.trim().to_owned()),
                    claimed_by: claimed_by.to_owned(),
                    user_id: ctx.who.user_id.clone(),
                    lease_minutes,
                    answer,
                };
                ctx.claims.push(ctx.state, &ctx.who, claim);
                answered
                    .await
                    .map_err(|_| ApiError::internal("the claim write ended without an answer"))??
            }
        };
        Ok(ClaimChangesOutput { group, changes: ctx.present_summaries(&rows)? })
    }
}

/// Named items as a claim takes them: 1 to [`LIST_LIMIT_MAX`], each a `changeId`, `#7`
/// or `7`, kept as given (a `not_found` reason repeats the name).
fn checked_names(names: Vec<String>) -> Result<Vec<(String, ChangeRef)>, ApiError> {
    if names.is_empty() || names.len() > LIST_LIMIT_MAX as usize {
        return Err(ApiError::bad_input(
            "changeIds",
            format!("must name 1 to {LIST_LIMIT_MAX} items (or be left out to take any)"),
        ));
    }
    names
        .into_iter()
        .map(|name| match parse_change_ref(&name) {
            Some(change_ref) => Ok((name, change_ref)),
            None => Err(ApiError::bad_input("changeId", "must be a UUID, #7 or 7")),
        })
        .collect()
}

/// One checked claim, waiting for its project's next claim write.
struct Claim {
    /// The items named, as given and parsed; `None` takes any claimable ones.
    names: Option<Vec<(String, ChangeRef)>>,
    title: Option<String>,
    claimed_by: String,
    /// The person whose token claims (see `presence::seen`).
    user_id: String,
    lease_minutes: u32,
    answer: oneshot::Sender<Result<Claimed, ApiError>>,
}

impl Claim {
    /// How many items this claim may take, counted against [`NAMES_PER_WRITE`].
    fn weight(&self) -> usize {
        self.names.as_ref().map_or(CLAIM_ALL_MAX, Vec::len)
    }

    fn lease_end(&self, now: Timestamp) -> Timestamp {
        now.plus_minutes(i64::from(self.lease_minutes))
    }
}

/// A claim's new group and its items' rows ([`SUMMARY_RETURNING`]: an answer lists
/// summaries, as `listChanges` does), presented by the request after the commit.
type Claimed = (Group, Vec<AnyRow>);

/// The claims waiting for a write, per project.
#[derive(Default)]
pub struct ClaimQueue {
    projects: Mutex<HashMap<String, Vec<Claim>>>,
}

impl std::fmt::Debug for ClaimQueue {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ClaimQueue").finish_non_exhaustive()
    }
}

impl ClaimQueue {
    /// Queues `claim` for the next claim write of `who`'s project, starting that write
    /// unless one is already waiting for its turn. The write is a task of its own, so a
    /// request that goes away cannot take the other claims' answers with it.
    fn push(self: &Arc<Self>, state: &Services, who: &Principal, claim: Claim) {
        let mut projects = self.projects.lock().expect("the claim queue is never poisoned");
        match projects.get_mut(&who.project_id) {
            Some(waiting) => waiting.push(claim),
            None => {
                projects.insert(who.project_id.clone(), vec![claim]);
                tokio::spawn(write(state.clone(), self.clone(), who.clone()));
            }
        }
    }

    /// The claims the write whose turn it is takes: the waiting ones, up to
    /// [`NAMES_PER_WRITE`] names. If some are left, another write is started for them.
    fn take(self: &Arc<Self>, state: &Services, who: &Principal) -> Vec<Claim> {
        let mut projects = self.projects.lock().expect("the claim queue is never poisoned");
        let Some(waiting) = projects.get_mut(&who.project_id) else { return Vec::new() };
        let mut names = 0;
        let fit = waiting
            .iter()
            .take_while(|c| {
                names += c.weight();
                names <= NAMES_PER_WRITE
            })
            .count()
            .max(1);
        let taken: Vec<Claim> = waiting.drain(..fit.min(waiting.len())).collect();
        if waiting.is_empty() {
            projects.remove(&who.project_id);
        } else {
            tokio::spawn(write(state.clone(), self.clone(), who.clone()));
        }
        taken
    }
}

/// One claim write: waits for the project's write turn, takes the claims waiting by
/// then, and answers each once the write has committed.
async fn write(state: Services, queue: Arc<ClaimQueue>, who: Principal) {
    let turn = state.store.committer(&who.project_id).lend().await;
    let claims = queue.take(&state, &who);
    if claims.is_empty() {
        return;
    }
    let answers = async {
        let mut w = ProjectWrite::in_turn(&state, &who.project_id, state.clock.now(), turn?).await?;
        let answers = take_all(&mut w, &claims).await?;
        w.commit().await?;
        Ok::<_, ApiError>(answers)
    }
    .await;
    match answers {
        Ok(answers) => {
            for (claim, answer) in claims.into_iter().zip(answers) {
                // A request that went away no longer listens.
                let _ = claim.answer.send(answer);
            }
        }
        Err(e) => {
            for claim in claims {
                let _ = claim.answer.send(Err(e.clone()));
            }
        }
    }
}

/// What the claim rule reads of an item.
struct Candidate {
    change_id: String,
    short_id: i64,
    title: String,
    status: ChangeStatus,
    held_until: Option<Timestamp>,
    /// The lease of the item's group (both `None` when it is in none: no live lease).
    claimed_by: Option<String>,
    lease_end: Option<Timestamp>,
}

impl Candidate {
    const SELECT: &str = "SELECT c.change_id, c.project_id, c.short_id, c.title, c.status, h.held_until, \
         g.claimed_by AS lease_claimed_by, g.claim_expires_at AS lease_expires_at \
         FROM changes c LEFT JOIN claim_groups g ON g.group_id = c.group_id \
         LEFT JOIN holds h ON h.hold_id = c.hold_id WHERE 1 = 1";

    fn from_row(row: &AnyRow) -> Result<Candidate, sqlx::Error> {
        Ok(Candidate {
            change_id: row.try_get("change_id")?,
            short_id: row.try_get("short_id")?,
            title: row.try_get("title")?,
            status: status_of(row)?,
            held_until: opt_ts(row, "held_until")?,
            claimed_by: row.try_get("lease_claimed_by")?,
            lease_end: opt_ts(row, "lease_expires_at")?,
        })
    }

    fn block(&self, now: Timestamp) -> Option<ClaimBlock> {
        let lease = LeaseView { claim_expires_at: self.lease_end, claimed_by: self.claimed_by.as_deref() };
        claim_block(self.status, self.held_until, Some(lease), now)
    }

    fn is_named_by(&self, name: &ChangeRef) -> bool {
        match name {
            ChangeRef::Short(n) => i64::try_from(*n).is_ok_and(|n| n == self.short_id),
            ChangeRef::Id(id) => *id == self.change_id,
        }
    }
}

/// The items the claims consider, in the project: the named ones, then (if a claim
/// names none) the claimable ones, oldest first, as many as such claims could take.
async fn candidates(w: &mut ProjectWrite<'_>, claims: &[Claim]) -> Result<Vec<Candidate>, ApiError> {
    let project_id = w.project_id().to_owned();
    let project = || Bind::Text(project_id.clone());
    let names: Vec<&ChangeRef> =
        claims.iter().flat_map(|c| c.names.iter().flatten()).map(|(_, r)| r).collect();
    let mut rows = named_rows(w, &names).await?;
    let takers_of_any = claims.iter().filter(|c| c.names.is_none()).count();
    if takers_of_any > 0 {
        let now = w.now().unix_millis();
        let mut filter = Filter::new(Candidate::SELECT.to_owned());
        filter.and("c.project_id = ?", [project()]);
        filter.and(CLAIMABLE_SQL, [Bind::Int(now), Bind::Int(now)]);
        // Named claims ahead may take some of these, so read enough for both.
        let limit = takers_of_any * CLAIM_ALL_MAX + names.len();
        filter.push(&format!(" ORDER BY c.short_id LIMIT {limit}"), []);
        rows.extend(filter.fetch(w.conn()).await?);
    }
    let mut candidates = Vec::new();
    for row in &rows {
        if row.try_get::<&str, _>("project_id")? == project_id {
            candidates.push(Candidate::from_row(row)?);
        }
    }
    candidates.sort_by_key(|c| c.short_id);
    candidates.dedup_by_key(|c| c.short_id);
    Ok(candidates)
}

/// The rows ([`Candidate::SELECT`]) of the items `names` name, in any project (the
/// caller keeps its own project's).
async fn named_rows(w: &mut ProjectWrite<'_>, names: &[&ChangeRef]) -> Result<Vec<AnyRow>, ApiError> {
    if names.is_empty() {
        return Ok(Vec::new());
    }
    let (mut ids, mut shorts) = (Vec::new(), Vec::new());
    for name in names {
        match name {
            ChangeRef::Id(id) => ids.push(Bind::Text(id.clone())),
            ChangeRef::Short(n) => shorts.push(Bind::Int(i64::try_from(*n).unwrap_or(i64::MAX))),
        }
    }
    // Ids are looked up by the primary key alone: SQLite, knowing nothing of how many
    // items a project has, would otherwise walk the project's index.
    let mut any_of = Vec::new();
    if !ids.is_empty() {
        any_of.push(format!("c.change_id IN ({})", placeholders(ids.len())));
    }
    let mut binds = ids;
    if !shorts.is_empty() {
        any_of.push(format!("(c.project_id = ? AND c.short_id IN ({}))", placeholders(shorts.len())));
        binds.push(Bind::Text(w.project_id().to_owned()));
        binds.extend(shorts);
    }
    let mut filter = Filter::new(Candidate::SELECT.to_owned());
    filter.and(&format!("({})", any_of.join(" OR ")), binds);
    Ok(filter.fetch(w.conn()).await?)
}

/// One claim decided: the items it takes (indexes into the candidates, in the order
/// chosen), or why it takes none.
type Decision = Result<Vec<usize>, ApiError>;

/// Decides `claims` in order against `candidates`, leasing what each takes so the
/// claims after it see it taken.
fn decide(claims: &[Claim], candidates: &mut [Candidate], now: Timestamp) -> Vec<Decision> {
    claims
        .iter()
        .map(|claim| {
            let mut take = Vec::new();
            // The reasons list the names not found first, then each found item's.
            let (mut missing, mut blocked) = (Vec::new(), Vec::new());
            match &claim.names {
                Some(names) => {
                    for (given, name) in names {
                        match candidates.iter().position(|c| c.is_named_by(name)) {
                            Some(i) if take.contains(&i) => {}
                            Some(i) => match candidates[i].block(now) {
                                None => take.push(i),
                                Some(b) => blocked.push(NotClaimableItem {
                                    change_id: candidates[i].change_id.clone(),
                                    short_id: Some(candidates[i].short_id.to_string()),
                                    reason: b.reason,
                                    claimable_at: b.claimable_at,
                                    claimed_by: b.claimed_by,
                                }),
                            },
                            None => missing.push(NotClaimableItem {
                                change_id: given.clone(),
                                short_id: match name {
                                    ChangeRef::Short(n) => Some(n.to_string()),
                                    ChangeRef::Id(_) => None,
                                },
                                reason: NotClaimableReason::NotFound,
                                claimable_at: None,
                                claimed_by: None,
                            }),
                        }
                    }
                }
                None => {
                    take = (0..candidates.len())
                        .filter(|&i| candidates[i].block(now).is_none())
                        .take(CLAIM_ALL_MAX)
                        .collect()
                }
            }
            if take.is_empty() {
                missing.append(&mut blocked);
                return Err(ApiError::not_claimable(missing));
            }
            for &i in &take {
                candidates[i].status = ChangeStatus::Claimed;
                candidates[i].claimed_by = Some(claim.claimed_by.clone());
                candidates[i].lease_end = Some(claim.lease_end(now));
            }
            Ok(take)
        })
        .collect()
}

/// Takes `claims` in one write: each claimable part as a new group with the project's
/// next fence.
async fn take_all(
    w: &mut ProjectWrite<'_>,
    claims: &[Claim],
) -> Result<Vec<Result<(Group, Vec<AnyRow>), ApiError>>, ApiError> {
    let now = w.now();
    let mut candidates = candidates(w, claims).await?;
    let decisions = decide(claims, &mut candidates, now);
    let taking: Vec<(&Claim, &Vec<usize>)> =
        claims.iter().zip(&decisions).filter_map(|(c, d)| Some(c).zip(d.as_ref().ok())).collect();
    if taking.is_empty() {
        return Ok(decisions.into_iter().map(|d| Err(d.expect_err("no claim took anything"))).collect());
    }
    let items: usize = taking.iter().map(|(_, take)| take.len()).sum();
    let (first_seq, last_fence) = w.reserve_events_and(items, Counter::LastFence, taking.len()).await?;
    let groups: Vec<Group> = taking
        .iter()
        .enumerate()
        .map(|(k, (claim, take))| Group {
            group_id: new_id(),
            project_id: w.project_id().to_owned(),
            title: match (&claim.title, take.as_slice()) {
                (Some(t), _) => t.clone(),
                (None, [one]) => candidates[*one].title.clone(),
                (None, many) => format!("{} items", many.len()),
            },
            claimed_by: Some(claim.claimed_by.clone()),
            claim_expires_at: Some(claim.lease_end(now)),
            created_at: now,
            fence: (last_fence - taking.len() as i64 + 1 + k as i64) as u64,
        })
        .collect();
    insert_groups(w, &groups).await?;
    let claimants: Vec<(&str, &str)> =
        taking.iter().map(|(claim, _)| (claim.claimed_by.as_str(), claim.user_id.as_str())).collect();
    let (project_id, now) = (w.project_id().to_owned(), w.now());
    presence::seen(w.conn(), &project_id, &claimants, now).await?;
    let mut rows = move_into_groups(w, &groups, &taking, &candidates).await?;
    let mut seq = first_seq;
    let mut groups = groups.into_iter();
    let answers = decisions
        .into_iter()
        .map(|decision| {
            let take = decision?;
            let group = groups.next().expect("a group per claim that takes items");
            let rows = take
                .iter()
                .map(|&i| {
                    let id = &candidates[i].change_id;
                    rows.remove(id)
                        .ok_or_else(|| ApiError::internal(format!("taken item {id} was not updated")))
                })
                .collect::<Result<Vec<AnyRow>, _>>()?;
            let keys = rows.iter().map(ChangeKey::from_row).collect::<Result<Vec<_>, _>>()?;
            w.insert_events(seq, ChangeEventType::Claimed, &keys);
            seq += keys.len() as i64;
            Ok((group, rows))
        })
        .collect();
    Ok(answers)
}

async fn insert_groups(w: &mut ProjectWrite<'_>, groups: &[Group]) -> Result<(), ApiError> {
    let mut insert = Filter::new(format!("INSERT INTO claim_groups ({GROUP_COLUMNS})"));
    insert.values(groups.iter().map(|g| {
        vec![
            Bind::Text(g.group_id.clone()),
            Bind::Text(g.project_id.clone()),
            Bind::Text(g.title.clone()),
            Bind::Text(g.claimed_by.clone().unwrap_or_default()),
            Bind::Int(g.claim_expires_at.map_or(0, Timestamp::unix_millis)),
            Bind::Int(g.fence as i64),
            Bind::Int(g.created_at.unix_millis()),
        ]
    }));
    insert.execute(w.conn()).await?;
    Ok(())
}

/// Puts each claim's items into its group; returns the items' rows by `changeId`.
async fn move_into_groups(
    w: &mut ProjectWrite<'_>,
    groups: &[Group],
    taking: &[(&Claim, &Vec<usize>)],
    candidates: &[Candidate],
) -> Result<HashMap<String, AnyRow>, ApiError> {
    let mut update =
        Filter::new("UPDATE changes SET status = 'claimed', group_id = CASE change_id".to_owned());
    let mut ids = Vec::new();
    for (group, (_, take)) in groups.iter().zip(taking) {
        for &i in *take {
            let id = &candidates[i].change_id;
            update.push(" WHEN ? THEN ?", [Bind::Text(id.clone()), Bind::Text(group.group_id.clone())]);
            ids.push(Bind::Text(id.clone()));
        }
    }
    let n = ids.len();
    update.push(&format!(" END WHERE change_id IN ({})", placeholders(n)), ids);
    update.push(&format!(" RETURNING {SUMMARY_RETURNING}"), []);
    let rows = update.fetch(w.conn()).await?;
    rows.into_iter().map(|row| Ok((row.try_get("change_id")?, row))).collect()
}

/// "a claim naming a `groupId` held by the same `claimedBy` renews its lease (with
/// `changeIds` too, it renews and adds those of them that are claimable to that
/// group)". The fence stays, so the claimant's writes keep matching.
async fn renew(
    w: &mut ProjectWrite<'_>,
    group_id: &str,
    claimed_by: &str,
    user_id: &str,
    lease_end: Timestamp,
    names: &[(String, ChangeRef)],
) -> Result<Claimed, ApiError> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!(
        "SELECT {GROUP_COLUMNS} FROM claim_groups WHERE group_id = $1 AND project_id = $2"
    )))
    .bind(group_id)
    .bind(w.project_id().to_owned())
    .fetch_optional(w.conn())
    .await?
    .ok_or_else(|| ApiError::not_found("no such group in this project"))?;
    let mut group = group_from_row(&row)?;
    if group.claimed_by.as_deref() != Some(claimed_by) {
        return Err(ApiError::conflict(codes::LEASE_LOST, "this group is claimed by someone else"));
    }
    add_to_group(w, group_id, names).await?;
    presence::seen_writing(w, user_id, &[claimed_by]).await?;
    let mut filter = Filter::new(format!("SELECT {SUMMARY_COLUMNS} FROM changes c {HOLD_JOIN} WHERE 1 = 1"));
    filter.and("c.group_id = ?", [Bind::Text(group_id.to_owned())]);
    // The answer lists the group's oldest items, at most as many as a claim may name:
    // renewals that name more grow a group without end (`listChanges` by `groupId`
    // pages it whole).
    filter.push(&format!(" ORDER BY c.short_id LIMIT {}", CLAIM_NAMES_MAX), []);
    let rows = filter.fetch(w.conn()).await?;
    if rows.is_empty() {
        return Err(ApiError::conflict(
            codes::LEASE_LOST,
            "every item of this group has been claimed again since",
        ));
    }
    // A group with nothing left to do keeps its lease ended (`end_lease_if_finished`).
    let finished = rows
        .iter()
        .map(status_of)
        .collect::<Result<Vec<_>, _>>()?
        .iter()
        .all(|s| matches!(s, ChangeStatus::Done | ChangeStatus::Dismissed));
    if !finished {
        sqlx::query("UPDATE claim_groups SET claim_expires_at = $2 WHERE group_id = $1")
            .bind(group_id)
            .bind(lease_end.unix_millis())
            .execute(w.conn())
            .await?;
        group.claim_expires_at = Some(lease_end);
    }
    Ok((group, rows))
}

impl Op for ReleaseGroup {
    type Answer = ClaimChangesOutput<StoredCapture>;

    /// An agent gives up its group: the lease ends now and the items not done or
    /// dismissed go back to the queue (`open`, in no group, each a `released` event), so
    /// any agent may claim them at once. Only the group's claimant may; another gets 409
    /// `lease_lost`, as a write into its lease would.
    async fn run(ctx: &Ctx<'_>, input: ReleaseGroupInput) -> Result<Self::Answer, ApiError> {
        ctx.who.require_project(&input.project_id)?;
        let claimed_by = input.claimed_by.trim();
        if claimed_by.is_empty() {
            return Err(ApiError::bad_input("claimedBy", "must not be empty"));
        }
        let mut w = ctx.write().await?;
        let row = sqlx::query(sqlx::AssertSqlSafe(format!(
            "SELECT {GROUP_COLUMNS} FROM claim_groups WHERE group_id = $1 AND project_id = $2"
        )))
        .bind(&input.group_id)
        .bind(w.project_id().to_owned())
        .fetch_optional(w.conn())
        .await?
        .ok_or_else(|| ApiError::not_found("groupId: no such group in this project"))?;
        let mut group = group_from_row(&row)?;
        if group.claimed_by.as_deref() != Some(claimed_by) {
            return Err(ApiError::conflict(codes::LEASE_LOST, "this group is claimed by someone else"));
        }
        if group.claim_expires_at.is_none_or(|end| end > ctx.now) {
            sqlx::query("UPDATE claim_groups SET claim_expires_at = $2 WHERE group_id = $1")
                .bind(&group.group_id)
                .bind(ctx.now.unix_millis())
                .execute(w.conn())
                .await?;
            group.claim_expires_at = Some(ctx.now);
        }
        let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
            "UPDATE changes SET status = 'open', group_id = NULL \
             WHERE group_id = $1 AND status NOT IN ('done', 'dismissed') RETURNING {SUMMARY_RETURNING}"
        )))
        .bind(&group.group_id)
        .fetch_all(w.conn())
        .await?;
        let keys = rows.iter().map(ChangeKey::from_row).collect::<Result<Vec<_>, _>>()?;
        if !keys.is_empty() {
            let seq = w.reserve_events(keys.len()).await?;
            w.insert_events(seq, ChangeEventType::Released, &keys);
        }
        presence::seen_writing(&mut w, &ctx.who.user_id, &[claimed_by]).await?;
        w.commit().await?;
        // Answered as a renewal is: the group's oldest items, at most as many as a claim
        // may name (`listChanges` by `groupId` reads the rest).
        let answered = &rows[..rows.len().min(CLAIM_NAMES_MAX)];
        Ok(ClaimChangesOutput { group, changes: ctx.present_summaries(answered)? })
    }
}

/// Ends the lease of `group_id` now when none of its items is left to do (each is done
/// or dismissed), so nothing shows it held.
pub async fn end_lease_if_finished(w: &mut ProjectWrite<'_>, group_id: &str) -> Result<(), ApiError> {
    let now = w.now().unix_millis();
    sqlx::query(
        "UPDATE claim_groups SET claim_expires_at = $2 WHERE group_id = $1 AND claim_expires_at > $2 \
         AND NOT EXISTS (SELECT 1 FROM changes WHERE group_id = $1 AND status NOT IN ('done', 'dismissed'))",
    )
    .bind(group_id)
    .bind(now)
    .execute(w.conn())
    .await?;
    Ok(())
}

/// Moves the claimable items of `names` into `group_id`, each recorded as claimed.
async fn add_to_group(
    w: &mut ProjectWrite<'_>,
    group_id: &str,
    names: &[(String, ChangeRef)],
) -> Result<(), ApiError> {
    let refs: Vec<&ChangeRef> = names.iter().map(|(_, r)| r).collect();
    let now = w.now();
    let project_id = w.project_id().to_owned();
    let mut ids = Vec::new();
    for row in named_rows(w, &refs).await? {
        let candidate = Candidate::from_row(&row)?;
        let ours = row.try_get::<&str, _>("project_id")? == project_id;
        if ours && candidate.block(now).is_none() && !ids.contains(&candidate.change_id) {
            ids.push(candidate.change_id);
        }
    }
    if ids.is_empty() {
        return Ok(());
    }
    let mut update = Filter::new("UPDATE changes SET status = 'claimed', group_id = ".to_owned());
    update.push("?", [Bind::Text(group_id.to_owned())]);
    update.push(
        &format!(" WHERE change_id IN ({})", placeholders(ids.len())),
        ids.iter().map(|id| Bind::Text(id.clone())),
    );
    update.push(" RETURNING change_id, short_id", []);
    let rows = update.fetch(w.conn()).await?;
    let keys = rows.iter().map(ChangeKey::from_row).collect::<Result<Vec<_>, _>>()?;
    let seq = w.reserve_events(keys.len()).await?;
    w.insert_events(seq, ChangeEventType::Claimed, &keys);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_unix_millis(1_000_000);

    fn open(short_id: i64) -> Candidate {
        Candidate {
            change_id: format!("00000000-0000-0000-0000-{short_id:012}"),
            short_id,
            title: format!("item {short_id}"),
            status: ChangeStatus::Open,
            held_until: None,
            claimed_by: None,
            lease_end: None,
        }
    }

    fn claim(by: &str, names: Option<&[&str]>) -> Claim {
        let names = names.map(|n| n.iter().map(|s| (s.to_string(), parse_change_ref(s).unwrap())).collect());
        Claim {
            names,
            title: None,
            claimed_by: by.to_owned(),
            user_id: "u".to_owned(),
            lease_minutes: 30,
            answer: oneshot::channel().0,
        }
    }

    fn reasons(decision: &Decision) -> Vec<(String, NotClaimableReason, Option<String>)> {
        let Err(e) = decision else { panic!("the claim took items") };
        e.items().iter().map(|i| (i.change_id.clone(), i.reason, i.claimed_by.clone())).collect()
    }

    #[test]
    fn claims_taken_together_are_decided_in_order_as_if_one_after_another() {
        let mut candidates = vec![open(1), open(2), open(3)];
        let id2 = candidates[1].change_id.clone();
        let claims = [
            claim("a", Some(&["#2", id2.as_str()])),
            claim("b", Some(&["2", "#9"])),
            claim("c", None),
            claim("d", None),
        ];
        let decisions = decide(&claims, &mut candidates, NOW);
        // Named twice, taken once.
        assert_eq!(decisions[0].as_ref().unwrap(), &[1]);
        // Taken by `a` just before: leased by `a`, and `#9` is not in the project.
        assert_eq!(
            reasons(&decisions[1]),
            [
                ("#9".to_owned(), NotClaimableReason::NotFound, None),
                (id2, NotClaimableReason::Leased, Some("a".to_owned())),
            ]
        );
        // Any claimable item, oldest first, skipping what `a` took; then nothing is left.
        assert_eq!(decisions[2].as_ref().unwrap(), &[0, 2]);
        assert_eq!(reasons(&decisions[3]), []);
        assert_eq!(
            (candidates[0].claimed_by.as_deref(), candidates[0].lease_end),
            (Some("c"), Some(NOW.plus_minutes(30)))
        );
    }

    #[test]
    fn held_and_finished_items_are_not_taken() {
        let mut candidates = vec![open(1), open(2)];
        candidates[0].held_until = Some(NOW.plus_seconds(5));
        candidates[1].status = ChangeStatus::Done;
        let decisions = decide(&[claim("a", Some(&["1", "2"]))], &mut candidates, NOW);
        let why: Vec<NotClaimableReason> = reasons(&decisions[0]).into_iter().map(|r| r.1).collect();
        assert_eq!(why, [NotClaimableReason::Held, NotClaimableReason::Done]);
    }
}

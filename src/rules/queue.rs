//! The queue as the side panel shows it: which section each item belongs in, their
//! order, keyboard selection, and the short lines the rows print (relative time, lease
//! left, `branch @ sha7`, `anchor as of sha7`). Pure: the panel feeds it what
//! `listChanges` answered and the clock; the worker uses it for the toolbar badge.

use std::collections::{BTreeMap, HashMap};

use redline_protocol::{AgentPresence, Change, ChangeStatus, Group, Timestamp, short_sha};

/// The panel's sections, in the order they are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Section {
    /// An agent asked the filer something (`needs_answer`).
    NeedsAnswer,
    /// The person's own items still inside the grace window.
    Held,
    /// Filed, not being worked on: `open`, or `claimed` with a lapsed lease, or held by
    /// someone else.
    Waiting,
    /// Under a live lease, or `in_progress` after an answer.
    Working,
    /// Done and live on the stage, waiting for someone to check the fix there.
    Check,
    Done,
    /// Hidden unless asked for.
    Dismissed,
}

impl Section {
    pub const ALL: [Section; 7] = [
        Section::NeedsAnswer,
        Section::Held,
        Section::Waiting,
        Section::Working,
        Section::Check,
        Section::Done,
        Section::Dismissed,
    ];

    pub fn title(self) -> &'static str {
        match self {
            Section::NeedsAnswer => "Needs your answer",
            Section::Held => "Your held batch",
            Section::Waiting => "Waiting",
            Section::Working => "Being worked on",
            Section::Check => "Check on stage",
            Section::Done => "Done",
            Section::Dismissed => "Dismissed",
        }
    }

    /// A stable name for test ids and CSS classes.
    pub fn slug(self) -> &'static str {
        match self {
            Section::NeedsAnswer => "needs-answer",
            Section::Held => "held",
            Section::Waiting => "waiting",
            Section::Working => "working",
            Section::Check => "check",
            Section::Done => "done",
            Section::Dismissed => "dismissed",
        }
    }
}

/// One item with the group it is claimed in, if any.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    pub change: Change,
    pub group: Option<Group>,
}

impl Row {
    /// Where the row goes for the person called `me`, at `now` (the server's `held`
    /// verdict decides holds; the lease is compared with the local clock).
    pub fn section(&self, me: &str, now: Timestamp) -> Section {
        let change = &self.change;
        match change.status {
            ChangeStatus::Dismissed => Section::Dismissed,
            ChangeStatus::Done if crate::rules::verify::waits_for_check(change) => Section::Check,
            ChangeStatus::Done => Section::Done,
            ChangeStatus::NeedsAnswer => Section::NeedsAnswer,
            _ if change.held && change.filed_by.as_deref() == Some(me) => Section::Held,
            _ if change.held => Section::Waiting,
            ChangeStatus::InProgress => Section::Working,
            ChangeStatus::Claimed | ChangeStatus::Open if self.lease_is_live(now) => Section::Working,
            ChangeStatus::Claimed | ChangeStatus::Open => Section::Waiting,
        }
    }

    fn lease_is_live(&self, now: Timestamp) -> bool {
        self.group.as_ref().is_some_and(|g| redline_protocol::is_lease_live(g.claim_expires_at, now))
    }

    /// "claimed by claude-1, waiting · Changes on /orders · lease 12 min left": who holds
    /// it and what that agent is doing now, as far as `agents` (`listAgents`) says.
    pub fn claim_line(&self, now: Timestamp, agents: &[AgentPresence]) -> Option<String> {
        let group = self.group.as_ref()?;
        let mut parts = Vec::new();
        if let Some(by) = &group.claimed_by {
            match agents.iter().find(|a| &a.name == by) {
                Some(agent) => parts.push(format!("claimed by {by}, {}", agent.doing(now))),
                None => parts.push(format!("claimed by {by}")),
            }
        }
        parts.push(group.title.clone());
        if let Some(expires) = group.claim_expires_at {
            parts.push(lease_left(expires, now));
        }
        Some(parts.join(" · "))
    }

    /// `main @ a91c4e2` for a done item, or the commit alone on a detached HEAD.
    pub fn build_line(&self) -> Option<String> {
        build_line(self.change.branch.as_deref(), self.change.head_commit.as_deref())
    }

    /// The number as shown, `#7`.
    pub fn number(&self) -> String {
        redline_protocol::display_short_id(&self.change.short_id)
    }

    /// Done, and the stage serves a build that contains its commit.
    pub fn is_live(&self) -> bool {
        self.change.status == ChangeStatus::Done && self.change.live == Some(true)
    }

    /// The row's CSS classes: a fix waiting for a check is not struck through yet.
    pub fn class(&self) -> &'static str {
        if crate::rules::verify::waits_for_check(&self.change) {
            "row check"
        } else {
            row_class(self.change.status)
        }
    }
}

/// A row's CSS classes: how an item of `status` looks in the list.
pub fn row_class(status: ChangeStatus) -> &'static str {
    match status {
        ChangeStatus::Done => "row done",
        ChangeStatus::Dismissed => "row dismissed",
        ChangeStatus::NeedsAnswer => "row asks",
        _ => "row",
    }
}

/// `branch @ sha7`; the commit alone when there is no branch; `None` without a commit.
pub fn build_line(branch: Option<&str>, commit: Option<&str>) -> Option<String> {
    let commit = short_sha(commit?);
    Some(match branch.filter(|b| !b.is_empty()) {
        Some(branch) => format!("{branch} @ {commit}"),
        None => commit.to_owned(),
    })
}

/// Where a done item's fix can be seen: its commit and its pull request, as (what the
/// link says, where it goes), each only when it is an `https://` link, the one kind the
/// panel opens (`redline_protocol::is_https_link`).
pub fn fix_links(change: &Change) -> Vec<(&'static str, String)> {
    [("commit", &change.commit_url), ("pull request", &change.pull_request_url)]
        .into_iter()
        .filter_map(|(label, url)| {
            url.as_ref().filter(|u| redline_protocol::is_https_link(u)).map(|u| (label, u.clone()))
        })
        .collect()
}

/// `src/app.tsx:42 as of a91c4e2`: a source anchor is read at the item's build.
pub fn anchor_line(anchor: &str, git_sha: Option<&str>) -> String {
    match git_sha {
        Some(sha) if !sha.is_empty() => format!("{anchor} as of {}", short_sha(sha)),
        _ => anchor.to_owned(),
    }
}

/// "lease 12 min left", "lease 40 s left", or "lease lapsed"; a number and its unit
/// never break apart (a no-break space between them).
pub fn lease_left(expires: Timestamp, now: Timestamp) -> String {
    let ms = expires.unix_millis() - now.unix_millis();
    if ms <= 0 {
        "lease lapsed".to_owned()
    } else if ms < 60_000 {
        format!("lease {}\u{a0}s left", (ms + 999) / 1000)
    } else {
        format!("lease {}\u{a0}min left", (ms + 59_999) / 60_000)
    }
}

pub use redline_protocol::relative_time;

/// The queue's presence line: each agent seen lately and what it is doing now.
pub fn presence_line(agents: &[AgentPresence], now: Timestamp) -> String {
    if agents.is_empty() {
        return format!(
            "No agent has worked this queue in the last {} days: run `redline wait --claim --claimed-by NAME` in \
             the app's checkout.",
            redline_protocol::AGENTS_SEEN_DAYS
        );
    }
    let each: Vec<String> = agents.iter().map(|a| a.describe(now)).collect();
    format!("Agents: {}", each.join(" · "))
}

/// The whole queue the panel holds, keyed by `changeId`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Queue {
    rows: BTreeMap<String, Row>,
}

/// What [`Queue::merge`], [`Queue::refresh`] or [`Queue::remove`] changed, so the view touches only those rows.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Diff {
    pub added: Vec<String>,
    pub changed: Vec<String>,
    pub removed: Vec<String>,
}

impl Diff {
    pub fn is_empty(&self) -> bool {
        self.added.is_empty() && self.changed.is_empty() && self.removed.is_empty()
    }
}

impl Queue {
    /// Adds a page of `listChanges` (or one item) to what is held: rows it names are
    /// added or updated, none is dropped.
    pub fn merge(&mut self, changes: Vec<Change>, groups: &[Group]) -> Diff {
        let groups: HashMap<&str, &Group> = groups.iter().map(|g| (g.group_id.as_str(), g)).collect();
        let mut diff = Diff::default();
        for change in changes {
            let group = change.group_id.as_deref().and_then(|id| groups.get(id)).map(|g| (*g).clone());
            let row = Row { change, group };
            let id = row.change.change_id.clone();
            match self.rows.get(&id) {
                None => diff.added.push(id.clone()),
                Some(old) if old != &row => diff.changed.push(id.clone()),
                Some(_) => continue,
            }
            self.rows.insert(id, row);
        }
        diff
    }

    /// Takes a fresh first page of one part of the list (`pages::Part`, told apart by
    /// `in_part`) as the truth for the range it covers: its rows are merged, and the
    /// part's rows it no longer lists are dropped, those numbered `covers_from` or above
    /// (the page is newest first; `0`: it was the last page, so it covers them all). Rows
    /// of older pages are kept as they were read.
    pub fn refresh(
        &mut self,
        changes: Vec<Change>,
        groups: &[Group],
        in_part: impl Fn(ChangeStatus) -> bool,
        covers_from: u64,
    ) -> Diff {
        let listed: std::collections::HashSet<String> = changes.iter().map(|c| c.change_id.clone()).collect();
        let mut diff = self.merge(changes, groups);
        let gone: Vec<String> = self
            .rows
            .values()
            .filter(|r| {
                in_part(r.change.status)
                    && number_of(&r.change.short_id) >= covers_from
                    && !listed.contains(&r.change.change_id)
            })
            .map(|r| r.change.change_id.clone())
            .collect();
        for id in &gone {
            self.rows.remove(id);
        }
        diff.removed = gone;
        diff
    }

    /// Drops an item no longer listed under the filter.
    pub fn remove(&mut self, change_id: &str) -> Diff {
        let removed = self.rows.remove(change_id).map(|_| vec![change_id.to_owned()]).unwrap_or_default();
        Diff { removed, ..Diff::default() }
    }

    pub fn get(&self, change_id: &str) -> Option<&Row> {
        self.rows.get(change_id)
    }

    pub fn len(&self) -> usize {
        self.rows.len()
    }

    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    pub fn rows(&self) -> impl Iterator<Item = &Row> {
        self.rows.values()
    }

    /// The ids of each non-empty section, in section order. Within a section: questions
    /// and held items oldest first (answer in order), the rest newest first. Dismissed
    /// items only when `show_dismissed`.
    pub fn sections(&self, me: &str, now: Timestamp, show_dismissed: bool) -> Vec<(Section, Vec<String>)> {
        let mut by_section: BTreeMap<Section, Vec<&Row>> = BTreeMap::new();
        for row in self.rows.values() {
            let section = row.section(me, now);
            if section == Section::Dismissed && !show_dismissed {
                continue;
            }
            by_section.entry(section).or_default().push(row);
        }
        by_section
            .into_iter()
            .map(|(section, mut rows)| {
                rows.sort_by_key(|r| (r.change.created_at, number_of(&r.change.short_id)));
                if !matches!(section, Section::NeedsAnswer | Section::Held) {
                    rows.reverse();
                }
                (section, rows.into_iter().map(|r| r.change.change_id.clone()).collect())
            })
            .collect()
    }

    /// How many items wait for `me`'s answer (the toolbar badge).
    pub fn needs_answer_count(&self, me: &str) -> usize {
        self.rows.values().filter(|r| needs_my_answer(&r.change, me)).count()
    }

    /// How many of `me`'s fixes wait for a check on the stage (the toolbar badge).
    pub fn check_count(&self, me: &str) -> usize {
        self.rows.values().filter(|r| crate::rules::verify::waits_for_my_check(&r.change, me)).count()
    }
}

/// An item's number (`shortId` as a number; 0 when it is not one).
pub fn number_of(short_id: &str) -> u64 {
    short_id.parse().unwrap_or(0)
}

/// An item asks `me` something: it is `needs_answer` and `me` filed it (or the server
/// does not say who did).
pub fn needs_my_answer(change: &Change, me: &str) -> bool {
    change.status == ChangeStatus::NeedsAnswer && change.filed_by.as_deref().is_none_or(|by| by == me)
}

/// The next selected row for `j` (`delta` 1) or `k` (-1) over the visible `order`.
pub fn move_selection(order: &[String], current: Option<&str>, delta: i32) -> Option<String> {
    if order.is_empty() {
        return None;
    }
    let at = current.and_then(|id| order.iter().position(|o| o == id));
    let next = match at {
        None if delta >= 0 => 0,
        None => order.len() - 1,
        Some(i) => (i as i64 + delta as i64).clamp(0, order.len() as i64 - 1) as usize,
    };
    Some(order[next].clone())
}

/// Reconnect delay for the event stream after `attempt` failures (1 s doubling to 30 s),
/// with `jitter` in `[0, 1)` spreading ±20 %.
pub fn reconnect_delay_ms(attempt: u32, jitter: f64) -> f64 {
    let base = (1_000.0 * 2f64.powi(attempt.min(5) as i32)).min(30_000.0);
    base * (0.8 + 0.4 * jitter.clamp(0.0, 1.0))
}

/// After this many failed connections in a row the panel polls instead (and keeps
/// trying the stream at the longest delay).
pub const POLL_AFTER_FAILURES: u32 = 3;
/// How often the panel re-reads the list when there is no stream.
pub const POLL_INTERVAL_MS: f64 = 10_000.0;

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const ME: &str = "ada";

    fn change(id: &str, short: u32, status: &str, extra: serde_json::Value) -> Change {
        let mut value = json!({
            "changeId": id, "shortId": short.to_string(), "projectId": "p", "stageId": "s",
            "groupId": null, "title": format!("item {short}"), "body": null, "status": status,
            "route": "/orders", "gitSha": null, "deploymentId": null, "locale": null, "viewport": null,
            "capture": null, "screenshotKey": null, "consoleErrors": [], "source": "extension",
            "filedBy": ME, "branch": null, "headCommit": null, "resolvedAt": null, "live": null,
            "createdAt": Timestamp::from_unix_millis(1_000_000 + short as i64 * 1000), "held": false,
            "heldUntil": null,
        });
        for (k, v) in extra.as_object().unwrap() {
            value[k] = v.clone();
        }
        serde_json::from_value(value).unwrap()
    }

    fn group(id: &str, expires: i64) -> Group {
        serde_json::from_value(json!({
            "groupId": id, "projectId": "p", "title": "Changes on /orders", "claimedBy": "claude",
            "claimExpiresAt": Timestamp::from_unix_millis(expires), "createdAt": Timestamp::from_unix_millis(0),
            "fence": 3,
        }))
        .unwrap()
    }

    fn now() -> Timestamp {
        Timestamp::from_unix_millis(2_000_000)
    }

    #[test]
    fn items_fall_into_sections_in_the_panel_order() {
        let changes = vec![
            change("a", 1, "open", json!({})),
            change("b", 2, "needs_answer", json!({})),
            change(
                "c",
                3,
                "open",
                json!({"held": true, "heldUntil": Timestamp::from_unix_millis(2_030_000)}),
            ),
            change("d", 4, "claimed", json!({"groupId": "g1"})),
            change("e", 5, "claimed", json!({"groupId": "g2"})),
            change("f", 6, "done", json!({"branch": "main", "headCommit": "a91c4e2ffee"})),
            change("g", 7, "dismissed", json!({})),
            change("h", 8, "in_progress", json!({})),
            change("i", 9, "open", json!({"held": true, "filedBy": "bob"})),
            change("j", 10, "done", json!({"headCommit": "b1", "live": true})),
            change(
                "k",
                11,
                "done",
                json!({"headCommit": "b2", "live": true, "verifiedAt": Timestamp::from_unix_millis(3)}),
            ),
        ];
        let groups = [group("g1", 2_600_000), group("g2", 1_500_000)];
        let mut queue = Queue::default();
        queue.merge(changes, &groups);
        let sections = queue.sections(ME, now(), false);
        let names: Vec<(Section, Vec<&str>)> =
            sections.iter().map(|(s, ids)| (*s, ids.iter().map(String::as_str).collect())).collect();
        assert_eq!(
            names,
            vec![
                (Section::NeedsAnswer, vec!["b"]),
                (Section::Held, vec!["c"]),
                // a lapsed lease is waiting again; someone else's hold waits too; newest first
                (Section::Waiting, vec!["i", "e", "a"]),
                (Section::Working, vec!["h", "d"]),
                // live and not yet verified: above Done; a verified one is done
                (Section::Check, vec!["j"]),
                (Section::Done, vec!["k", "f"]),
            ]
        );
        assert_eq!(queue.sections(ME, now(), true).last().unwrap().0, Section::Dismissed);
        assert_eq!(queue.needs_answer_count(ME), 1);
        assert_eq!(queue.needs_answer_count("bob"), 0);
        assert_eq!(queue.check_count(ME), 1);
        assert_eq!(queue.check_count("bob"), 0);
        assert_eq!(queue.get("j").unwrap().class(), "row check");
        assert_eq!(queue.get("k").unwrap().class(), "row done");
    }

    #[test]
    fn pages_merge_and_a_fresh_first_page_drops_only_what_it_covers() {
        let mut queue = Queue::default();
        let diff =
            queue.merge(vec![change("a", 9, "open", json!({})), change("b", 5, "open", json!({}))], &[]);
        assert_eq!(diff.added, vec!["a".to_owned(), "b".to_owned()]);
        // An older page; then one item again, changed.
        queue.merge(vec![change("c", 2, "open", json!({})), change("z", 1, "done", json!({}))], &[]);
        let diff = queue.merge(vec![change("b", 5, "needs_answer", json!({}))], &[]);
        assert_eq!(diff, Diff { added: vec![], changed: vec!["b".into()], removed: vec![] });
        assert!(queue.merge(vec![change("b", 5, "needs_answer", json!({}))], &[]).is_empty());
        // The first page again, covering #5 and up: `a` is gone, `c` (#2) is older than
        // the page and kept, and the done `z` belongs to the other part.
        let active = |s: ChangeStatus| s != ChangeStatus::Done;
        let diff = queue.refresh(vec![change("b", 5, "needs_answer", json!({}))], &[], active, 5);
        assert_eq!(diff.removed, vec!["a".to_owned()]);
        assert!(queue.get("c").is_some() && queue.get("z").is_some());
        // A last page covers everything.
        assert_eq!(queue.refresh(vec![], &[], active, 0).removed, vec!["b".to_owned(), "c".to_owned()]);
        assert_eq!(queue.remove("z").removed, vec!["z".to_owned()]);
        assert!(queue.remove("z").is_empty());
        assert!(queue.is_empty());
    }

    #[test]
    fn rows_say_who_claimed_and_what_shipped() {
        let row = Row {
            change: change("d", 4, "claimed", json!({"groupId": "g1"})),
            group: Some(group("g1", 2_600_000)),
        };
        assert_eq!(
            row.claim_line(now(), &[]).unwrap(),
            "claimed by claude · Changes on /orders · lease 10\u{a0}min left"
        );
        let seen = |name: &str, waiting, minutes: i64| AgentPresence {
            name: name.into(),
            waiting,
            last_seen_at: Some(Timestamp::from_unix_millis(now().unix_millis() - minutes * 60_000)),
        };
        let waiting = [seen("other", false, 1), seen("claude", true, 0)];
        assert_eq!(
            row.claim_line(now(), &waiting).unwrap(),
            "claimed by claude, waiting · Changes on /orders · lease 10\u{a0}min left"
        );
        let away = [seen("claude", false, 40)];
        assert!(
            row.claim_line(now(), &away).unwrap().starts_with("claimed by claude, last seen 40 min ago · ")
        );
        assert_eq!(
            presence_line(&[seen("claude", true, 0), seen("codex", false, 3)], now()),
            "Agents: claude waiting · codex working (seen 3 min ago)"
        );
        assert!(presence_line(&[], now()).starts_with("No agent has worked this queue in the last 7 days"));
        assert_eq!(row.number(), "#4");
        let done = Row {
            change: change("f", 6, "done", json!({"branch": "main", "headCommit": "a91c4e2ffee"})),
            group: None,
        };
        assert_eq!(done.build_line().unwrap(), "main @ a91c4e2");
        assert_eq!(build_line(None, Some("a91c4e2ffee")).unwrap(), "a91c4e2");
        assert_eq!(build_line(Some("main"), None), None);
        assert_eq!(anchor_line("src/app.tsx:42", Some("0123456789")), "src/app.tsx:42 as of 0123456");
        assert_eq!(anchor_line("src/app.tsx:42", None), "src/app.tsx:42");
    }

    #[test]
    fn only_https_fix_links_are_shown() {
        let links = |extra| fix_links(&change("a", 1, "done", extra));
        assert_eq!(links(json!({})), vec![]);
        assert_eq!(
            links(json!({
                "commitUrl": "https://github.com/o/r/commit/a91c4e2",
                "pullRequestUrl": "https://github.com/o/r/pull/7"
            })),
            vec![
                ("commit", "https://github.com/o/r/commit/a91c4e2".to_owned()),
                ("pull request", "https://github.com/o/r/pull/7".to_owned())
            ]
        );
        for bad in ["javascript:alert(1)", "http://github.com/o/r/pull/7", "https://", "https://a b"] {
            assert_eq!(links(json!({ "pullRequestUrl": bad })), vec![], "{bad}");
        }
    }

    #[test]
    fn leases_read_like_people_say_them() {
        let t = |ms| Timestamp::from_unix_millis(ms);
        assert_eq!(lease_left(t(100_000), t(60_500)), "lease 40\u{a0}s left");
        assert_eq!(lease_left(t(0), t(1)), "lease lapsed");
    }

    #[test]
    fn done_items_are_live_once_deployed_and_rows_look_like_their_status() {
        let row = |status, live| Row { change: change("a", 1, status, json!({ "live": live })), group: None };
        assert!(row("done", json!(true)).is_live());
        assert!(!row("done", json!(false)).is_live());
        assert!(!row("done", json!(null)).is_live());
        // `live` is about a done item's commit; a reopened one is not shown live.
        assert!(!row("open", json!(true)).is_live());
        assert_eq!(row_class(ChangeStatus::Done), "row done");
        assert_eq!(row_class(ChangeStatus::NeedsAnswer), "row asks");
        assert_eq!(row_class(ChangeStatus::Dismissed), "row dismissed");
        assert_eq!(row_class(ChangeStatus::Claimed), "row");
    }

    #[test]
    fn j_and_k_move_within_the_visible_rows() {
        let order: Vec<String> = ["a", "b", "c"].map(String::from).to_vec();
        assert_eq!(move_selection(&order, None, 1).as_deref(), Some("a"));
        assert_eq!(move_selection(&order, None, -1).as_deref(), Some("c"));
        assert_eq!(move_selection(&order, Some("a"), 1).as_deref(), Some("b"));
        assert_eq!(move_selection(&order, Some("c"), 1).as_deref(), Some("c"));
        assert_eq!(move_selection(&order, Some("a"), -1).as_deref(), Some("a"));
        assert_eq!(move_selection(&order, Some("gone"), 1).as_deref(), Some("a"));
        assert_eq!(move_selection(&[], Some("a"), 1), None);
    }

    #[test]
    fn an_item_whose_filer_is_not_named_asks_me() {
        let unknown_filer = change("x", 1, "needs_answer", json!({"filedBy": null}));
        assert!(needs_my_answer(&unknown_filer, ME));
    }

    #[test]
    fn reconnects_back_off_to_thirty_seconds() {
        assert_eq!(reconnect_delay_ms(0, 0.5), 1_000.0);
        assert_eq!(reconnect_delay_ms(2, 0.5), 4_000.0);
        assert_eq!(reconnect_delay_ms(20, 0.5), 30_000.0);
        assert_eq!(reconnect_delay_ms(0, 0.0), 800.0);
    }
}

//! The agent CLI's pure decisions: how long `next` sleeps, backoff, the title of a
//! claimed group, item references, which stage `--stage` names, what counts as work.

use std::time::Duration;

use redline_protocol::{
    CLAIM_ALL_MAX, Change, ChangeRef, ChangeStatus, Group, STATS_MAX_DAYS, Stage, Timestamp,
    parse_change_ref, stage_for_url,
};

/// The most items the agent reads of one list, page by page (five of 200): beyond it an
/// agent's look is a sample of the queue, not all of it.
pub const LIST_READ_MAX: usize = 1_000;
/// The most messages the agent reads of one thread (its latest), page by page.
pub const THREAD_READ_MAX: usize = 1_000;

/// Reconnect and retry backoff: 1 s, 2 s, 4 s, … at most 60 s.
pub fn backoff(failures: u32) -> Duration {
    Duration::from_secs(1u64.checked_shl(failures.min(6)).unwrap_or(64).min(60))
}

/// `next` sleeps until the soonest moment an item it can see may become claimable:
/// the soonest `heldUntil` of a held item, or the end of a live lease on an `open` or
/// `claimed` item, plus one second (so the server's clock has passed it too). `None`
/// when nothing will become claimable by itself.
pub fn next_wake(changes: &[Change], groups: &[Group], now: Timestamp) -> Option<Timestamp> {
    let held = changes.iter().filter(|c| c.held).filter_map(|c| c.held_until);
    let leases = changes
        .iter()
        .filter(|c| matches!(c.status, ChangeStatus::Open | ChangeStatus::Claimed) && !c.held)
        .filter_map(|c| c.group_id.as_deref())
        .filter_map(|g| groups.iter().find(|gr| gr.group_id == g))
        .filter_map(|g| g.claim_expires_at)
        .filter(|end| *end > now);
    held.chain(leases).min().map(|t| t.plus_seconds(1))
}

/// How long to sleep for a wake-up at `wake`: never less than the backoff of the
/// wake-ups that came too early (a client clock ahead of the server's would otherwise
/// spin), never negative.
pub fn sleep_until_wake(wake: Timestamp, now: Timestamp, early_wakes: u32) -> Duration {
    let ms = (wake.unix_millis() - now.unix_millis()).max(0) as u64;
    let floor = if early_wakes == 0 { Duration::ZERO } else { backoff(early_wakes - 1) };
    Duration::from_millis(ms).max(floor)
}

/// The title `next --claim` gives its group: "Changes on `<route>`" when every item
/// shares one route, else "Changes batch".
pub fn group_title(changes: &[Change]) -> String {
    let mut routes = changes.iter().map(|c| c.route.as_deref());
    match routes.next() {
        Some(Some(first)) if routes.all(|r| r == Some(first)) => format!("Changes on {first}"),
        _ => "Changes batch".to_owned(),
    }
}

/// The claimable items as changesets, each claimed as one group: one per route, in the
/// order the routes first appear (a list is oldest first, so the oldest route leads;
/// items with no route together), at most [`CLAIM_ALL_MAX`] items each. `redline run`
/// claims one per agent, and `wait --claim` the first another agent has not taken, so
/// agents sharing a queue each take a route.
pub fn batches(changes: &[Change]) -> Vec<Vec<Change>> {
    let mut out: Vec<Vec<Change>> = Vec::new();
    for c in changes {
        match out.iter_mut().find(|b| b[0].route == c.route && b.len() < CLAIM_ALL_MAX) {
            Some(batch) => batch.push(c.clone()),
            None => out.push(vec![c.clone()]),
        }
    }
    out
}

/// An item reference as typed: `2`, `#2` or a UUID. Returns what the server takes
/// (`2` or the lower-cased UUID).
pub fn parse_item(s: &str) -> Result<String, String> {
    match parse_change_ref(s) {
        Some(ChangeRef::Short(n)) => Ok(n.to_string()),
        Some(ChangeRef::Id(id)) => Ok(id),
        None => Err(format!("{s:?} is not an item: use its number (2 or #2) or its id (a UUID)")),
    }
}

/// A number of days as `--since` takes it: `30d` or `30`, 1 to [`STATS_MAX_DAYS`].
pub fn parse_days(s: &str) -> Result<u32, String> {
    let digits = s.trim().strip_suffix('d').unwrap_or(s.trim());
    match digits.parse::<u32>() {
        Ok(days) if (1..=STATS_MAX_DAYS).contains(&days) => Ok(days),
        _ => Err(format!("{s:?} is not a number of days from 1 to {STATS_MAX_DAYS}, such as 30d")),
    }
}

/// The stage `--stage` names: its id, its branch, or its URL (the stage whose URL is
/// the longest prefix of the one given).
pub fn pick_stage<'a>(stages: &'a [Stage], wanted: &str) -> Result<&'a Stage, String> {
    let wanted = wanted.trim();
    if let Some(s) = stages.iter().find(|s| s.stage_id.eq_ignore_ascii_case(wanted)) {
        return Ok(s);
    }
    if let Some(s) = stages.iter().find(|s| s.branch == wanted) {
        return Ok(s);
    }
    stage_for_url(stages, wanted).ok_or_else(|| {
        let known: Vec<String> = stages
            .iter()
            .map(|s| format!("{} ({})", s.branch, s.url.as_deref().unwrap_or("no URL")))
            .collect();
        format!(
            "no stage {wanted:?}: the project has {}",
            if known.is_empty() { "no stages".to_owned() } else { known.join(", ") }
        )
    })
}

/// The stage to file on when `--stage` is not given: the only one, else production.
pub fn default_stage(stages: &[Stage]) -> Result<&Stage, String> {
    match stages {
        [] => Err("the project has no stages".to_owned()),
        [one] => Ok(one),
        many => many
            .iter()
            .find(|s| s.branch == "main")
            .ok_or_else(|| "the project has several stages: choose one with --stage".to_owned()),
    }
}

/// The items of `groups` claimed by `claimed_by` that may hold an answer for it: the
/// ones `in_progress` (an answer moves an item there) or `needs_answer` (asked again
/// before an earlier answer was shown).
pub fn answer_candidates<'a>(changes: &'a [Change], groups: &[Group], claimed_by: &str) -> Vec<&'a Change> {
    changes
        .iter()
        .filter(|c| matches!(c.status, ChangeStatus::InProgress | ChangeStatus::NeedsAnswer))
        .filter(|c| {
            c.group_id.as_deref().is_some_and(|g| {
                groups.iter().any(|gr| gr.group_id == g && gr.claimed_by.as_deref() == Some(claimed_by))
            })
        })
        .collect()
}

/// The items a person may have sent back to `claimed_by` with a `still_wrong` verdict:
/// open, in no group and not held (as a `still_wrong` verdict leaves an item), and last
/// completed as `claimed_by`. Whether the verdict came is for the thread to say
/// ([`redline_protocol::sent_back`]).
pub fn sent_back_candidates<'a>(changes: &'a [Change], claimed_by: &str) -> Vec<&'a Change> {
    changes
        .iter()
        .filter(|c| c.status == ChangeStatus::Open && c.group_id.is_none() && !c.held)
        .filter(|c| c.completed_by.as_deref() == Some(claimed_by))
        .collect()
}

#[cfg(test)]
pub(crate) mod tests {
    use redline_protocol::{Source, StageType};

    use super::*;

    #[test]
    fn one_batch_per_route_oldest_route_first() {
        let mut items: Vec<Change> = (1..=5).map(change).collect();
        for (c, route) in items.iter_mut().zip([Some("/a"), Some("/b"), Some("/a"), None, Some("/b")]) {
            c.route = route.map(str::to_owned);
        }
        let made = batches(&items);
        let numbers: Vec<Vec<&str>> =
            made.iter().map(|b| b.iter().map(|c| c.short_id.as_str()).collect()).collect();
        assert_eq!(numbers, [vec!["1", "3"], vec!["2", "5"], vec!["4"]]);
        let many: Vec<Change> = (1..=51).map(change).collect();
        let sizes: Vec<usize> = batches(&many).iter().map(Vec::len).collect();
        assert_eq!(sizes, [CLAIM_ALL_MAX, 1]);
    }

    #[test]
    fn since_takes_days_with_or_without_their_d() {
        assert_eq!(parse_days("30d"), Ok(30));
        assert_eq!(parse_days("7"), Ok(7));
        assert_eq!(parse_days("3650d"), Ok(3650));
        for bad in ["0d", "3651", "2w", "d", "-1", ""] {
            assert!(parse_days(bad).is_err(), "{bad}");
        }
    }

    pub const NOW: Timestamp = Timestamp::from_unix_millis(1_795_973_727_000);

    pub fn change(short: u32) -> Change {
        Change {
            change_id: format!("00000000-0000-4000-8000-{short:012}"),
            short_id: short.to_string(),
            project_id: "p".into(),
            stage_id: "s".into(),
            group_id: None,
            title: format!("Item {short}"),
            body: None,
            status: ChangeStatus::Open,
            route: None,
            git_sha: None,
            deployment_id: None,
            locale: None,
            viewport: None,
            capture: None,
            screenshot_key: None,
            console_errors: vec![],
            source: Source::Extension,
            filed_by: Some("Ann".into()),
            branch: None,
            head_commit: None,
            resolved_at: None,
            live: None,
            verified_at: None,
            verified_by: None,
            completed_by: None,
            commit_url: None,
            pull_request_url: None,
            created_at: NOW,
            held: false,
            held_until: None,
            screenshot_url: None,
            element_count: None,
            console_error_count: None,
            message_count: None,
        }
    }

    pub fn group(id: &str, by: &str, until: Timestamp) -> Group {
        Group {
            group_id: id.into(),
            project_id: "p".into(),
            title: "t".into(),
            claimed_by: Some(by.into()),
            claim_expires_at: Some(until),
            created_at: NOW,
            fence: 1,
        }
    }

    #[test]
    fn backoff_doubles_to_a_minute() {
        let secs: Vec<u64> = (0..9).map(|n| backoff(n).as_secs()).collect();
        assert_eq!(secs, [1, 2, 4, 8, 16, 32, 60, 60, 60]);
        assert_eq!(backoff(u32::MAX).as_secs(), 60);
    }

    #[test]
    fn wakes_a_second_after_the_soonest_hold_or_lease() {
        assert_eq!(next_wake(&[change(1)], &[], NOW), None);
        let mut a = change(1);
        a.held = true;
        a.held_until = Some(NOW.plus_seconds(40));
        let mut b = change(2);
        b.held = true;
        b.held_until = Some(NOW.plus_seconds(20));
        assert_eq!(next_wake(&[a.clone(), b.clone()], &[], NOW), Some(NOW.plus_seconds(21)));
        // A live lease on a claimed item that ends sooner wins; a lapsed one is ignored.
        let mut c = change(3);
        c.status = ChangeStatus::Claimed;
        c.group_id = Some("g".into());
        let soon = [group("g", "agent-b", NOW.plus_seconds(5))];
        assert_eq!(next_wake(&[a.clone(), b.clone(), c.clone()], &soon, NOW), Some(NOW.plus_seconds(6)));
        let lapsed = [group("g", "agent-b", NOW)];
        assert_eq!(next_wake(&[a, b, c.clone()], &lapsed, NOW), Some(NOW.plus_seconds(21)));
        // A held item counts even if its hold looks over on our clock.
        let mut d = change(4);
        d.held = true;
        d.held_until = Some(NOW.plus_seconds(-3));
        assert_eq!(next_wake(&[d], &[], NOW), Some(NOW.plus_seconds(-2)));
    }

    #[test]
    fn sleeps_exactly_until_the_wake_but_backs_off_when_early() {
        assert_eq!(sleep_until_wake(NOW.plus_millis(4_500), NOW, 0), Duration::from_millis(4_500));
        assert_eq!(sleep_until_wake(NOW.plus_seconds(-5), NOW, 0), Duration::ZERO);
        assert_eq!(sleep_until_wake(NOW.plus_seconds(-5), NOW, 1), Duration::from_secs(1));
        assert_eq!(sleep_until_wake(NOW.plus_seconds(-5), NOW, 3), Duration::from_secs(4));
        assert_eq!(sleep_until_wake(NOW.plus_seconds(10), NOW, 2), Duration::from_secs(10));
    }

    #[test]
    fn titles_groups_by_route() {
        let on = |short, route: Option<&str>| Change { route: route.map(Into::into), ..change(short) };
        assert_eq!(group_title(&[on(1, Some("/orders")), on(2, Some("/orders"))]), "Changes on /orders");
        assert_eq!(group_title(&[on(1, Some("/orders"))]), "Changes on /orders");
        assert_eq!(group_title(&[on(1, Some("/orders")), on(2, Some("/cart"))]), "Changes batch");
        assert_eq!(group_title(&[on(1, Some("/orders")), on(2, None)]), "Changes batch");
        assert_eq!(group_title(&[on(1, None)]), "Changes batch");
        assert_eq!(group_title(&[]), "Changes batch");
    }

    #[test]
    fn parses_item_references() {
        assert_eq!(parse_item("2").unwrap(), "2");
        assert_eq!(parse_item("#2").unwrap(), "2");
        assert_eq!(
            parse_item("3F2504E0-4F89-11D3-9A0C-0305E82C3301").unwrap(),
            "3f2504e0-4f89-11d3-9a0c-0305e82c3301"
        );
        assert!(parse_item("two").unwrap_err().contains("use its number"));
        assert!(parse_item("").is_err());
    }

    fn stage(id: &str, branch: &str, url: &str) -> Stage {
        Stage {
            stage_id: id.into(),
            project_id: "p".into(),
            branch: branch.into(),
            stage_type: if branch == "main" { StageType::Production } else { StageType::Preview },
            url: Some(url.into()),
            git_sha: None,
            deployment_id: None,
            changes_enabled: true,
            created_at: NOW,
        }
    }

    #[test]
    fn picks_stages_by_id_branch_or_url() {
        let stages = [
            stage("s1", "main", "https://demo.example.com"),
            stage("s2", "feat", "https://demo.example.com/preview/feat"),
        ];
        assert_eq!(pick_stage(&stages, "s2").unwrap().stage_id, "s2");
        assert_eq!(pick_stage(&stages, "main").unwrap().stage_id, "s1");
        assert_eq!(pick_stage(&stages, "https://demo.example.com/orders").unwrap().stage_id, "s1");
        assert_eq!(pick_stage(&stages, "https://demo.example.com/preview/feat/x").unwrap().stage_id, "s2");
        assert_eq!(pick_stage(&stages, "https://demo.example.com/").unwrap().stage_id, "s1");
        let e = pick_stage(&stages, "https://demo.example.community").unwrap_err();
        assert!(e.contains("main (https://demo.example.com)"), "{e}");
        assert_eq!(default_stage(&stages).unwrap().stage_id, "s1");
        assert_eq!(default_stage(&stages[1..]).unwrap().stage_id, "s2");
        assert!(default_stage(&[]).is_err());
    }

    #[test]
    fn answers_are_in_progress_or_asked_again_items_of_the_agents_groups() {
        let mut a = change(1);
        a.status = ChangeStatus::InProgress;
        a.group_id = Some("g1".into());
        let mut b = change(2);
        b.status = ChangeStatus::InProgress;
        b.group_id = Some("g2".into());
        let mut c = change(3);
        c.status = ChangeStatus::NeedsAnswer;
        c.group_id = Some("g1".into());
        let mut d = change(4);
        d.status = ChangeStatus::Claimed;
        d.group_id = Some("g1".into());
        let groups = [group("g1", "agent-a", NOW), group("g2", "agent-b", NOW)];
        let all = [a, b, c, d];
        let found: Vec<&str> =
            answer_candidates(&all, &groups, "agent-a").iter().map(|c| c.short_id.as_str()).collect();
        assert_eq!(found, ["1", "3"]);
    }

    #[test]
    fn sent_back_items_are_open_ungrouped_and_completed_by_the_agent() {
        let mut mine = change(1);
        mine.completed_by = Some("agent-a".into());
        let mut theirs = change(2);
        theirs.completed_by = Some("agent-b".into());
        let mut claimed = mine.clone();
        (claimed.short_id, claimed.status, claimed.group_id) =
            ("3".into(), ChangeStatus::Claimed, Some("g".into()));
        let mut held = mine.clone();
        (held.short_id, held.held) = ("4".into(), true);
        let never_done = change(5);
        let all = [mine, theirs, claimed, held, never_done];
        let found: Vec<&str> =
            sent_back_candidates(&all, "agent-a").iter().map(|c| c.short_id.as_str()).collect();
        assert_eq!(found, ["1"]);
    }
}

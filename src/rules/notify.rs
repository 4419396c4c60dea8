//! Browser notifications for the filer: which of the items waiting for them (a question
//! the agent asked, a fix live on the stage to check) to announce, and what the
//! notification says. Pure: the worker's badge poll (`worker/badge.rs`) reads the queue,
//! asks [`decide`], shows what it answers and stores the [`Memory`] it returns.

use std::collections::BTreeMap;

use redline_protocol::rpc::{CountChangesOutput, WaitingChange, WaitingReason};
use redline_protocol::{Change, display_short_id};
use serde::{Deserialize, Serialize};

/// The `chrome.storage.local` key of the [`Memory`]: local rather than session, so that
/// neither a restarted worker nor a restarted browser announces again what it already did.
pub const STORAGE_KEY: &str = "notified";

/// An item is announced at most once in this long, however often its state flips.
pub const SPACING_MS: i64 = 60_000;

/// More new items than this in one poll (the first poll after signing in, say) are
/// announced as one summary rather than one notification each.
pub const MAX_PER_POLL: usize = 3;

/// The id of the summary notification; a click on it opens the panel on the queue.
pub const SUMMARY_ID: &str = "redline-queue";

/// The `chrome.storage.session` key where a click on a notification leaves the item for
/// the panel to open (the panel may still be loading, or open already).
pub const OPEN_ITEM_KEY: &str = "openItem";

/// The prefix of an item's notification id: `redline-item:<changeId>`.
const ITEM_PREFIX: &str = "redline-item:";

/// Why an item waits for the person.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Reason {
    /// The agent asked them a question (`needs_answer`).
    Question,
    /// The fix is live on the stage and waits for their check.
    Check,
}

/// An item waiting for the person now.
#[derive(Debug, Clone, PartialEq)]
pub struct Waiting {
    pub change_id: String,
    pub short_id: String,
    pub title: String,
    pub reason: Reason,
}

impl Waiting {
    pub fn new(change: &Change, reason: Reason) -> Waiting {
        Waiting {
            change_id: change.change_id.clone(),
            short_id: change.short_id.clone(),
            title: change.title.clone(),
            reason,
        }
    }
}

impl From<&WaitingChange> for Waiting {
    fn from(w: &WaitingChange) -> Waiting {
        let reason = match w.reason {
            WaitingReason::Question => Reason::Question,
            WaitingReason::Check => Reason::Check,
        };
        Waiting {
            change_id: w.change_id.clone(),
            short_id: w.short_id.clone(),
            title: w.title.clone(),
            reason,
        }
    }
}

/// The badge's questions and checks, and the items to announce, from a `countChanges`
/// answer. It lists at most `WAITING_MAX` of the items waiting, newest first: past that
/// the total is still right, and the ones not listed are counted as checks (the tooltip's
/// split is exact up to that many).
pub fn from_counts(counts: &CountChangesOutput) -> (usize, usize, Vec<Waiting>) {
    let waiting: Vec<Waiting> = counts.waiting.iter().map(Waiting::from).collect();
    let questions = waiting.iter().filter(|w| w.reason == Reason::Question).count();
    let total = (counts.waiting_total as usize).max(waiting.len());
    (questions, total - questions, waiting)
}

/// What the worker remembers of each item between polls.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Memory {
    pub items: BTreeMap<String, Seen>,
}

/// One item in the [`Memory`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Seen {
    /// What it was known to wait for (announced, or found waiting when announcing it
    /// was not due); `None` once it no longer waits.
    pub reason: Option<Reason>,
    /// When it was last announced (ms since the epoch).
    pub notified_at: Option<i64>,
}

/// A notification to show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    /// `chrome.notifications`' id: one per item, so a newer notice replaces an older one.
    pub id: String,
    pub title: String,
    pub message: String,
}

/// Which of `waiting` to announce at `now_ms`, and the memory to keep for the next poll.
///
/// An item is announced when it waits for something it did not wait for at the last
/// poll (newly asked, newly live) and was not announced in the last [`SPACING_MS`]. One
/// that is due but was announced too recently stays unannounced in the memory, so a
/// later poll announces it once the minute is over. Items that no longer wait are
/// forgotten once their minute is over.
pub fn decide(memory: &Memory, waiting: &[Waiting], now_ms: i64) -> (Memory, Vec<Notice>) {
    let recent = |seen: &Seen| seen.notified_at.is_some_and(|at| now_ms - at < SPACING_MS);
    let mut next = Memory::default();
    let mut due = Vec::new();
    for item in waiting {
        let seen = memory.items.get(&item.change_id).copied().unwrap_or_default();
        let new = seen.reason != Some(item.reason);
        let kept = if new && !recent(&seen) {
            due.push(item);
            Seen { reason: Some(item.reason), notified_at: Some(now_ms) }
        } else if new {
            seen
        } else {
            Seen { reason: Some(item.reason), ..seen }
        };
        next.items.insert(item.change_id.clone(), kept);
    }
    for (id, seen) in &memory.items {
        if !next.items.contains_key(id) && recent(seen) {
            next.items.insert(id.clone(), Seen { reason: None, ..*seen });
        }
    }
    let notices = if due.len() > MAX_PER_POLL {
        vec![summary(due.len())]
    } else {
        due.into_iter().map(notice).collect()
    };
    (next, notices)
}

fn notice(item: &Waiting) -> Notice {
    let number = display_short_id(&item.short_id);
    let title = match item.reason {
        Reason::Question => format!("{number} needs your answer"),
        Reason::Check => format!("{number} is live: check the fix"),
    };
    Notice { id: format!("{ITEM_PREFIX}{}", item.change_id), title, message: item.title.clone() }
}

fn summary(count: usize) -> Notice {
    Notice {
        id: SUMMARY_ID.to_owned(),
        title: "Redline".to_owned(),
        message: format!("{count} items wait for you: questions to answer or fixes to check."),
    }
}

/// The item a notification is about (`None` for the summary and for ids not ours).
pub fn item_of(notification_id: &str) -> Option<&str> {
    notification_id.strip_prefix(ITEM_PREFIX).filter(|id| !id.is_empty())
}

/// Whether a notification id is one of ours (a click on another is not ours to handle).
pub fn is_ours(notification_id: &str) -> bool {
    notification_id == SUMMARY_ID || item_of(notification_id).is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn waiting(id: &str, reason: Reason) -> Waiting {
        Waiting {
            change_id: id.into(),
            short_id: id.trim_start_matches('c').into(),
            title: format!("Item {id}"),
            reason,
        }
    }

    fn ids(notices: &[Notice]) -> Vec<&str> {
        notices.iter().map(|n| n.id.as_str()).collect()
    }

    #[test]
    fn a_new_question_is_announced_once() {
        let (memory, notices) = decide(&Memory::default(), &[waiting("c7", Reason::Question)], 0);
        assert_eq!(
            notices,
            vec![Notice {
                id: "redline-item:c7".into(),
                title: "#7 needs your answer".into(),
                message: "Item c7".into()
            }]
        );
        // Still waiting at the next polls: nothing new.
        let (memory, again) = decide(&memory, &[waiting("c7", Reason::Question)], 30_000);
        assert!(again.is_empty());
        let (_, later) = decide(&memory, &[waiting("c7", Reason::Question)], 600_000);
        assert!(later.is_empty());
    }

    #[test]
    fn a_live_fix_reads_as_a_check() {
        let (_, notices) = decide(&Memory::default(), &[waiting("c3", Reason::Check)], 0);
        assert_eq!(notices[0].title, "#3 is live: check the fix");
    }

    #[test]
    fn at_most_one_per_item_per_minute_and_the_held_back_one_comes_later() {
        let (memory, first) = decide(&Memory::default(), &[waiting("c1", Reason::Question)], 0);
        assert_eq!(ids(&first), ["redline-item:c1"]);
        // Answered, then asked again within the minute.
        let (memory, none) = decide(&memory, &[], 20_000);
        assert!(none.is_empty());
        let (memory, held_back) = decide(&memory, &[waiting("c1", Reason::Question)], 40_000);
        assert!(held_back.is_empty(), "announced 40 s ago");
        // Still waiting once the minute is over: announced now.
        let (memory, due) = decide(&memory, &[waiting("c1", Reason::Question)], 61_000);
        assert_eq!(ids(&due), ["redline-item:c1"]);
        // Done and live within the minute: held back too, then announced as a check.
        let (memory, held_back) = decide(&memory, &[waiting("c1", Reason::Check)], 90_000);
        assert!(held_back.is_empty());
        let (_, due) = decide(&memory, &[waiting("c1", Reason::Check)], 125_000);
        assert_eq!(due[0].title, "#1 is live: check the fix");
    }

    #[test]
    fn items_that_stopped_waiting_are_forgotten_after_their_minute() {
        let (memory, _) = decide(&Memory::default(), &[waiting("c1", Reason::Question)], 0);
        let (memory, _) = decide(&memory, &[], 30_000);
        assert_eq!(memory.items["c1"], Seen { reason: None, notified_at: Some(0) });
        let (memory, _) = decide(&memory, &[], 60_000);
        assert!(memory.items.is_empty());
        // Asked again later: new again.
        let (_, due) = decide(&memory, &[waiting("c1", Reason::Question)], 90_000);
        assert_eq!(ids(&due), ["redline-item:c1"]);
    }

    #[test]
    fn many_new_items_at_once_are_one_summary() {
        let many: Vec<Waiting> = (1..=5).map(|i| waiting(&format!("c{i}"), Reason::Question)).collect();
        let (memory, notices) = decide(&Memory::default(), &many, 0);
        assert_eq!(ids(&notices), [SUMMARY_ID]);
        assert_eq!(notices[0].message, "5 items wait for you: questions to answer or fixes to check.");
        assert_eq!(memory.items.len(), 5);
        let (_, again) = decide(&memory, &many, 30_000);
        assert!(again.is_empty(), "each was announced by the summary");
        let few: Vec<Waiting> = many[..MAX_PER_POLL].to_vec();
        assert_eq!(decide(&Memory::default(), &few, 0).1.len(), MAX_PER_POLL);
    }

    #[test]
    fn the_memory_survives_storage() {
        let (memory, _) = decide(&Memory::default(), &[waiting("c1", Reason::Check)], 5);
        let stored = serde_json::to_value(&memory).unwrap();
        assert_eq!(stored, serde_json::json!({ "items": { "c1": { "reason": "check", "notifiedAt": 5 } } }));
        assert_eq!(serde_json::from_value::<Memory>(stored).unwrap(), memory);
    }

    #[test]
    fn counts_give_the_badge_and_what_to_announce() {
        let counts: CountChangesOutput = serde_json::from_value(serde_json::json!({
            "byStatus": {"open": 3, "claimed": 0, "needs_answer": 1, "in_progress": 0, "done": 9, "dismissed": 0},
            "held": 0,
            "waiting": [
                {"changeId": "a", "shortId": "7", "title": "Fix the logo", "reason": "question"},
                {"changeId": "b", "shortId": "8", "title": "Button", "reason": "check"},
            ],
            "waitingTotal": 23,
        }))
        .unwrap();
        let (questions, checks, waiting) = from_counts(&counts);
        assert_eq!((questions, checks), (1, 22));
        assert_eq!(
            waiting[0],
            Waiting {
                change_id: "a".into(),
                short_id: "7".into(),
                title: "Fix the logo".into(),
                reason: Reason::Question
            }
        );
        assert_eq!(waiting[1].reason, Reason::Check);
    }

    #[test]
    fn a_click_names_its_item() {
        assert_eq!(item_of("redline-item:0193-abc"), Some("0193-abc"));
        assert_eq!(item_of(SUMMARY_ID), None);
        assert_eq!(item_of("redline-item:"), None);
        assert!(is_ours(SUMMARY_ID) && is_ours("redline-item:x"));
        assert!(!is_ours("someone-else"));
    }
}

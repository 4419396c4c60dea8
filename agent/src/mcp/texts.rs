//! What `redline mcp`'s claiming and waiting tools answer, as text: a claim, and what
//! `changes_wait` found, each ending with what to do next.

use std::collections::BTreeMap;

use redline_protocol::*;

use crate::format::{self, LocalTime, SavedImages};
use crate::next::{Found, Wait};
use crate::rules::batches;

/// The text of a claim (or a renewal): the group, its lease, the items, what to do next.
pub fn claimed_text(
    out: &ClaimChangesOutput,
    renewed: bool,
    now: Timestamp,
    local: &LocalTime<'_>,
) -> String {
    let ids: Vec<String> = out.changes.iter().map(|c| format!("{:?}", c.short_id)).collect();
    format!(
        "{}\nNext: changes_show each item (changeId {}); fix it, commit, then changes_done. Ask the filer \
         with changes_ask when the request is unclear.",
        format::claimed_lines(out, renewed, now, local),
        ids.join(", ")
    )
}

/// The text of what `changes_wait` found; `saved` are the images of each answered or
/// sent-back item.
pub fn found_text(
    found: &Found,
    w: &Wait,
    waited: u64,
    saved: &[SavedImages],
    now: Timestamp,
    local: &LocalTime<'_>,
) -> String {
    match found {
        Found::Claimed(out) => claimed_text(out, false, now, local),
        Found::SentBack(items, claimed) => {
            let text = format::sent_back_text(items, saved);
            let first = items.first().map_or("", |(c, _)| c.short_id.as_str());
            match claimed {
                Some(out) => format!(
                    "{text}\n{}\nRead the thread: changes_show (changeId {first:?}); fix what they say, commit, then \
                     changes_done.",
                    claimed_text(out, false, now, local)
                ),
                None => {
                    let ids: Vec<String> = items.iter().map(|(c, _)| format!("{:?}", c.short_id)).collect();
                    let by =
                        w.claimed_by.as_deref().map_or_else(|| "YOUR_NAME".to_owned(), |b| format!("{b:?}"));
                    format!(
                        "{text}\nClaim them again: changes_claim with changeIds [{}] and claimedBy {by} (or \
                         changes_wait with claim: true).",
                        ids.join(", ")
                    )
                }
            }
        }
        Found::Answers(answers, _) => {
            let none = BTreeMap::new();
            let lines: Vec<String> = answers
                .iter()
                .enumerate()
                .map(|(i, (c, thread))| {
                    let images = saved.get(i).map_or(&none, |s| &s.attachments);
                    format!("  {}", format::answer_lines(c, thread, images))
                })
                .collect();
            let ids: Vec<String> = answers.iter().map(|(c, _)| format!("{:?}", c.short_id)).collect();
            format!(
                "{} answered:\n{}\nRead the thread: changes_show (changeId {}); then go on with the fix.",
                if answers.len() == 1 { "1 item".to_owned() } else { format!("{} items", answers.len()) },
                lines.join("\n"),
                ids.join(", then ")
            )
        }
        Found::Claimable(list) => {
            let lines: Vec<String> = list
                .changes
                .iter()
                .map(|c| format!("  {}", format::list_line(c, &list.groups, now, local)))
                .collect();
            // The first changeset: what changes_wait with claim takes.
            let first = batches(&list.changes).into_iter().next().unwrap_or_default();
            let ids: Vec<String> = first.iter().map(|c| format!("{:?}", c.short_id)).collect();
            let by = w.claimed_by.as_deref().map_or_else(|| "YOUR_NAME".to_owned(), |b| format!("{b:?}"));
            format!(
                "{} to claim:\n{}\nClaim the first changeset: changes_claim with changeIds [{}] and claimedBy {by} \
                 (or changes_wait with claim: true).",
                if list.changes.len() == 1 {
                    "1 item".to_owned()
                } else {
                    format!("{} items", list.changes.len())
                },
                lines.join("\n"),
                ids.join(", ")
            )
        }
        Found::Nothing { held, held_until } => {
            let within = if w.once { "now".to_owned() } else { format!("within {waited} s") };
            let held = match (held, held_until) {
                (0, _) => String::new(),
                (n, Some(t)) => format!("; {n} held by their filer, claimable from {}", local.hhmm(*t)),
                (n, None) => format!("; {n} held by their filer"),
            };
            let what =
                if w.claimed_by.is_some() { "no claimable item and no answer" } else { "no claimable item" };
            format!("nothing yet: {what} {within}{held}. Call changes_wait again to keep waiting.")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Polling while the event stream is down (unused by the texts).
    const POLL_INTERVAL: std::time::Duration = std::time::Duration::from_secs(15);

    #[test]
    fn nothing_yet_is_said_with_what_waits() {
        let w = Wait {
            claimed_by: Some("bot".into()),
            claim: true,
            all: false,
            title: None,
            route: None,
            lease_minutes: None,
            stage_id: None,
            deadline: None,
            once: false,
            interval: POLL_INTERVAL,
        };
        let utc = LocalTime { offset: &|_| 0 };
        let now = Timestamp::from_unix_millis(0);
        let idle = Found::Nothing { held: 0, held_until: None };
        assert_eq!(
            found_text(&idle, &w, 50, &[], now, &utc),
            "nothing yet: no claimable item and no answer within 50 s. Call changes_wait again to keep waiting."
        );
        let held = Found::Nothing { held: 2, held_until: Some(now.plus_minutes(61)) };
        assert!(
            found_text(&held, &w, 50, &[], now, &utc)
                .contains("; 2 held by their filer, claimable from 01:01.")
        );
    }

    #[test]
    fn every_answered_item_is_named_in_the_closing_hint() {
        let w = Wait {
            claimed_by: Some("bot".into()),
            claim: false,
            all: false,
            title: None,
            route: None,
            lease_minutes: None,
            stage_id: None,
            deadline: None,
            once: false,
            interval: POLL_INTERVAL,
        };
        let answered = |n: &str| -> (Change, Vec<Message>) {
            let change = serde_json::from_value(serde_json::json!({
                "changeId": n, "shortId": n, "projectId": "p", "stageId": "s", "title": "T",
                "status": "in_progress", "source": "extension", "createdAt": "2026-11-29T17:35:27Z", "held": false
            }))
            .unwrap();
            (change, Vec::new())
        };
        let found = Found::Answers(vec![answered("3"), answered("5")], Vec::new());
        let text =
            found_text(&found, &w, 50, &[], Timestamp::from_unix_millis(0), &LocalTime { offset: &|_| 0 });
        assert!(text.starts_with("2 items answered:"), "{text}");
        assert!(
            text.ends_with(
                "Read the thread: changes_show (changeId \"3\", then \"5\"); then go on with the fix."
            ),
            "{text}"
        );
    }

    #[test]
    fn a_sent_back_item_is_said_with_the_words_and_the_after_screenshot() {
        let w = Wait {
            claimed_by: Some("bot".into()),
            claim: false,
            all: false,
            title: None,
            route: None,
            lease_minutes: None,
            stage_id: None,
            deadline: None,
            once: false,
            interval: POLL_INTERVAL,
        };
        let utc = LocalTime { offset: &|_| 0 };
        let now = Timestamp::from_unix_millis(0);
        let change: Change = serde_json::from_value(serde_json::json!({
            "changeId": "c", "shortId": "4", "projectId": "p", "stageId": "s", "title": "Total is red",
            "status": "open", "source": "extension", "createdAt": "2026-11-29T17:35:27Z", "held": false,
            "completedBy": "bot"
        }))
        .unwrap();
        let verdict: Message = serde_json::from_value(serde_json::json!({
            "messageId": "m", "changeId": "c", "authorKind": "user", "authorName": "Ann",
            "body": "Still wrong: still red", "type": "verdict", "createdAt": "2026-11-29T17:40:00Z",
            "attachments": [{"key": "a.png", "label": "after", "kind": "evidence", "url": "http://x/blobs/a.png"}]
        }))
        .unwrap();
        let found = Found::SentBack(vec![(change, vec![verdict])], None);
        let saved =
            SavedImages { screenshot: None, attachments: [("a.png".into(), "/c/a.png".into())].into() };
        assert_eq!(
            found_text(&found, &w, 50, &[saved], now, &utc),
            "1 item sent back as still wrong, checked on the stage:\n  #4  Total is red\n    Ann: Still wrong: \
             still red\n    after-screenshot: /c/a.png\nClaim them again: changes_claim with changeIds [\"4\"] and \
             claimedBy \"bot\" (or changes_wait with claim: true)."
        );
    }
}

//! The held tray: the items of this batch, from "waiting to send" to "sent to the agent".
//! Pure; the overlay reads an item from the server when it leaves the outbox (which the
//! worker publishes) and when its hold ends, never on a timer of its own.

use redline_protocol::{Change, ChangeStatus, Timestamp};

use crate::rules::outbox::OutboxItem;

/// Where one filed item stands, as far as the filer is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum TrayState {
    /// In the outbox: not yet acknowledged by the server.
    WaitingToSend,
    /// On the server, held for the grace window; editable until `until`.
    Held { until: Timestamp },
    /// Released: the agent can see it.
    Sent,
    /// Withdrawn by the filer while held.
    Withdrawn,
}

/// One item of the batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TrayItem {
    pub change_id: String,
    pub title: String,
    pub state: TrayState,
}

impl TrayItem {
    pub fn queued(change_id: String, title: String) -> TrayItem {
        TrayItem { change_id, title, state: TrayState::WaitingToSend }
    }

    /// Takes in what the server says of the item. `held` is the server's verdict, on the
    /// server's clock; `heldUntil` only drives the countdown.
    pub fn update(&mut self, change: &Change) {
        self.title = change.title.clone();
        self.state = match (change.status, change.held, change.held_until) {
            (ChangeStatus::Dismissed, _, _) => TrayState::Withdrawn,
            (_, true, Some(until)) => TrayState::Held { until },
            _ => TrayState::Sent,
        };
    }

    pub fn is_held(&self) -> bool {
        matches!(self.state, TrayState::Held { .. })
    }

    fn held_until(&self) -> Option<Timestamp> {
        match self.state {
            TrayState::Held { until } => Some(until),
            _ => None,
        }
    }

    /// What the tray says about the item at `now_ms` (the filer's clock).
    pub fn status_line(&self, now_ms: i64) -> String {
        match &self.state {
            TrayState::WaitingToSend => "waiting to send".to_owned(),
            TrayState::Held { until } => {
                let seconds = ((until.unix_millis() - now_ms) as f64 / 1000.0).ceil().max(0.0);
                // A no-break space: the panel's narrow row must not wrap "42" away from "s".
                format!("held · goes to the agent in {seconds}\u{a0}s")
            }
            TrayState::Sent => "sent to the agent".to_owned(),
            TrayState::Withdrawn => "withdrawn".to_owned(),
        }
    }
}

/// A hold is read as ended this long after its end on the filer's clock, so that the
/// server, whose clock decides, has seen it end too.
pub const HOLD_END_SLACK_MS: i64 = 250;
/// A hold read as not ended at its end (the filer's clock ahead of the server's) is read
/// again after this.
pub const REREAD_MS: i64 = 1_000;

/// Takes in what the server says of one item of the batch. Filing holds every item the
/// filer still holds on the stage until the new item's end (the protocol's grace window),
/// and a batch lives on one stage: so every held item ends when the latest end read says,
/// without reading each.
pub fn take_in(items: &mut [TrayItem], change: &Change) {
    let Some(item) = items.iter_mut().find(|i| i.change_id == change.change_id) else { return };
    item.update(change);
    // While held, an end only moves later (a read answered late says an earlier one).
    let end = items.iter().filter_map(TrayItem::held_until).max();
    for item in items.iter_mut() {
        if let (TrayState::Held { until }, Some(end)) = (&mut item.state, end) {
            *until = end;
        }
    }
}

/// The items to read now the outbox holds `in_outbox`: those waiting to send that it has
/// let go. The outbox keeps an item until the server has it, so one still in it could
/// only be answered "not found".
pub fn left_outbox(items: &[TrayItem], in_outbox: &[OutboxItem]) -> Vec<String> {
    items
        .iter()
        .filter(|i| i.state == TrayState::WaitingToSend)
        .filter(|i| !in_outbox.iter().any(|o| o.change_id == i.change_id))
        .map(|i| i.change_id.clone())
        .collect()
}

/// How long from `now_ms` until the items whose hold ends next are read ([`hold_ended`]);
/// [`REREAD_MS`] when that end is past (they were read as still held); `None` while
/// nothing is held.
pub fn next_hold_end_in(items: &[TrayItem], now_ms: i64) -> Option<i64> {
    let first = items.iter().filter_map(TrayItem::held_until).min()?.unix_millis();
    let wait = first + HOLD_END_SLACK_MS - now_ms;
    Some(if wait > 0 { wait } else { REREAD_MS })
}

/// The held items whose hold has ended at `now_ms` (the filer's clock).
pub fn hold_ended(items: &[TrayItem], now_ms: i64) -> Vec<String> {
    items
        .iter()
        .filter(|i| matches!(&i.state, TrayState::Held { until } if until.unix_millis() <= now_ms))
        .map(|i| i.change_id.clone())
        .collect()
}

/// "waiting to send (n)" for the tray's heading; `None` when nothing waits.
pub fn waiting_label(waiting: u32) -> Option<String> {
    (waiting > 0).then(|| format!("waiting to send ({waiting})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(id: &str, status: ChangeStatus, held: bool, held_until: Option<i64>) -> Change {
        let json = serde_json::json!({
            "changeId": id, "shortId": "7", "projectId": "p", "stageId": "s", "groupId": null,
            "title": "Edited title", "body": null, "status": status, "route": null, "gitSha": null,
            "deploymentId": null, "locale": null, "viewport": null, "capture": null, "screenshotKey": null,
            "consoleErrors": [], "source": "extension", "filedBy": "Ada", "branch": null,
            "headCommit": null, "resolvedAt": null, "live": null,
            "createdAt": "2026-11-29T10:00:00Z", "held": held,
            "heldUntil": held_until.map(Timestamp::from_unix_millis),
        });
        serde_json::from_value(json).unwrap()
    }

    fn held(id: &str, until: i64) -> TrayItem {
        TrayItem { state: TrayState::Held { until: Timestamp::from_unix_millis(until) }, ..queued(id) }
    }

    fn queued(id: &str) -> TrayItem {
        TrayItem::queued(id.into(), id.into())
    }

    #[test]
    fn an_item_moves_from_waiting_to_held_to_sent() {
        let mut item = queued("c1");
        assert_eq!(item.status_line(0), "waiting to send");
        item.update(&change("c1", ChangeStatus::Open, true, Some(60_000)));
        assert!(item.is_held());
        assert_eq!(item.title, "Edited title");
        assert_eq!(item.status_line(18_500), "held · goes to the agent in 42\u{a0}s");
        assert_eq!(item.status_line(90_000), "held · goes to the agent in 0\u{a0}s");
        item.update(&change("c1", ChangeStatus::Open, false, Some(60_000)));
        assert_eq!(item.state, TrayState::Sent);
    }

    #[test]
    fn a_withdrawn_item_says_so() {
        let mut item = queued("c1");
        item.update(&change("c1", ChangeStatus::Dismissed, false, None));
        assert_eq!(item.status_line(0), "withdrawn");
    }

    #[test]
    fn only_items_waiting_to_send_that_the_outbox_let_go_are_read() {
        let mut sent = queued("sent");
        sent.update(&change("sent", ChangeStatus::Open, false, None));
        let items = [queued("waiting"), queued("delivered"), held("held", 60_000), sent];
        let in_outbox = [OutboxItem {
            change_id: "waiting".into(),
            title: "In the outbox".into(),
            state: crate::rules::outbox::EntryState::Queued,
            message: None,
            next_attempt_at: None,
        }];
        assert_eq!(left_outbox(&items, &in_outbox), ["delivered"]);
        assert_eq!(left_outbox(&items, &[]), ["waiting", "delivered"]);
    }

    #[test]
    fn an_item_read_as_held_moves_the_batchs_end_and_nothing_else() {
        let mut items = [held("first", 60_000), held("second", 70_000), queued("new"), queued("away")];
        take_in(&mut items, &change("new", ChangeStatus::Open, true, Some(80_000)));
        let ends: Vec<_> = items.iter().map(|i| i.state.clone()).collect();
        let until = TrayState::Held { until: Timestamp::from_unix_millis(80_000) };
        assert_eq!(ends, [until.clone(), until.clone(), until, TrayState::WaitingToSend]);
        // An answer read before a later one does not move an end back.
        take_in(&mut items, &change("first", ChangeStatus::Open, true, Some(60_000)));
        assert_eq!(items[1].state, TrayState::Held { until: Timestamp::from_unix_millis(80_000) });
        // Sent or withdrawn, an item moves no end; one the tray does not hold is ignored.
        take_in(&mut items, &change("second", ChangeStatus::Open, false, Some(80_000)));
        take_in(&mut items, &change("other", ChangeStatus::Open, true, Some(99_000)));
        assert_eq!(items[1].state, TrayState::Sent);
        assert_eq!(items[0].state, TrayState::Held { until: Timestamp::from_unix_millis(80_000) });
    }

    #[test]
    fn held_items_are_read_once_their_hold_ended_on_the_filers_clock() {
        let items = [held("a", 60_000), held("b", 70_000), queued("c")];
        assert_eq!(next_hold_end_in(&items, 10_000), Some(50_000 + HOLD_END_SLACK_MS));
        assert_eq!(hold_ended(&items, 60_000 + HOLD_END_SLACK_MS), ["a"]);
        assert_eq!(hold_ended(&items, 59_999), Vec::<String>::new());
        // Read as still held after its end (the server's clock behind): again a second on.
        assert_eq!(next_hold_end_in(&items, 61_000), Some(REREAD_MS));
        assert_eq!(next_hold_end_in(&[queued("c")], 0), None);
    }

    #[test]
    fn nothing_waiting_says_nothing() {
        assert_eq!(waiting_label(0), None);
        assert_eq!(waiting_label(3).as_deref(), Some("waiting to send (3)"));
    }
}

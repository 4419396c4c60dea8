//! The held tray: the items of this batch, from "waiting to send" to "sent to the agent".
//! Pure; the overlay refreshes it from the outbox and the server.

use redline_protocol::{Change, ChangeStatus, Timestamp};

use crate::outbox::OutboxItem;

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

    /// Whether the server may still change its answer (worth asking again).
    pub fn is_settled(&self) -> bool {
        matches!(self.state, TrayState::Sent | TrayState::Withdrawn)
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

/// The items to ask the server about: those not settled that the outbox has let go. The
/// outbox keeps an item until the server has it, so asking about one still in it could
/// only be answered "not found".
pub fn to_refresh(items: &[TrayItem], in_outbox: &[OutboxItem]) -> Vec<TrayItem> {
    items
        .iter()
        .filter(|i| !i.is_settled() && !in_outbox.iter().any(|o| o.change_id == i.change_id))
        .cloned()
        .collect()
}

/// "waiting to send (n)" for the tray's heading; `None` when nothing waits.
pub fn waiting_label(waiting: u32) -> Option<String> {
    (waiting > 0).then(|| format!("waiting to send ({waiting})"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn change(status: ChangeStatus, held: bool, held_until: Option<i64>) -> Change {
        let json = serde_json::json!({
            "changeId": "c1", "shortId": "7", "projectId": "p", "stageId": "s", "groupId": null,
            "title": "Edited title", "body": null, "status": status, "route": null, "gitSha": null,
            "deploymentId": null, "locale": null, "viewport": null, "capture": null, "screenshotKey": null,
            "consoleErrors": [], "source": "extension", "filedBy": "Ada", "branch": null,
            "headCommit": null, "resolvedAt": null, "live": null,
            "createdAt": "2026-11-29T10:00:00Z", "held": held,
            "heldUntil": held_until.map(Timestamp::from_unix_millis),
        });
        serde_json::from_value(json).unwrap()
    }

    #[test]
    fn an_item_moves_from_waiting_to_held_to_sent() {
        let mut item = TrayItem::queued("c1".into(), "Title".into());
        assert_eq!(item.status_line(0), "waiting to send");
        item.update(&change(ChangeStatus::Open, true, Some(60_000)));
        assert!(item.is_held());
        assert_eq!(item.title, "Edited title");
        assert_eq!(item.status_line(18_500), "held · goes to the agent in 42\u{a0}s");
        assert_eq!(item.status_line(90_000), "held · goes to the agent in 0\u{a0}s");
        item.update(&change(ChangeStatus::Open, false, Some(60_000)));
        assert_eq!(item.state, TrayState::Sent);
        assert!(item.is_settled());
    }

    #[test]
    fn a_withdrawn_item_says_so() {
        let mut item = TrayItem::queued("c1".into(), "Title".into());
        item.update(&change(ChangeStatus::Dismissed, false, None));
        assert_eq!(item.status_line(0), "withdrawn");
    }

    #[test]
    fn only_items_the_outbox_let_go_and_not_settled_are_asked_about() {
        let mut sent = TrayItem::queued("sent".into(), "Sent".into());
        sent.update(&change(ChangeStatus::Open, false, None));
        let items = [
            TrayItem::queued("waiting".into(), "In the outbox".into()),
            TrayItem::queued("delivered".into(), "Delivered".into()),
            sent,
        ];
        let in_outbox = [OutboxItem {
            change_id: "waiting".into(),
            title: "In the outbox".into(),
            state: crate::outbox::EntryState::Queued,
            message: None,
            next_attempt_at: None,
        }];
        let asked: Vec<_> = to_refresh(&items, &in_outbox).into_iter().map(|i| i.change_id).collect();
        assert_eq!(asked, ["delivered"]);
    }

    #[test]
    fn nothing_waiting_says_nothing() {
        assert_eq!(waiting_label(0), None);
        assert_eq!(waiting_label(3).as_deref(), Some("waiting to send (3)"));
    }
}

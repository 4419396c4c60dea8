//! What the panel says about the loop's numbers (`getStats`) and a project's webhooks
//! (`listWebhooks`): durations as people say them, rates, and a delivery's outcome.
//! Pure: the panel's `ui/panel/stats.rs` and its settings render these strings.

use redline_protocol::{DurationStats, LoopStats, Timestamp, Webhook, relative_time};

/// Shown where there is nothing to measure (no item got that far).
pub const NONE: &str = "\u{2014}";

/// A duration as people say it: `40 s`, `12 min`, `3 h 20 min`, `2 d 4 h`. A number and
/// its unit never break apart (a no-break space between them), nor the two parts.
pub fn human_duration(ms: u64) -> String {
    let seconds = ms.div_ceil(1000);
    if seconds < 60 {
        return format!("{seconds}\u{a0}s");
    }
    // Each unit is chosen on the rounded amount, so 59 min 45 s reads "1 h", not "60 min".
    let minutes = (seconds + 30) / 60;
    if minutes < 60 {
        return format!("{minutes}\u{a0}min");
    }
    if minutes < 48 * 60 {
        return match (minutes / 60, minutes % 60) {
            (h, 0) => format!("{h}\u{a0}h"),
            (h, m) => format!("{h}\u{a0}h\u{a0}{m}\u{a0}min"),
        };
    }
    match ((minutes + 30) / 60 / 24, (minutes + 30) / 60 % 24) {
        (d, 0) => format!("{d}\u{a0}d"),
        (d, h) => format!("{d}\u{a0}d\u{a0}{h}\u{a0}h"),
    }
}

/// The median and the 90th percentile of some durations, each as [`human_duration`].
pub fn durations(stats: &DurationStats) -> (String, String) {
    let say = |ms: Option<u64>| ms.map_or_else(|| NONE.to_owned(), human_duration);
    (say(stats.median_ms), say(stats.p90_ms))
}

/// A median and a 90th percentile (from [`durations`]) as the totals say them, `median
/// 25 min, p90 2 h`, or as a table cell, `25 min / 2 h`; the dash alone when nothing was
/// measured.
pub fn median_p90((median, p90): &(String, String), in_table: bool) -> String {
    match (median == NONE && p90 == NONE, in_table) {
        (true, _) => NONE.to_owned(),
        (false, true) => format!("{median} / {p90}"),
        (false, false) => format!("median {median}, p90 {p90}"),
    }
}

/// A share as a whole percentage (`25 %`).
pub fn percent(rate: Option<f64>) -> String {
    rate.filter(|r| r.is_finite()).map_or_else(|| NONE.to_owned(), |r| format!("{:.0}\u{a0}%", r * 100.0))
}

/// A ratio to one decimal (`0.4`).
pub fn ratio(value: Option<f64>) -> String {
    value.filter(|v| v.is_finite()).map_or_else(|| NONE.to_owned(), |v| format!("{v:.1}"))
}

/// One row of the per-agent or per-filer tables, every cell as shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Row {
    pub name: String,
    pub filed: String,
    pub done: String,
    pub dismissed: String,
    pub verified: String,
    pub to_done: (String, String),
    pub to_verified: (String, String),
    pub questions_per_item: String,
    pub still_wrong_rate: String,
}

impl Row {
    pub fn of(stats: &LoopStats) -> Row {
        Row {
            name: stats.name.clone().unwrap_or_else(|| "(unnamed)".to_owned()),
            filed: stats.filed.to_string(),
            done: stats.done.to_string(),
            dismissed: stats.dismissed.to_string(),
            verified: stats.verified.to_string(),
            to_done: durations(&stats.to_done),
            to_verified: durations(&stats.to_verified),
            questions_per_item: ratio(stats.questions_per_item),
            still_wrong_rate: percent(stats.still_wrong_rate),
        }
    }
}

/// "Items filed since 3 d ago": what the numbers cover.
pub fn since_line(since: Timestamp, now: Timestamp) -> String {
    format!("Items filed since {}.", relative_time(since, now))
}

/// A webhook's deliveries: what waits, what was given up on.
pub fn deliveries_line(webhook: &Webhook) -> String {
    format!("{} pending \u{b7} {} failed", webhook.pending, webhook.failed)
}

/// How the latest delivery went: `last delivery ok (HTTP 200), 3 min ago`, `last delivery
/// failed: connection refused (HTTP 502), just now`, or that there has been none.
pub fn last_attempt_line(webhook: &Webhook, now: Timestamp) -> String {
    let Some(attempt) = &webhook.last_attempt else { return "no delivery yet".to_owned() };
    let status = attempt.http_status.map(|s| format!(" (HTTP {s})")).unwrap_or_default();
    let when = relative_time(attempt.at, now);
    if attempt.ok {
        format!("last delivery ok{status}, {when}")
    } else {
        let error = attempt.error.as_deref().filter(|e| !e.trim().is_empty()).unwrap_or("no answer");
        format!("last delivery failed: {error}{status}, {when}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redline_protocol::WebhookAttempt;

    #[test]
    fn durations_read_like_people_say_them() {
        assert_eq!(human_duration(0), "0\u{a0}s");
        assert_eq!(human_duration(40_200), "41\u{a0}s");
        assert_eq!(human_duration(59_000), "59\u{a0}s");
        assert_eq!(human_duration(60_000), "1\u{a0}min");
        assert_eq!(human_duration(12 * 60_000 + 20_000), "12\u{a0}min");
        assert_eq!(human_duration(3_600_000), "1\u{a0}h");
        assert_eq!(human_duration(3_585_000), "1\u{a0}h", "59 min 45 s");
        assert_eq!(human_duration(3 * 3_600_000 + 20 * 60_000), "3\u{a0}h\u{a0}20\u{a0}min");
        assert_eq!(human_duration(47 * 3_600_000), "47\u{a0}h");
        assert_eq!(human_duration(2 * 86_400_000), "2\u{a0}d");
        assert_eq!(human_duration(2 * 86_400_000 + 4 * 3_600_000), "2\u{a0}d\u{a0}4\u{a0}h");
    }

    #[test]
    fn missing_numbers_show_a_dash() {
        let stats = DurationStats { count: 0, median_ms: None, p90_ms: None };
        assert_eq!(durations(&stats), (NONE.to_owned(), NONE.to_owned()));
        let stats = DurationStats { count: 4, median_ms: Some(90_000), p90_ms: Some(7_200_000) };
        assert_eq!(durations(&stats), ("2\u{a0}min".to_owned(), "2\u{a0}h".to_owned()));
        assert_eq!(percent(None), NONE);
        assert_eq!(percent(Some(0.25)), "25\u{a0}%");
        assert_eq!(percent(Some(f64::NAN)), NONE);
        assert_eq!(ratio(Some(0.4444)), "0.4");
        assert_eq!(ratio(None), NONE);
    }

    #[test]
    fn median_and_p90_read_as_one() {
        let measured = ("25\u{a0}min".to_owned(), "2\u{a0}h".to_owned());
        assert_eq!(median_p90(&measured, false), "median 25\u{a0}min, p90 2\u{a0}h");
        assert_eq!(median_p90(&measured, true), "25\u{a0}min / 2\u{a0}h");
        let none = (NONE.to_owned(), NONE.to_owned());
        assert_eq!(median_p90(&none, false), NONE);
        assert_eq!(median_p90(&none, true), NONE);
    }

    #[test]
    fn a_row_names_who_and_every_number() {
        let stats = LoopStats {
            name: Some("agent-1".into()),
            filed: 12,
            done: 9,
            dismissed: 1,
            verified: 6,
            still_wrong: 1,
            still_wrong_rate: Some(1.0 / 7.0),
            questions_per_item: Some(0.5),
            to_done: DurationStats { count: 9, median_ms: Some(1_500_000), p90_ms: Some(5_400_000) },
            to_verified: DurationStats::default(),
        };
        let row = Row::of(&stats);
        assert_eq!(row.name, "agent-1");
        assert_eq!(
            (row.filed.as_str(), row.done.as_str(), row.dismissed.as_str(), row.verified.as_str()),
            ("12", "9", "1", "6")
        );
        assert_eq!(row.to_done, ("25\u{a0}min".to_owned(), "1\u{a0}h\u{a0}30\u{a0}min".to_owned()));
        assert_eq!(row.to_verified, (NONE.to_owned(), NONE.to_owned()));
        assert_eq!(row.questions_per_item, "0.5");
        assert_eq!(row.still_wrong_rate, "14\u{a0}%");
        assert_eq!(Row::of(&LoopStats::default()).name, "(unnamed)");
    }

    #[test]
    fn the_period_is_said_relative_to_now() {
        let now = Timestamp::from_unix_millis(30 * 86_400_000);
        assert_eq!(since_line(Timestamp::from_unix_millis(0), now), "Items filed since 30 d ago.");
    }

    fn webhook(last_attempt: Option<WebhookAttempt>) -> Webhook {
        Webhook {
            webhook_id: "w1".into(),
            target: "https://hooks.slack.com".into(),
            events: vec!["asked".into(), "done".into()],
            format: "slack".into(),
            created_at: Timestamp::from_unix_millis(0),
            pending: 2,
            failed: 1,
            last_attempt,
        }
    }

    #[test]
    fn a_webhook_says_how_its_deliveries_went() {
        let now = Timestamp::from_unix_millis(600_000);
        let at = Timestamp::from_unix_millis(420_000);
        assert_eq!(deliveries_line(&webhook(None)), "2 pending \u{b7} 1 failed");
        assert_eq!(last_attempt_line(&webhook(None), now), "no delivery yet");
        let ok = WebhookAttempt { at, ok: true, http_status: Some(200), error: None };
        assert_eq!(last_attempt_line(&webhook(Some(ok)), now), "last delivery ok (HTTP 200), 3 min ago");
        let failed =
            WebhookAttempt { at, ok: false, http_status: Some(502), error: Some("bad gateway".into()) };
        assert_eq!(
            last_attempt_line(&webhook(Some(failed)), now),
            "last delivery failed: bad gateway (HTTP 502), 3 min ago"
        );
        let unreachable = WebhookAttempt { at: now, ok: false, http_status: None, error: None };
        assert_eq!(
            last_attempt_line(&webhook(Some(unreachable)), now),
            "last delivery failed: no answer, just now"
        );
    }
}

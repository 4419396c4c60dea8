//! The outbox: every item the filer files waits here, in IndexedDB, until the server
//! has acknowledged it. This module is the pure part — what a queued item is and the
//! delivery policy (when to try again, what each failure means); `idb.rs` stores the
//! entries and the worker (`worker/outbox.rs`) delivers them.
//!
//! Nothing here ever drops an entry: only an acknowledged `createChange` removes one.
//! Retrying is safe because `createChange` carries the client-made `changeId` (the
//! same call twice files once) and a retry reuses the screenshot already uploaded.

use redline_protocol::{CreateChangeInput, UploadShotInput, is_uuid};
use serde::{Deserialize, Serialize};

use crate::rules::api_error::ApiError;

/// Milliseconds since the Unix epoch, as `Date.now()` and `chrome.alarms` count.
pub type Millis = f64;

/// The first retry after a transient failure. Chrome clamps alarms of a packed
/// extension to at least 30 s; unpacked ones (development, tests) get this.
pub const FIRST_RETRY_MS: Millis = 2_000.0;
/// Retries double up to this.
pub const MAX_RETRY_MS: Millis = 5.0 * 60_000.0;
/// Each retry comes up to this share earlier, so many browsers that lost the same
/// server do not all come back in the same second.
pub const JITTER: f64 = 0.2;
/// A `Retry-After` is honoured up to this long.
pub const MAX_RETRY_AFTER_MS: Millis = 60.0 * 60_000.0;
/// With the token refused (or not set up), try again this rarely; a settings change
/// retries at once.
pub const SIGN_IN_RETRY_MS: Millis = 10.0 * 60_000.0;

/// A screenshot as the browser encoded it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Image {
    /// `image/png`, `image/jpeg` or `image/webp`.
    pub content_type: String,
    /// The bytes, base64 (no `data:` prefix needed).
    pub base64: String,
}

/// What the filer filed with one `Enter`: everything needed to deliver it later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Draft {
    /// Made by the composer (`crypto.randomUUID()`) when the filer presses Enter: the
    /// outbox's key and the server's idempotency key.
    pub change_id: String,
    /// For `uploadShot`.
    pub project_id: String,
    pub input: CreateChangeInput,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub screenshot: Option<Image>,
}

/// Why a draft cannot be queued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidDraft(pub String);

impl std::fmt::Display for InvalidDraft {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Draft {
    /// Checks the id and makes the input carry it, lower-cased as the server stores it.
    /// Nothing else is checked here: the server's answer is the authority, and an item
    /// it refuses stays in the outbox with its message.
    pub fn normalised(mut self) -> Result<Draft, InvalidDraft> {
        if !is_uuid(&self.change_id) {
            return Err(InvalidDraft(format!("changeId {:?} is not a UUID", self.change_id)));
        }
        self.change_id = self.change_id.to_ascii_lowercase();
        self.input.change_id = Some(self.change_id.clone());
        Ok(self)
    }
}

/// Where an entry stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum EntryState {
    /// Not tried yet.
    Queued,
    /// The server could not be reached or failed; tried again by itself, with backoff.
    Retrying,
    /// The token is missing, refused or lacks the scope; tried again after a settings
    /// change, and rarely on its own.
    SignIn,
    /// The server refused the item itself (the message says why); kept for the filer
    /// and tried again only after a settings change.
    Attention,
}

/// One queued item and its delivery so far. Stored in IndexedDB as is.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Entry {
    pub draft: Draft,
    pub queued_at: Millis,
    pub state: EntryState,
    /// Failed attempts in a row; the backoff grows with it.
    pub attempts: u32,
    /// When to try next; `None` waits for [`Entry::make_due`] (a settings change).
    pub next_attempt_at: Option<Millis>,
    /// The uploaded screenshot's key, so a retry files with it instead of uploading
    /// again (a second upload would be a different payload for the same `changeId`).
    pub screenshot_key: Option<String>,
    /// The last failure, in words for the filer.
    pub message: Option<String>,
}

impl Entry {
    pub fn new(draft: Draft, now: Millis) -> Entry {
        Entry {
            draft,
            queued_at: now,
            state: EntryState::Queued,
            attempts: 0,
            next_attempt_at: Some(now),
            screenshot_key: None,
            message: None,
        }
    }

    pub fn change_id(&self) -> &str {
        &self.draft.change_id
    }

    pub fn is_due(&self, now: Millis) -> bool {
        self.next_attempt_at.is_some_and(|at| at <= now)
    }

    /// Due at once, whatever its state (the settings changed).
    pub fn make_due(&mut self, now: Millis) {
        self.next_attempt_at = Some(now);
    }

    /// The `uploadShot` still to make, if the draft has a screenshot not yet uploaded.
    pub fn upload_input(&self) -> Option<UploadShotInput> {
        let shot = self.draft.screenshot.as_ref().filter(|_| self.screenshot_key.is_none())?;
        Some(UploadShotInput {
            project_id: self.draft.project_id.clone(),
            content_type: shot.content_type.clone(),
            image_base64: shot.base64.clone(),
        })
    }

    pub fn uploaded(&mut self, screenshot_key: String) {
        self.screenshot_key = Some(screenshot_key);
    }

    /// The `createChange` to make: the draft's input with the uploaded screenshot, cut
    /// to the server's limits (`compose::within_limits`, as `compose::draft` does, for
    /// drafts kept in the outbox from before it did).
    pub fn create_input(&self) -> CreateChangeInput {
        let mut input = crate::rules::fit::within_limits(self.draft.input.clone());
        if let Some(key) = &self.screenshot_key {
            input.screenshot_key = Some(key.clone());
        }
        input
    }

    /// Records a failed attempt and schedules the next one. `jitter` is a random
    /// number in `[0, 1)`.
    pub fn failed(&mut self, failure: &Failure, now: Millis, jitter: f64) {
        self.attempts = self.attempts.saturating_add(1);
        self.message = Some(failure.message.clone());
        let (state, delay) = match failure.kind {
            FailureKind::Transient { retry_after_ms } => {
                let backoff = retry_delay(self.attempts, jitter);
                (EntryState::Retrying, Some(retry_after_ms.map_or(backoff, |after| after.max(backoff))))
            }
            FailureKind::SignIn => (EntryState::SignIn, Some(SIGN_IN_RETRY_MS)),
            FailureKind::Refused => (EntryState::Attention, None),
        };
        self.state = state;
        self.next_attempt_at = delay.map(|delay| now + delay);
    }
}

/// The wait before attempt `attempts + 1`: [`FIRST_RETRY_MS`] doubling per failure up
/// to [`MAX_RETRY_MS`], then up to [`JITTER`] of it taken off (`jitter` in `[0, 1)`).
pub fn retry_delay(attempts: u32, jitter: f64) -> Millis {
    let doublings = attempts.saturating_sub(1).min(30) as i32;
    let delay = (FIRST_RETRY_MS * 2f64.powi(doublings)).min(MAX_RETRY_MS);
    delay * (1.0 - JITTER * jitter.clamp(0.0, 1.0))
}

/// Which call of a delivery failed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Step {
    UploadShot,
    CreateChange,
}

/// What a failed call means for the item.
#[derive(Debug, Clone, PartialEq)]
pub struct Failure {
    pub kind: FailureKind,
    pub message: String,
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub enum FailureKind {
    /// Try again by itself (network, 408, 429, 5xx); the server's `Retry-After`, if any.
    Transient { retry_after_ms: Option<Millis> },
    /// Needs a working token.
    SignIn,
    /// The server refused this item (400, 404, 409, 413, 415, or an answer not
    /// understood): retrying the same request cannot help until someone acts.
    Refused,
}

impl Failure {
    /// Classifies a failed call the way the protocol tells clients to treat it.
    pub fn of(step: Step, error: &ApiError) -> Failure {
        let kind = match error {
            ApiError::Network(_) => FailureKind::Transient { retry_after_ms: None },
            ApiError::Transient { retry_after, .. } => FailureKind::Transient {
                retry_after_ms: retry_after.map(|s| (f64::from(s) * 1000.0).min(MAX_RETRY_AFTER_MS)),
            },
            ApiError::SignIn { .. } => FailureKind::SignIn,
            ApiError::Conflict { .. }
            | ApiError::Gone { .. }
            | ApiError::Rejected { .. }
            | ApiError::BadReply(_) => FailureKind::Refused,
        };
        let message = match step {
            Step::UploadShot => format!("The screenshot could not be sent: {error}"),
            Step::CreateChange => error.to_string(),
        };
        Failure { kind, message }
    }

    /// No API URL or token yet: waits for the settings like a refused token.
    pub fn not_set_up() -> Failure {
        Failure {
            kind: FailureKind::SignIn,
            message: "Redline is not set up yet: add the API URL and token in the side panel's Settings."
                .to_owned(),
        }
    }

    /// Whether it says something about the server rather than this item, so the
    /// other items due now would fail the same way and need not be tried.
    pub fn is_server_wide(&self) -> bool {
        !matches!(self.kind, FailureKind::Refused)
    }
}

/// Whether the server filed the item, from a `createChange`'s result. A 2xx whose body
/// this client cannot read still means it is filed (`BadReply` is only made from a
/// 2xx): sending it again would only file it again.
pub fn filed<T>(result: Result<T, ApiError>) -> Result<(), ApiError> {
    match result {
        Ok(_) | Err(ApiError::BadReply(_)) => Ok(()),
        Err(error) => Err(error),
    }
}

/// The entries to try now, oldest first, so the server numbers them in filing order.
/// Once one is due, every entry waiting on a clock goes with it: the backoff is about
/// the server, not the item, and items sent apart could overtake each other.
pub fn due(mut entries: Vec<Entry>, now: Millis) -> Vec<Entry> {
    if !entries.iter().any(|entry| entry.is_due(now)) {
        return Vec::new();
    }
    entries.retain(|entry| entry.next_attempt_at.is_some());
    entries.sort_by(|a, b| a.queued_at.total_cmp(&b.queued_at));
    entries
}

/// When the worker should next wake to deliver; `None` when nothing waits on a clock.
pub fn next_wake(entries: &[Entry]) -> Option<Millis> {
    entries.iter().filter_map(|entry| entry.next_attempt_at).min_by(f64::total_cmp)
}

/// One line of the outbox for the tray and the panel: no screenshot, no body.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OutboxItem {
    pub change_id: String,
    pub title: String,
    pub state: EntryState,
    pub message: Option<String>,
    pub next_attempt_at: Option<Millis>,
}

/// The `chrome.storage.session` key where the worker publishes the outbox
/// ([`Published`]) each time it changes: the tray and the panel subscribe to it.
pub const PUBLISHED_KEY: &str = "outbox";

/// The outbox as the worker publishes it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Published {
    /// Oldest first ([`items`]).
    pub items: Vec<OutboxItem>,
    /// When the worker wrote it. Chrome tells subscribers only of a value that changed:
    /// with this, every write reaches them, also one whose items read the same as the
    /// write before (an item queued and delivered between two writes).
    pub published_at: Millis,
}

/// The outbox as the tray and panel show it ("waiting to send (n)"), oldest first.
pub fn items(entries: &[Entry]) -> Vec<OutboxItem> {
    let mut items: Vec<(Millis, OutboxItem)> = entries
        .iter()
        .map(|entry| {
            let item = OutboxItem {
                change_id: entry.change_id().to_owned(),
                title: entry.draft.input.title.clone(),
                state: entry.state,
                message: entry.message.clone(),
                next_attempt_at: entry.next_attempt_at,
            };
            (entry.queued_at, item)
        })
        .collect();
    items.sort_by(|a, b| a.0.total_cmp(&b.0));
    items.into_iter().map(|(_, item)| item).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const ID: &str = "0b6c5a53-2f0e-4d0c-9c1e-6a4f3d2b1a00";

    fn draft(title: &str) -> Draft {
        Draft {
            change_id: ID.to_owned(),
            project_id: "p1".to_owned(),
            input: CreateChangeInput { stage_id: "s1".into(), title: title.into(), ..Default::default() },
            screenshot: Some(Image { content_type: "image/png".into(), base64: "iVBORw0K".into() }),
        }
    }

    fn queued() -> Entry {
        Entry::new(draft("Total is wrong").normalised().unwrap(), 1_000.0)
    }

    fn network() -> Failure {
        Failure::of(Step::CreateChange, &ApiError::Network("Failed to fetch".into()))
    }

    #[test]
    fn a_draft_needs_a_uuid_and_the_input_carries_it_lower_cased() {
        let mut upper = draft("t");
        upper.change_id = ID.to_uppercase();
        let normalised = upper.normalised().unwrap();
        assert_eq!(normalised.change_id, ID);
        assert_eq!(normalised.input.change_id.as_deref(), Some(ID));

        let mut bad = draft("t");
        bad.change_id = "42".into();
        assert!(bad.normalised().unwrap_err().to_string().contains("not a UUID"));
    }

    #[test]
    fn the_draft_has_the_wire_shape_the_composer_sends() {
        let json = serde_json::json!({
            "changeId": ID, "projectId": "p1",
            "input": {"stageId": "s1", "title": "Total is wrong"},
            "screenshot": {"contentType": "image/png", "base64": "iVBORw0K"},
        });
        let parsed: Draft = serde_json::from_value(json).unwrap();
        assert_eq!(parsed, draft("Total is wrong"));
        let without_shot =
            serde_json::json!({"changeId": ID, "projectId": "p1", "input": {"stageId": "s1", "title": "t"}});
        assert_eq!(serde_json::from_value::<Draft>(without_shot).unwrap().screenshot, None);
    }

    #[test]
    fn a_new_entry_is_due_at_once_and_uploads_before_filing() {
        let mut entry = queued();
        assert!(entry.is_due(1_000.0));
        assert_eq!(entry.state, EntryState::Queued);
        let upload = entry.upload_input().unwrap();
        assert_eq!((upload.project_id.as_str(), upload.content_type.as_str()), ("p1", "image/png"));
        assert_eq!(entry.create_input().screenshot_key, None);

        entry.uploaded("k.png".into());
        assert_eq!(entry.upload_input(), None, "a retry must not upload again");
        let input = entry.create_input();
        assert_eq!(input.screenshot_key.as_deref(), Some("k.png"));
        assert_eq!(input.change_id.as_deref(), Some(ID));
    }

    #[test]
    fn a_draft_without_screenshot_files_directly() {
        let mut draft = draft("t");
        draft.screenshot = None;
        assert_eq!(Entry::new(draft, 0.0).upload_input(), None);
    }

    #[test]
    fn backoff_starts_at_two_seconds_doubles_and_stops_at_five_minutes() {
        let delays: Vec<Millis> = (1..=10).map(|n| retry_delay(n, 0.0)).collect();
        assert_eq!(delays, vec![2e3, 4e3, 8e3, 16e3, 32e3, 64e3, 128e3, 256e3, 300e3, 300e3]);
        assert_eq!(retry_delay(u32::MAX, 0.0), MAX_RETRY_MS);
    }

    #[test]
    fn jitter_only_ever_shortens_a_delay_by_a_fifth() {
        assert_eq!(retry_delay(1, 0.5), 1_800.0);
        assert_eq!(retry_delay(1, 0.999_999), 2_000.0 * (1.0 - 0.2 * 0.999_999));
        assert_eq!(retry_delay(1, 7.0), 1_600.0, "out-of-range randomness is clamped");
    }

    #[test]
    fn network_failures_retry_with_growing_delays() {
        let mut entry = queued();
        let mut now = 1_000.0;
        for expected in [2e3, 4e3, 8e3] {
            entry.failed(&network(), now, 0.0);
            assert_eq!(entry.state, EntryState::Retrying);
            assert_eq!(entry.next_attempt_at, Some(now + expected));
            assert!(!entry.is_due(now + expected - 1.0));
            assert!(entry.is_due(now + expected));
            now += expected;
        }
        assert_eq!(entry.attempts, 3);
        assert_eq!(entry.message.as_deref(), Some("Cannot reach the server (Failed to fetch)."));
    }

    #[test]
    fn retry_after_is_honoured_when_longer_than_the_backoff_and_capped_at_an_hour() {
        let busy = |retry_after| {
            Failure::of(
                Step::CreateChange,
                &ApiError::Transient { status: 429, message: "slow down".into(), retry_after },
            )
        };
        let mut entry = queued();
        entry.failed(&busy(Some(30)), 0.0, 0.0);
        assert_eq!(entry.next_attempt_at, Some(30_000.0));

        let mut entry = queued();
        entry.failed(&busy(Some(1)), 0.0, 0.0);
        assert_eq!(entry.next_attempt_at, Some(2_000.0), "never sooner than the backoff");

        let mut entry = queued();
        entry.failed(&busy(Some(86_400)), 0.0, 0.0);
        assert_eq!(entry.next_attempt_at, Some(MAX_RETRY_AFTER_MS));

        let mut entry = queued();
        entry.failed(&busy(None), 0.0, 0.0);
        assert_eq!((entry.state, entry.next_attempt_at), (EntryState::Retrying, Some(2_000.0)));
    }

    #[test]
    fn server_faults_are_transient() {
        for status in [408, 429, 500, 502, 503] {
            let failure = Failure::of(Step::CreateChange, &ApiError::from_response(status, "", None));
            assert!(matches!(failure.kind, FailureKind::Transient { .. }), "{status}");
            assert!(failure.is_server_wide());
        }
    }

    #[test]
    fn a_refused_token_waits_for_sign_in_and_retries_rarely() {
        for status in [401, 403] {
            let failure = Failure::of(Step::UploadShot, &ApiError::from_response(status, "{}", None));
            let mut entry = queued();
            entry.failed(&failure, 0.0, 0.0);
            assert_eq!(entry.state, EntryState::SignIn);
            assert_eq!(entry.next_attempt_at, Some(SIGN_IN_RETRY_MS));
            assert!(failure.is_server_wide());
        }
        let mut entry = queued();
        entry.failed(&Failure::not_set_up(), 0.0, 0.0);
        assert_eq!(entry.state, EntryState::SignIn);
        assert!(entry.message.unwrap().contains("Settings"));
    }

    #[test]
    fn a_refused_item_is_kept_for_the_filer_with_the_servers_message() {
        let refusals = [
            ApiError::from_response(400, r#"{"message":"title: must not be empty"}"#, None),
            ApiError::from_response(409, r#"{"message":"reused","code":"id_reused"}"#, None),
            ApiError::from_response(404, r#"{"message":"stageId: no such stage"}"#, None),
            ApiError::from_response(413, r#"{"message":"too large"}"#, None),
            ApiError::from_response(415, r#"{"message":"not a png"}"#, None),
        ];
        for error in refusals {
            let failure = Failure::of(Step::CreateChange, &error);
            assert_eq!(failure.kind, FailureKind::Refused, "{error:?}");
            assert!(!failure.is_server_wide());
            let mut entry = queued();
            entry.failed(&failure, 5.0, 0.0);
            assert_eq!(entry.state, EntryState::Attention);
            assert_eq!(entry.next_attempt_at, None, "not retried by itself");
            assert_eq!(entry.message.as_deref(), Some(error.to_string().as_str()));
            assert!(!entry.is_due(f64::MAX));

            entry.make_due(9.0);
            assert!(entry.is_due(9.0), "a settings change tries it again");
        }
    }

    #[test]
    fn upload_failures_say_it_was_the_screenshot() {
        let failure =
            Failure::of(Step::UploadShot, &ApiError::from_response(415, r#"{"message":"not a png"}"#, None));
        assert_eq!(failure.message, "The screenshot could not be sent: not a png");
    }

    #[test]
    fn only_a_2xx_from_create_change_means_filed() {
        assert_eq!(filed(Ok(())), Ok(()));
        assert_eq!(filed::<()>(Err(ApiError::BadReply("missing field".into()))), Ok(()));
        for error in [
            ApiError::Network("offline".into()),
            ApiError::from_response(500, "", None),
            ApiError::from_response(401, "", None),
            ApiError::from_response(400, "", None),
            ApiError::from_response(409, "", None),
        ] {
            assert_eq!(filed::<()>(Err(error.clone())), Err(error));
        }
    }

    #[test]
    fn once_one_is_due_all_waiting_entries_go_oldest_first() {
        let at = |queued_at: Millis, next: Option<Millis>| {
            let mut entry = Entry::new(draft(&queued_at.to_string()), queued_at);
            entry.next_attempt_at = next;
            entry
        };
        let entries = vec![at(3.0, Some(10.0)), at(1.0, Some(5.0)), at(2.0, None), at(0.0, Some(50.0))];
        let titles =
            |now| due(entries.clone(), now).into_iter().map(|e| e.draft.input.title).collect::<Vec<_>>();
        assert_eq!(titles(5.0), ["0", "1", "3"], "the one waiting for the filer stays");
        assert!(titles(4.9).is_empty());
        assert_eq!(next_wake(&entries), Some(5.0));
        assert_eq!(next_wake(&[at(1.0, None)]), None);
    }

    #[test]
    fn the_outbox_lists_every_entry_failing_or_not_in_filing_order() {
        let mut refused = Entry::new(draft("second"), 2.0);
        refused.failed(&Failure::of(Step::CreateChange, &ApiError::from_response(400, "", None)), 3.0, 0.0);
        let first = Entry::new(draft("first"), 1.0);
        let listed = items(&[refused, first]);
        assert_eq!(listed.len(), 2);
        assert_eq!((listed[0].title.as_str(), listed[0].state), ("first", EntryState::Queued));
        assert_eq!((listed[1].title.as_str(), listed[1].state), ("second", EntryState::Attention));
        assert_eq!(
            serde_json::to_value(&listed[1]).unwrap(),
            serde_json::json!({
                "changeId": ID, "title": "second", "state": "attention",
                "message": "the server answered 400", "nextAttemptAt": null,
            })
        );
    }

    #[test]
    fn an_entry_survives_a_round_trip_through_storage() {
        let mut entry = queued();
        entry.uploaded("k.png".into());
        entry.failed(&network(), 2.0, 0.5);
        let stored = serde_json::to_value(&entry).unwrap();
        assert_eq!(stored["draft"]["changeId"], ID, "the store's key path");
        assert_eq!(serde_json::from_value::<Entry>(stored).unwrap(), entry);
    }
}

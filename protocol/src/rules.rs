//! The pure rules of protocol.md that server and clients share. None reads a clock:
//! "`held` is computed on the server's clock, never the client's", so `now` is always
//! passed in.

use crate::records::{Capture, ChangeStatus};
use crate::styles::{
    ElementStyles, REQUEST_METHOD_MAX_CHARS, REQUEST_STATUS_MAX, STYLE_NAME_MAX_CHARS, STYLE_PROPERTIES_MAX,
    STYLE_VALUE_MAX_CHARS,
};
use crate::wire::NotClaimableReason;
use crate::{CreateChangeInput, Timestamp};

/// "grace (project setting, default 60 s)".
pub const DEFAULT_GRACE_SECONDS: i64 = 60;
/// "Leases. Default 30 min (`leaseMinutes`)."
pub const DEFAULT_LEASE_MINUTES: u32 = 30;
/// **(ours)** the longest lease a claim may ask for (one day).
pub const MAX_LEASE_MINUTES: u32 = 24 * 60;
/// `listChanges` "limit (≤200, default 50)".
pub const LIST_LIMIT_MAX: u32 = 200;
pub const LIST_LIMIT_DEFAULT: u32 = 50;
/// "No `changeIds` means every claimable item, at most 50."
pub const CLAIM_ALL_MAX: usize = 50;
/// "options (≤ 6)".
pub const OPTIONS_MAX: usize = 6;
/// `listAgents` lists the agents seen in the last this many days, at most [`AGENTS_MAX`].
pub const AGENTS_SEEN_DAYS: i64 = 7;
pub const AGENTS_MAX: usize = 50;
/// `getStats` counts the items filed in the last this many days unless told otherwise,
/// at most [`STATS_MAX_DAYS`]; per agent and per filer at most [`STATS_MAX_ROWS`] rows.
pub const STATS_DEFAULT_DAYS: u32 = 30;
pub const STATS_MAX_DAYS: u32 = 3_650;
pub const STATS_MAX_ROWS: usize = 50;
/// The most messages one `acknowledgeChangeMessages` names.
pub const ACKNOWLEDGE_MAX: usize = 200;
/// **(ours)** `getChange` returns the thread's latest this many messages unless told
/// otherwise (`messageLimit`), at most [`THREAD_PAGE_MAX`].
pub const THREAD_PAGE_DEFAULT: u32 = 50;
pub const THREAD_PAGE_MAX: u32 = 200;
/// **(ours)** The longest cursor (`listChanges`'s `cursor`, `getChange`'s `before`).
pub const CURSOR_MAX_CHARS: usize = 18;
/// **(ours)** `countChanges` lists at most this many of the items waiting for the caller.
pub const WAITING_MAX: usize = 20;
/// Limits **(ours)**: title ≤ 200 characters, ≤ 500 elements, ≤ 10,000 stroke points,
/// 8 MiB images.
pub const TITLE_MAX_CHARS: usize = 200;
pub const ELEMENTS_MAX: usize = 500;
pub const STROKE_POINTS_MAX: usize = 10_000;
pub const IMAGE_MAX_BYTES: usize = 8 * 1024 * 1024;

// Length limits **(ours)** of every other input field, in characters (Unicode scalar
// values, as JSON Schema's `maxLength` counts). Lists and strings are refused while they
// are read (`bounded.rs`); the OpenAPI document states each limit. Chosen above what
// the extension and the agent send (element text and names ≤ 200, console errors
// 50 × 500, simplified strokes), and small enough that the largest valid `createChange`
// fits its body cap on the server.

/// Free text: an item's `body`, a question, a reply, an answer, a completion note.
pub const TEXT_MAX_CHARS: usize = 20_000;
/// A name or a label: `authorName`, `claimedBy`, a shot's label, an option's label.
pub const NAME_MAX_CHARS: usize = 200;
/// An id or key: `projectId`, `stageId`, `changeId` (or `#7`), `groupId`, `screenshotKey`,
/// a sign-in code.
pub const ID_MAX_CHARS: usize = 100;
/// A short value: `gitSha`, `headCommit`, `branch`, `deploymentId`, `locale`,
/// `contentType`.
pub const SHORT_MAX_CHARS: usize = 200;
/// A URL or a route.
pub const URL_MAX_CHARS: usize = 2_048;
/// `consoleErrors`: at most 50 errors of at most 1,000 characters (the extension keeps
/// the last 50, each cut at 500).
pub const CONSOLE_ERRORS_MAX: usize = 50;
pub const CONSOLE_ERROR_MAX_CHARS: usize = 1_000;
/// An element's `text` and `name` (the extension cuts both at 200).
pub const ELEMENT_TEXT_MAX_CHARS: usize = 500;
/// An element's `cssPath`.
pub const CSS_PATH_MAX_CHARS: usize = 500;
/// An element's `testId`, `componentTestId` and `sourceAnchor`.
pub const ELEMENT_ATTR_MAX_CHARS: usize = 200;
/// An element's `role` and `tag`.
pub const ELEMENT_WORD_MAX_CHARS: usize = 50;
/// `imageBase64`: an [`IMAGE_MAX_BYTES`] image in base64 (a `data:` URL prefix counts
/// too). Exactly that, so that the length the OpenAPI document states is the server's:
/// a longer string would hold a larger image.
pub const IMAGE_BASE64_MAX_CHARS: usize = IMAGE_MAX_BYTES.div_ceil(3) * 4;
/// `claimChanges` `changeIds`: 1 to 200 items.
pub const CLAIM_NAMES_MAX: usize = LIST_LIMIT_MAX as usize;
/// `listChanges` `status`: a list of statuses, at most one of each.
pub const STATUSES_MAX: usize = ChangeStatus::ALL.len();

/// "A filed item is held: `held = heldUntil > now`."
pub fn is_held(held_until: Option<Timestamp>, now: Timestamp) -> bool {
    held_until.is_some_and(|until| until > now)
}

/// A lease is live while "`claimExpiresAt > now`".
pub fn is_lease_live(claim_expires_at: Option<Timestamp>, now: Timestamp) -> bool {
    claim_expires_at.is_some_and(|until| until > now)
}

/// "`done` and `dismissed` are hidden from lists unless `includeDone`."
pub fn is_hidden_unless_include_done(status: ChangeStatus) -> bool {
    matches!(status, ChangeStatus::Done | ChangeStatus::Dismissed)
}

/// The statuses a user may set with `setChangeStatus`: "`open`, `in_progress` or
/// `dismissed`" ("Only a user dismisses or reopens").
pub fn is_user_settable_status(status: ChangeStatus) -> bool {
    matches!(status, ChangeStatus::Open | ChangeStatus::InProgress | ChangeStatus::Dismissed)
}

/// The lease an item is under: its group's `claimExpiresAt` and `claimedBy`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaseView<'a> {
    pub claim_expires_at: Option<Timestamp>,
    pub claimed_by: Option<&'a str>,
}

/// Why an item cannot be claimed now, with `claimableAt` and `claimedBy` for the 409
/// `not_claimable` body.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimBlock {
    pub reason: NotClaimableReason,
    pub claimable_at: Option<Timestamp>,
    pub claimed_by: Option<String>,
}

/// "**Claimable** = status `open` or `claimed`, not held, and no live lease (a group
/// whose `claimExpiresAt > now`, the caller's own included)." Returns `None` when the
/// item is claimable.
///
/// **(ours)** An item in `needs_answer` or `in_progress` belongs to its group's
/// conversation; it is reported as `leased` (with `claimableAt` the lease end while the
/// lease is live, `null` after) — its claimant may renew by `groupId`.
pub fn claim_block(
    status: ChangeStatus,
    held_until: Option<Timestamp>,
    lease: Option<LeaseView<'_>>,
    now: Timestamp,
) -> Option<ClaimBlock> {
    let block = |reason, claimable_at| {
        Some(ClaimBlock {
            reason,
            claimable_at,
            claimed_by: lease.and_then(|l| l.claimed_by).map(str::to_owned),
        })
    };
    let live_lease_end = lease.map(|l| l.claim_expires_at).filter(|&end| is_lease_live(end, now)).flatten();
    match status {
        ChangeStatus::Done => block(NotClaimableReason::Done, None),
        ChangeStatus::Dismissed => block(NotClaimableReason::Dismissed, None),
        ChangeStatus::NeedsAnswer | ChangeStatus::InProgress => {
            block(NotClaimableReason::Leased, live_lease_end)
        }
        ChangeStatus::Open | ChangeStatus::Claimed => {
            if is_held(held_until, now) {
                block(NotClaimableReason::Held, held_until)
            } else if live_lease_end.is_some() {
                block(NotClaimableReason::Leased, live_lease_end)
            } else {
                None
            }
        }
    }
}

/// The claimable predicate (see [`claim_block`]).
pub fn is_claimable(
    status: ChangeStatus,
    held_until: Option<Timestamp>,
    lease: Option<LeaseView<'_>>,
    now: Timestamp,
) -> bool {
    claim_block(status, held_until, lease, now).is_none()
}

/// How a call names an item: its `changeId` (a UUID), or its `shortId` as `#7` or `7`
/// (which needs `projectId` as well).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ChangeRef {
    /// A UUID, lower-cased.
    Id(String),
    /// A per-project short id.
    Short(u64),
}

/// Parses `#7`, `7` or a UUID (surrounding whitespace ignored). `None` for anything
/// else.
pub fn parse_change_ref(s: &str) -> Option<ChangeRef> {
    let s = s.trim();
    let digits = s.strip_prefix('#').unwrap_or(s);
    if !digits.is_empty() && digits.len() <= 19 && digits.bytes().all(|b| b.is_ascii_digit()) {
        return digits.parse().ok().map(ChangeRef::Short);
    }
    is_uuid(s).then(|| ChangeRef::Id(s.to_ascii_lowercase()))
}

/// `8-4-4-4-12` hex digits, either case.
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.bytes().enumerate().all(|(i, b)| match i {
            8 | 13 | 18 | 23 => b == b'-',
            _ => b.is_ascii_hexdigit(),
        })
}

/// A short id as shown to people: `#7`.
pub fn display_short_id(short_id: &str) -> String {
    format!("#{short_id}")
}

/// A bad input, naming the field: "400 bad input (the message names the field)".
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FieldError {
    /// The wire name, e.g. `title` or `capture.elements`.
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> Self {
        FieldError { field: field.into(), message: message.into() }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

impl std::error::Error for FieldError {}

/// A title: not blank, at most [`TITLE_MAX_CHARS`] characters.
pub fn validate_title(field: &str, title: &str) -> Result<(), FieldError> {
    if title.trim().is_empty() {
        return Err(FieldError::new(field, "must not be empty"));
    }
    if title.chars().count() > TITLE_MAX_CHARS {
        return Err(FieldError::new(field, format!("must be at most {TITLE_MAX_CHARS} characters")));
    }
    Ok(())
}

/// A capture: at most [`ELEMENTS_MAX`] elements and [`STROKE_POINTS_MAX`] stroke points,
/// each element's strings and styles and each failed request within their limits.
pub fn validate_capture(capture: &Capture) -> Result<(), FieldError> {
    if capture.elements.len() > ELEMENTS_MAX {
        return Err(FieldError::new("capture.elements", format!("at most {ELEMENTS_MAX} elements")));
    }
    if capture.stroke.len() > STROKE_POINTS_MAX {
        return Err(FieldError::new("capture.stroke", format!("at most {STROKE_POINTS_MAX} points")));
    }
    // An element's strings are checked here, after parsing, not while they are read: the
    // same record is read from other servers (Fabric) whose limits may differ, and a
    // filing's size is already bounded by its body cap.
    for (i, e) in capture.elements.iter().enumerate() {
        let fields = [
            ("testId", e.test_id.as_deref(), ELEMENT_ATTR_MAX_CHARS),
            ("sourceAnchor", e.source_anchor.as_deref(), ELEMENT_ATTR_MAX_CHARS),
            ("componentTestId", e.component_test_id.as_deref(), ELEMENT_ATTR_MAX_CHARS),
            ("cssPath", e.css_path.as_deref(), CSS_PATH_MAX_CHARS),
            ("text", e.text.as_deref(), ELEMENT_TEXT_MAX_CHARS),
            ("name", e.name.as_deref(), ELEMENT_TEXT_MAX_CHARS),
            ("role", e.role.as_deref(), ELEMENT_WORD_MAX_CHARS),
            ("tag", Some(e.tag.as_str()), ELEMENT_WORD_MAX_CHARS),
        ];
        for (field, value, max) in fields {
            if value.is_some_and(|v| v.chars().count() > max) {
                return Err(FieldError::new(
                    format!("capture.elements[{i}].{field}"),
                    format!("at most {max} characters"),
                ));
            }
        }
        if let Some(styles) = &e.styles {
            validate_styles(&format!("capture.elements[{i}].styles"), styles)?;
        }
    }
    for (i, r) in capture.failed_requests.iter().enumerate() {
        let field = |name: &str| format!("capture.failedRequests[{i}].{name}");
        if r.method.chars().count() > REQUEST_METHOD_MAX_CHARS {
            return Err(FieldError::new(
                field("method"),
                format!("at most {REQUEST_METHOD_MAX_CHARS} characters"),
            ));
        }
        if r.url.chars().count() > URL_MAX_CHARS {
            return Err(FieldError::new(field("url"), format!("at most {URL_MAX_CHARS} characters")));
        }
        if r.status > REQUEST_STATUS_MAX {
            return Err(FieldError::new(field("status"), format!("at most {REQUEST_STATUS_MAX}")));
        }
    }
    Ok(())
}

/// An element's `styles` at `field`: each half at most [`STYLE_PROPERTIES_MAX`]
/// properties, names and values within their lengths.
fn validate_styles(field: &str, styles: &ElementStyles) -> Result<(), FieldError> {
    for (half, map) in [("changed", &styles.changed), ("unchanged", &styles.unchanged)] {
        if map.len() > STYLE_PROPERTIES_MAX {
            return Err(FieldError::new(
                format!("{field}.{half}"),
                format!("at most {STYLE_PROPERTIES_MAX} properties"),
            ));
        }
        for (name, value) in map.iter() {
            if name.chars().count() > STYLE_NAME_MAX_CHARS {
                return Err(FieldError::new(
                    format!("{field}.{half}"),
                    format!("property names of at most {STYLE_NAME_MAX_CHARS} characters"),
                ));
            }
            if value.chars().count() > STYLE_VALUE_MAX_CHARS {
                return Err(FieldError::new(
                    format!("{field}.{half}.{name}"),
                    format!("at most {STYLE_VALUE_MAX_CHARS} characters"),
                ));
            }
        }
    }
    Ok(())
}

/// What a client can check before `createChange`: the title, the capture, and that a
/// client-made `changeId` is a UUID (surrounding whitespace ignored, as in every other
/// change reference).
pub fn validate_create_change(input: &CreateChangeInput) -> Result<(), FieldError> {
    validate_title("title", &input.title)?;
    if let Some(capture) = &input.capture {
        validate_capture(capture)?;
    }
    if input.route.as_deref().is_some_and(|r| !crate::is_route(r)) {
        return Err(FieldError::new(
            "route",
            "must be a path on the stage: one / first, no backslash, space or control character",
        ));
    }
    if let Some(id) = &input.change_id
        && !is_uuid(id.trim())
    {
        return Err(FieldError::new("changeId", "must be a UUID"));
    }
    Ok(())
}

/// `listChanges` `limit`: default 50, at most 200, at least 1.
pub fn list_limit(limit: Option<u32>) -> Result<u32, FieldError> {
    match limit {
        None => Ok(LIST_LIMIT_DEFAULT),
        Some(n @ 1..=LIST_LIMIT_MAX) => Ok(n),
        Some(_) => Err(FieldError::new("limit", format!("must be between 1 and {LIST_LIMIT_MAX}"))),
    }
}

/// `claimChanges` `leaseMinutes`: default 30, between 1 and [`MAX_LEASE_MINUTES`].
pub fn lease_minutes(minutes: Option<u32>) -> Result<u32, FieldError> {
    match minutes {
        None => Ok(DEFAULT_LEASE_MINUTES),
        Some(n @ 1..=MAX_LEASE_MINUTES) => Ok(n),
        Some(_) => Err(FieldError::new("leaseMinutes", format!("must be between 1 and {MAX_LEASE_MINUTES}"))),
    }
}

/// The image types the protocol accepts: "`contentType` (png/jpeg/webp)".
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ImageType {
    Png,
    Jpeg,
    Webp,
}

impl ImageType {
    pub const fn content_type(self) -> &'static str {
        match self {
            ImageType::Png => "image/png",
            ImageType::Jpeg => "image/jpeg",
            ImageType::Webp => "image/webp",
        }
    }

    /// `image/png`, `image/jpeg` (or `image/jpg`), `image/webp`; also the bare `png`,
    /// `jpeg`, `webp`. Case and parameters (`; charset=…`) are ignored.
    pub fn from_content_type(s: &str) -> Option<Self> {
        let essence = s.split(';').next().unwrap_or("").trim().to_ascii_lowercase();
        match essence.strip_prefix("image/").unwrap_or(&essence) {
            "png" => Some(ImageType::Png),
            "jpeg" | "jpg" => Some(ImageType::Jpeg),
            "webp" => Some(ImageType::Webp),
            _ => None,
        }
    }

    /// The type the bytes' magic number says, if it is one of ours.
    pub fn sniff(bytes: &[u8]) -> Option<Self> {
        if bytes.starts_with(b"\x89PNG\r\n\x1a\n") {
            Some(ImageType::Png)
        } else if bytes.starts_with(&[0xFF, 0xD8, 0xFF]) {
            Some(ImageType::Jpeg)
        } else if bytes.len() >= 12 && &bytes[..4] == b"RIFF" && &bytes[8..12] == b"WEBP" {
            Some(ImageType::Webp)
        } else {
            None
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const NOW: Timestamp = Timestamp::from_unix_millis(1_000_000);

    #[test]
    fn held_is_strictly_before_held_until() {
        assert!(is_held(Some(NOW.plus_millis(1)), NOW));
        assert!(!is_held(Some(NOW), NOW));
        assert!(!is_held(None, NOW));
    }

    #[test]
    fn parses_change_refs() {
        assert_eq!(parse_change_ref("#7"), Some(ChangeRef::Short(7)));
        assert_eq!(parse_change_ref(" 42 "), Some(ChangeRef::Short(42)));
        let id = "3F2504E0-4F89-11D3-9A0C-0305E82C3301";
        assert_eq!(parse_change_ref(id), Some(ChangeRef::Id(id.to_ascii_lowercase())));
        for bad in
            ["", "#", "#-1", "7a", "##7", "3f2504e0-4f89-11d3-9a0c-0305e82c330", "99999999999999999999"]
        {
            assert_eq!(parse_change_ref(bad), None, "{bad}");
        }
    }

    #[test]
    fn claimability() {
        use ChangeStatus::*;
        let later = NOW.plus_seconds(60);
        let live = LeaseView { claim_expires_at: Some(later), claimed_by: Some("agent-a") };
        let lapsed = LeaseView { claim_expires_at: Some(NOW), claimed_by: Some("agent-a") };
        assert!(is_claimable(Open, None, None, NOW));
        assert!(is_claimable(Claimed, Some(NOW), Some(lapsed), NOW));
        let held = claim_block(Open, Some(later), None, NOW).unwrap();
        assert_eq!((held.reason, held.claimable_at), (NotClaimableReason::Held, Some(later)));
        let leased = claim_block(Claimed, None, Some(live), NOW).unwrap();
        assert_eq!(leased.reason, NotClaimableReason::Leased);
        assert_eq!(leased.claimable_at, Some(later));
        assert_eq!(leased.claimed_by.as_deref(), Some("agent-a"));
        assert_eq!(claim_block(Done, None, None, NOW).unwrap().reason, NotClaimableReason::Done);
        assert_eq!(claim_block(Dismissed, None, None, NOW).unwrap().reason, NotClaimableReason::Dismissed);
        let asked = claim_block(NeedsAnswer, None, Some(lapsed), NOW).unwrap();
        assert_eq!((asked.reason, asked.claimable_at), (NotClaimableReason::Leased, None));
        assert!(!is_claimable(InProgress, None, None, NOW));
    }

    #[test]
    fn hidden_and_settable_statuses() {
        use ChangeStatus::*;
        let hidden: Vec<_> =
            ChangeStatus::ALL.into_iter().filter(|s| is_hidden_unless_include_done(*s)).collect();
        assert_eq!(hidden, [Done, Dismissed]);
        let settable: Vec<_> =
            ChangeStatus::ALL.into_iter().filter(|s| is_user_settable_status(*s)).collect();
        assert_eq!(settable, [Open, InProgress, Dismissed]);
    }

    #[test]
    fn validates_limits() {
        assert!(validate_title("title", "Fix the button").is_ok());
        assert_eq!(validate_title("title", "  ").unwrap_err().field, "title");
        assert!(validate_title("title", &"é".repeat(200)).is_ok());
        assert!(validate_title("title", &"é".repeat(201)).is_err());
        let mut capture = Capture {
            stroke: vec![],
            bounds: None,
            elements: vec![],
            device_pixel_ratio: None,
            scroll: None,
            failed_requests: vec![],
        };
        capture.elements = vec![Default::default(); ELEMENTS_MAX + 1];
        assert_eq!(validate_capture(&capture).unwrap_err().field, "capture.elements");
        capture.elements.clear();
        capture.stroke = vec![crate::Point { x: 0.0, y: 0.0 }; STROKE_POINTS_MAX + 1];
        assert_eq!(validate_capture(&capture).unwrap_err().field, "capture.stroke");
        capture.stroke.clear();
        let long = "x".repeat(STYLE_VALUE_MAX_CHARS + 1);
        let styles = ElementStyles { changed: [("color", long.as_str())].into(), ..Default::default() };
        capture.elements =
            vec![Default::default(), crate::Element { styles: Some(styles), ..Default::default() }];
        assert_eq!(validate_capture(&capture).unwrap_err().field, "capture.elements[1].styles.changed.color");
        let styles = ElementStyles {
            unchanged: crate::StyleValues(
                (0..=STYLE_PROPERTIES_MAX).map(|n| (format!("p{n}"), "0".into())).collect(),
            ),
            ..Default::default()
        };
        capture.elements = vec![crate::Element { styles: Some(styles), ..Default::default() }];
        assert_eq!(validate_capture(&capture).unwrap_err().field, "capture.elements[0].styles.unchanged");
        capture.elements.clear();
        capture.failed_requests =
            vec![crate::FailedRequest { method: "GET".into(), url: "/x".into(), status: 1000 }];
        assert_eq!(validate_capture(&capture).unwrap_err().field, "capture.failedRequests[0].status");
        capture.failed_requests[0].status = 404;
        assert!(validate_capture(&capture).is_ok());
        let input =
            CreateChangeInput { change_id: Some("nope".into()), title: "t".into(), ..Default::default() };
        assert_eq!(validate_create_change(&input).unwrap_err().field, "changeId");
        assert_eq!(list_limit(None), Ok(50));
        assert!(list_limit(Some(201)).is_err());
        assert!(list_limit(Some(0)).is_err());
        assert_eq!(lease_minutes(None), Ok(30));
    }

    #[test]
    fn image_types() {
        assert_eq!(ImageType::sniff(b"\x89PNG\r\n\x1a\n...."), Some(ImageType::Png));
        assert_eq!(ImageType::sniff(&[0xFF, 0xD8, 0xFF, 0xE0]), Some(ImageType::Jpeg));
        assert_eq!(ImageType::sniff(b"RIFF\0\0\0\0WEBPVP8 "), Some(ImageType::Webp));
        assert_eq!(ImageType::sniff(b"GIF89a"), None);
        assert_eq!(ImageType::from_content_type("Image/JPG"), Some(ImageType::Jpeg));
        assert_eq!(ImageType::from_content_type("png"), Some(ImageType::Png));
        assert_eq!(ImageType::from_content_type("image/gif"), None);
    }
}

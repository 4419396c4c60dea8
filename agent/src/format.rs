//! What the agent CLI prints for people and agents: items, threads, the reasons a claim
//! failed, and times as local `HH:MM`. Everything here is pure; the local time zone's
//! offset is passed in (see [`LocalTime`]).

use std::collections::BTreeMap;
use std::fmt::Write as _;

use redline_protocol::{
    AttachChangeShotOutput, Attachment, AttachmentKind, AuthorKind, Change, ChangeStatus, ClaimChangesOutput,
    DurationStats, ElementStyles, FailedRequest, GetChangeOutput, GetStatsOutput, Group, LoopStats, Message,
    MessageType, NotClaimableItem, NotClaimableReason, Timestamp, VERDICT_SHOT_LABEL, open_question,
    option_label, same_label, sent_back, short_sha,
};

use crate::anchors::{AnchorNow, now_text};

/// How much of a circled element's computed styles `show` prints (`--css`, and
/// `changes_show`'s `css`).
#[derive(
    Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum, serde::Deserialize, schemars::JsonSchema,
)]
#[serde(rename_all = "lowercase")]
// Written out where it is used: some MCP clients do not follow `$ref` (see `mcp.rs`).
#[schemars(inline)]
pub enum CssDetail {
    /// What differs from the element's parent (font, colour) or its tag's default (the rest).
    #[default]
    Changed,
    /// The whole compact set: font, colour, background, spacing, size, display, position.
    Full,
    /// No styles.
    None,
}

/// Converts instants to the local time of day. `offset` gives the local time zone's
/// offset from UTC, in seconds, at an instant.
pub struct LocalTime<'a> {
    pub offset: &'a dyn Fn(Timestamp) -> i64,
}

impl LocalTime<'_> {
    /// `HH:MM` in local time.
    pub fn hhmm(&self, t: Timestamp) -> String {
        hhmm(t, (self.offset)(t))
    }
}

/// `HH:MM` of `t` at `offset_secs` from UTC.
pub fn hhmm(t: Timestamp, offset_secs: i64) -> String {
    let secs = (t.unix_millis().div_euclid(1000) + offset_secs).rem_euclid(86_400);
    format!("{:02}:{:02}", secs / 3600, secs % 3600 / 60)
}

/// The local time zone's offset from UTC at `t`, from the C library (which reads `TZ`
/// and `/etc/localtime`); 0 if it cannot tell.
pub fn system_offset(t: Timestamp) -> i64 {
    #[cfg(unix)]
    {
        let secs = t.unix_millis().div_euclid(1000) as libc::time_t;
        // SAFETY: `localtime_r` is the thread-safe variant; it writes only into `tm`,
        // which is a plain C struct for which all-zeroes is a valid value.
        unsafe {
            let mut tm: libc::tm = std::mem::zeroed();
            if libc::localtime_r(&secs, &mut tm).is_null() {
                return 0;
            }
            tm.tm_gmtoff as i64
        }
    }
    #[cfg(not(unix))]
    {
        let _ = t;
        0
    }
}

/// `#7`.
pub fn short(c: &Change) -> String {
    format!("#{}", c.short_id)
}

/// Why an item is not claimable now, for `list` and `show`: "claimable at HH:MM" for a
/// held item, who holds the lease, or nothing when it is claimable.
pub fn availability(c: &Change, group: Option<&Group>, now: Timestamp, local: &LocalTime<'_>) -> String {
    if c.held {
        return match c.held_until {
            Some(t) => format!("held by its filer, claimable at {}", local.hhmm(t)),
            None => "held by its filer".to_owned(),
        };
    }
    let lease = group.filter(|g| g.claim_expires_at.is_some_and(|end| end > now));
    match (c.status, lease) {
        (ChangeStatus::Open | ChangeStatus::Claimed, None) => "claimable now".to_owned(),
        (ChangeStatus::Done, _) => {
            let mut s = match &c.head_commit {
                Some(sha) => {
                    format!("done in {}{}", short_sha(sha), if c.live == Some(true) { ", live" } else { "" })
                }
                None => "done".to_owned(),
            };
            if c.verified_at.is_some() {
                s.push_str(&format!(", verified by {}", c.verified_by.as_deref().unwrap_or("someone")));
            }
            s
        }
        (ChangeStatus::Dismissed, _) => "dismissed".to_owned(),
        (_, Some(g)) => format!(
            "claimed by {} until {}",
            g.claimed_by.as_deref().unwrap_or("someone"),
            g.claim_expires_at.map(|t| local.hhmm(t)).unwrap_or_default()
        ),
        (_, None) => match group.and_then(|g| g.claimed_by.as_deref()) {
            Some(by) => format!("in {by}'s group (lease lapsed)"),
            None => "in a group".to_owned(),
        },
    }
}

/// One line of `list`: `#3  open  Fix the total  /orders  (claimable now)`.
pub fn list_line(c: &Change, groups: &[Group], now: Timestamp, local: &LocalTime<'_>) -> String {
    let group = c.group_id.as_deref().and_then(|g| groups.iter().find(|gr| gr.group_id == g));
    let route = c.route.as_deref().map(|r| format!("  {r}")).unwrap_or_default();
    format!(
        "{:<5} {:<12} {}{}  ({})",
        short(c),
        c.status.as_str(),
        c.title,
        route,
        availability(c, group, now, local)
    )
}

/// The line after a page of a list that has more: how many were shown of how many,
/// and the command (or tool call) for the next page.
pub fn more_line(shown: usize, total: Option<u64>, next: &str) -> String {
    let of = total.map(|t| format!(" of {t}")).unwrap_or_default();
    format!("({shown}{of} shown; the next page: {next})")
}

/// A claim (or a renewal) as both the CLI and the MCP tools say it: the group, its
/// lease, then one line per item.
pub fn claimed_lines(
    out: &ClaimChangesOutput,
    renewed: bool,
    now: Timestamp,
    local: &LocalTime<'_>,
) -> String {
    let g = &out.group;
    let until = g.claim_expires_at.map(|t| format!(", lease until {}", local.hhmm(t))).unwrap_or_default();
    let lines: Vec<String> = out
        .changes
        .iter()
        .map(|c| format!("  {}", list_line(c, std::slice::from_ref(g), now, local)))
        .collect();
    format!(
        "{} {} item{} as \"{}\" for {} (group {}, fence {}{until}):\n{}",
        if renewed { "Renewed" } else { "Claimed" },
        out.changes.len(),
        if out.changes.len() == 1 { "" } else { "s" },
        g.title,
        g.claimed_by.as_deref().unwrap_or("?"),
        g.group_id,
        g.fence,
        lines.join("\n")
    )
}

/// The explanation of a 409 `not_claimable`: one line per named item saying why, and
/// when it becomes claimable, then what to do instead; fit for a terminal (the names
/// claimants gave themselves are in it).
pub fn explain_not_claimable(items: &[NotClaimableItem], claimed_by: &str, local: &LocalTime<'_>) -> String {
    terminal_safe(&not_claimable_lines(items, claimed_by, local))
}

fn not_claimable_lines(items: &[NotClaimableItem], claimed_by: &str, local: &LocalTime<'_>) -> String {
    let mut out = String::from("Nothing was claimed:\n");
    // In the order the items are numbered; unknown names last.
    let mut items: Vec<&NotClaimableItem> = items.iter().collect();
    items.sort_by_key(|i| i.short_id.as_deref().and_then(|s| s.parse::<u64>().ok()).unwrap_or(u64::MAX));
    for item in items {
        let name = match &item.short_id {
            Some(s) => format!("#{s}"),
            None => item.change_id.clone(),
        };
        let at = item.claimable_at.map(|t| format!("; claimable at {}", local.hhmm(t))).unwrap_or_default();
        let why = match item.reason {
            NotClaimableReason::Held => format!("is held: its filer is still adding to the batch{at}"),
            NotClaimableReason::Leased => {
                let whom = match item.claimed_by.as_deref() {
                    Some(by) if by == claimed_by => "yours, as ".to_owned() + by,
                    Some(by) => format!("claimed by {by}"),
                    None => "claimed by someone else".to_owned(),
                };
                if item.claimable_at.is_some() {
                    format!("is inside another group's lease ({whom}){at}")
                } else {
                    format!("is in a conversation of another group ({whom}): its claimant may renew it")
                }
            }
            NotClaimableReason::Done => "is done".to_owned(),
            NotClaimableReason::Dismissed => "was dismissed".to_owned(),
            NotClaimableReason::NotFound => "was not found in this project".to_owned(),
        };
        let _ = writeln!(out, "  {name} {why}");
    }
    let _ = write!(
        out,
        "Wait for claimable work instead: redline wait --claim --claimed-by {}",
        shell_word(claimed_by)
    );
    out
}

/// A word as a shell would need it quoted.
pub fn shell_word(s: &str) -> String {
    if !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || "-_.,/:@+=".contains(c)) {
        s.to_owned()
    } else {
        format!("'{}'", s.replace('\'', r"'\''"))
    }
}

/// Says `text` on stderr after `redline: `, fit for a terminal: for what holds words of
/// the server's (its errors, ids, names).
pub fn warn(text: &str) {
    eprintln!("redline: {}", terminal_safe(text));
}

/// Text fit for a terminal: control characters other than newline and tab removed
/// (a stage page or a filer must not be able to send escape sequences to an agent's
/// terminal, or rewrite a line with a carriage return), and so are the bidirectional
/// overrides that make text read differently from what it holds.
pub fn terminal_safe(text: &str) -> String {
    text.chars()
        .filter(|c| !(c.is_control() && *c != '\n' && *c != '\t'))
        .filter(|c| !matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'))
        .collect()
}

/// The images `show` saved: the screenshot, and each thread image by attachment key.
#[derive(Debug, Default)]
pub struct SavedImages {
    pub screenshot: Option<String>,
    pub attachments: BTreeMap<String, String>,
}

/// `show N`: everything an agent needs to act on an item; `anchors_now[i]` is where the
/// source anchor of element `i` is at the checkout's `HEAD` (see [`crate::anchors`]).
pub fn show(
    out: &GetChangeOutput,
    group: Option<&Group>,
    saved: &SavedImages,
    css: CssDetail,
    now: Timestamp,
    local: &LocalTime<'_>,
    anchors_now: &[Option<AnchorNow>],
) -> String {
    let c = &out.change;
    let mut s = String::new();
    let _ = writeln!(s, "{} {}", short(c), c.title);
    let _ = writeln!(s, "Status:   {} ({})", c.status.as_str(), availability(c, group, now, local));
    if let Some(g) = group {
        let _ = writeln!(
            s,
            "Group:    {} \"{}\" (fence {}{})",
            g.group_id,
            g.title,
            g.fence,
            g.claimed_by.as_deref().map(|b| format!(", claimed by {b}")).unwrap_or_default()
        );
    }
    let stage = out.stage_url.as_deref().unwrap_or("(no URL)");
    let _ = writeln!(s, "Stage:    {stage}");
    if let Some(route) = &c.route {
        let page = out.stage_url.as_deref().map(|u| format!("{}{route}", u.trim_end_matches('/')));
        let _ = writeln!(s, "Route:    {route}{}", page.map(|p| format!("  ({p})")).unwrap_or_default());
    }
    let build = c.git_sha.as_deref().map(short_sha).unwrap_or("unknown");
    let _ = writeln!(
        s,
        "Filed:    by {} at {} on build {build}",
        c.filed_by.as_deref().unwrap_or("someone"),
        local.hhmm(c.created_at)
    );
    if let Some(v) = c.viewport {
        let _ = writeln!(s, "Viewport: {}x{}", v.width, v.height);
    }
    if let Some(locale) = &c.locale {
        let _ = writeln!(s, "Locale:   {locale}");
    }
    if let Some(body) = c.body.as_deref().filter(|b| !b.trim().is_empty()) {
        let _ = writeln!(s, "\n{}", indent(body, ""));
    }
    s.push_str(&question_block(c.status, &out.thread, &saved.attachments));
    if let Some(v) = sent_back(c.status, &out.thread) {
        let _ = writeln!(
            s,
            "\nSent back at {} by {}: {}",
            local.hhmm(v.created_at),
            v.author_name.as_deref().unwrap_or("the filer"),
            one_line(&v.body, 500)
        );
        s.push_str(&verdict_images(v, &saved.attachments, "  "));
    }
    let elements = c.capture.as_ref().map(|cap| cap.elements.as_slice()).unwrap_or_default();
    if !elements.is_empty() {
        let _ = writeln!(s, "\nCircled elements ({}):", elements.len());
        for (i, e) in elements.iter().enumerate() {
            let mut head = format!("  {}.", i + 1);
            if !e.tag.is_empty() {
                let _ = write!(head, " <{}>", e.tag);
            }
            if let Some(role) = &e.role {
                let _ = write!(head, " role={role}");
            }
            if let Some(name) = &e.name {
                let _ = write!(head, " \"{}\"", one_line(name, 200));
            }
            let _ = writeln!(s, "{head}");
            if let Some(t) = &e.test_id {
                let _ = writeln!(s, "     test id:   {t}");
            }
            if let Some(t) = &e.component_test_id {
                let _ = writeln!(s, "     component: {t}");
            }
            if let Some(a) = &e.source_anchor {
                let followed = anchors_now.get(i).and_then(Option::as_ref).map(|n| now_text(a, n));
                let _ = writeln!(s, "     source:    {a} as of {build}{}", followed.unwrap_or_default());
            }
            if let Some(p) = &e.css_path {
                let _ = writeln!(s, "     css:       {p}");
                // The page's own code for it is the framed page's, not the top page's.
                let parts = redline_protocol::element_path::frame_parts(p);
                if let Some((_, frames)) = parts.split_last().filter(|(_, frames)| !frames.is_empty()) {
                    let frames = frames.join(redline_protocol::element_path::FRAME_SEPARATOR);
                    let _ = writeln!(s, "     in frame:  {frames} (the rest of the path is in its page)");
                }
            }
            if let Some(t) = e.text.as_deref().filter(|t| !t.trim().is_empty()) {
                let _ = writeln!(s, "     text:      \"{}\"", one_line(t, 200));
            }
            if let Some(r) = e.rect {
                let _ = writeln!(
                    s,
                    "     rect:      x {} y {}, {}x{} (CSS px in the viewport)",
                    r.x.round(),
                    r.y.round(),
                    r.width.round(),
                    r.height.round()
                );
            }
            if let Some(styles) = e.styles.as_ref().and_then(|styles| styles_text(styles, css)) {
                let _ = writeln!(s, "     styles:    {styles}");
            }
        }
    }
    if let Some(refind) = &out.refind {
        s.push_str(&refind_text(refind, local));
    }
    if !c.console_errors.is_empty() {
        let _ = writeln!(s, "\nConsole errors ({}):", c.console_errors.len());
        for e in &c.console_errors {
            let _ = writeln!(s, "  - {}", one_line(e, 300));
        }
    }
    let failed = c.capture.as_ref().map(|cap| cap.failed_requests.as_slice()).unwrap_or_default();
    if !failed.is_empty() {
        let _ = writeln!(s, "\nFailed requests ({}):", failed.len());
        for r in failed {
            let _ = writeln!(s, "  - {}", failed_request(r));
        }
    }
    // The latest messages of a longer thread (see `Ctx::get_change`): say how many came
    // before them.
    let shown = out.thread.len() as u64;
    let older = out.message_count.map_or(0, |n| n.saturating_sub(shown));
    if shown + older > 0 {
        let heading = match older {
            0 => shown.to_string(),
            _ => format!("the latest {shown} of {}; {older} older not shown", shown + older),
        };
        let _ = writeln!(s, "\nThread ({heading}):");
        for m in &out.thread {
            let _ = write!(s, "{}", thread_message(m, &out.thread, &saved.attachments, local));
        }
    }
    match (&saved.screenshot, &c.screenshot_url) {
        (Some(path), _) => {
            let _ = writeln!(s, "\nScreenshot: {path}");
        }
        (None, Some(_)) => {
            let _ = writeln!(s, "\nScreenshot: could not be saved");
        }
        (None, None) => {}
    }
    if c.head_commit.is_some() || c.branch.is_some() {
        let _ = writeln!(
            s,
            "\nFixed in: {}{}",
            c.head_commit.as_deref().map(short_sha).unwrap_or("?"),
            c.branch.as_deref().map(|b| format!(" on {b}")).unwrap_or_default()
        );
    }
    if let Some(url) = &c.commit_url {
        let _ = writeln!(s, "Commit: {}", terminal_safe(url));
    }
    if let Some(url) = &c.pull_request_url {
        let _ = writeln!(s, "Pull request: {}", terminal_safe(url));
    }
    s
}

/// What the filer's page found of the circled elements on a later build
/// (`recordRefind`): "Re-found on build b2c3d4e by ana at 10:02 (moved): Export CSV moved
/// to `…`; orders.old gone".
fn refind_text(refind: &redline_protocol::Refind, local: &LocalTime<'_>) -> String {
    let elements: Vec<String> = refind.elements.iter().map(|e| terminal_safe(&e.describe())).collect();
    format!(
        "\nRe-found on build {} by {} at {} ({}): {}\n",
        short_sha(&terminal_safe(&refind.git_sha)),
        terminal_safe(refind.found_by.as_deref().unwrap_or("the filer")),
        local.hhmm(refind.found_at),
        refind.whereabouts().as_str(),
        elements.join("; ")
    )
}

/// `release` (and `changes_release`): the group given up, and what went back to the queue.
pub fn released_text(out: &ClaimChangesOutput) -> String {
    let g = &out.group;
    let back: Vec<String> = out.changes.iter().map(|c| format!("#{}", c.short_id)).collect();
    let what = match back.as_slice() {
        [] => "nothing in it was left to do".to_owned(),
        [one] => format!("{one} is back in the queue for any agent"),
        many => format!("{} are back in the queue for any agent", many.join(", ")),
    };
    format!("Released group {} \"{}\": its lease has ended; {what}.", g.group_id, g.title)
}

/// `stats`: the project's row, then one per agent and per filer, as a table.
pub fn stats(out: &GetStatsOutput, days: u32) -> String {
    const HEAD: [&str; 8] =
        ["FILED", "DONE", "DISMISSED", "VERIFIED", "STILL WRONG", "QUESTIONS/ITEM", "TO DONE", "TO VERIFIED"];
    let cells = |s: &LoopStats| {
        let still_wrong = match s.still_wrong_rate {
            Some(rate) => format!("{} ({:.0}%)", s.still_wrong, rate * 100.0),
            None => s.still_wrong.to_string(),
        };
        [
            s.filed.to_string(),
            s.done.to_string(),
            s.dismissed.to_string(),
            s.verified.to_string(),
            still_wrong,
            s.questions_per_item.map_or_else(|| "-".to_owned(), |q| format!("{q:.2}")),
            durations(&s.to_done),
            durations(&s.to_verified),
        ]
    };
    let name = |s: &LoopStats| one_line(&terminal_safe(s.name.as_deref().unwrap_or("")), 30);
    let mut rows =
        vec![(String::new(), HEAD.map(str::to_owned)), ("all items".to_owned(), cells(&out.total))];
    for (title, group) in [("by agent", &out.agents), ("by filer", &out.filers)] {
        if !group.is_empty() {
            rows.push((format!("{title}:"), Default::default()));
            rows.extend(group.iter().map(|s| (format!("  {}", name(s)), cells(s))));
        }
    }
    let name_width = rows.iter().map(|(n, _)| n.chars().count()).max().unwrap_or(0);
    let mut widths = [0; HEAD.len()];
    for (_, cells) in &rows {
        for (w, cell) in widths.iter_mut().zip(cells) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut text = format!(
        "Items filed in the last {days} day{} (since {}); times are median / 90th percentile.\n",
        if days == 1 { "" } else { "s" },
        &out.since.to_string()[..10]
    );
    for (name, cells) in &rows {
        let mut line = format!("{name:<name_width$}");
        if cells.iter().any(|c| !c.is_empty()) {
            for (w, cell) in widths.iter().zip(cells) {
                let _ = write!(line, "  {cell:>w$}");
            }
        }
        let _ = writeln!(text, "{}", line.trim_end());
    }
    text.trim_end().to_owned()
}

/// A median and 90th percentile as `30m / 4h`; `-` when nothing was measured.
fn durations(d: &DurationStats) -> String {
    match (d.median_ms, d.p90_ms) {
        (Some(median), Some(p90)) => format!("{} / {}", duration(median), duration(p90)),
        _ => "-".to_owned(),
    }
}

/// A duration in the largest units that keep it short: `45s`, `30m`, `4h10m`, `3d4h`.
pub fn duration(ms: u64) -> String {
    let s = ms / 1000;
    let (d, h, m) = (s / 86_400, s % 86_400 / 3_600, s % 3_600 / 60);
    match s {
        0..60 => format!("{s}s"),
        60..3_600 => format!("{m}m"),
        3_600..86_400 if m == 0 => format!("{h}h"),
        3_600..86_400 => format!("{h}h{m:02}m"),
        _ if h == 0 => format!("{d}d"),
        _ => format!("{d}d{h}h"),
    }
}

/// The latest question and its choices (each with the image saved for it), and, once
/// answered, the answer and the choice it picked.
pub fn question_block(status: ChangeStatus, thread: &[Message], images: &BTreeMap<String, String>) -> String {
    let Some(asked) = thread.iter().rposition(|m| m.role() == MessageType::Question) else {
        return String::new();
    };
    let answered = thread[asked..].iter().position(|m| m.role() == MessageType::Answer).map(|i| asked + i);
    // The choices as they were offered: up to the answer, or all of the thread while open.
    let offered = &thread[..answered.unwrap_or(thread.len())];
    let Some(open) = open_question(ChangeStatus::NeedsAnswer, offered) else { return String::new() };
    let mut s = String::new();
    let state = match (status, answered) {
        (ChangeStatus::NeedsAnswer, _) => "open, waiting for the filer",
        (_, Some(_)) => "answered",
        (_, None) => "no longer open",
    };
    let _ = writeln!(s, "\nQuestion ({state}): {}", one_line(&open.message.body, 500));
    let chosen = answered.and_then(|a| thread[a].chosen_option.as_deref()).and_then(|k| open.choice(k));
    for (i, choice) in open.choices.iter().enumerate() {
        let image = choice
            .image_key
            .as_deref()
            .map(|k| match images.get(k) {
                Some(path) => format!("  image {path}"),
                None => "  image (not saved)".to_owned(),
            })
            .unwrap_or_default();
        let mark = if chosen.is_some_and(|c| c.key == choice.key) { "  <- chosen" } else { "" };
        let _ = writeln!(s, "  {}. {}  (key {}){image}{mark}", i + 1, choice.label, choice.key);
    }
    if let Some(a) = answered.map(|a| &thread[a]) {
        let who = a.author_name.as_deref().unwrap_or("the filer");
        let _ = writeln!(s, "Answer:   {who}: {}", one_line(&a.body, 500));
    }
    s
}

/// One thread message: who, when, what, its options (marking the chosen one) and images.
pub fn thread_message(
    m: &Message,
    thread: &[Message],
    images: &BTreeMap<String, String>,
    local: &LocalTime<'_>,
) -> String {
    let who = match (m.author_kind, m.author_name.as_deref()) {
        (AuthorKind::Agent, Some(n)) => format!("agent {n}"),
        (AuthorKind::Agent, None) => "agent".to_owned(),
        (AuthorKind::User, Some(n)) => n.to_owned(),
        (AuthorKind::User, None) => "user".to_owned(),
    };
    let mut s = format!(
        "  [{}] {who} ({}): {}\n",
        local.hhmm(m.created_at),
        m.role().as_str(),
        indent(&m.body, "    ").trim_start()
    );
    let place = |a: &Attachment| match (images.get(&a.key), &a.url) {
        (Some(path), _) => format!("  {path}"),
        (None, Some(url)) => format!("  <{url}>"),
        (None, None) => String::new(),
    };
    let chosen = |a: &Attachment| thread.iter().any(|o| o.chosen_option.as_deref() == Some(a.key.as_str()));
    for (i, a) in m.attachments.iter().enumerate() {
        let kind = match a.kind {
            AttachmentKind::Option => "option",
            AttachmentKind::Evidence => "image",
        };
        // A message's options are choices merged by label, as the panel shows them
        // (`redline_protocol::thread`): a text option and its image are one line.
        let same = |b: &&Attachment| {
            a.kind == AttachmentKind::Option
                && b.kind == AttachmentKind::Option
                && same_label(&b.label, &a.label)
        };
        if m.attachments[..i].iter().any(|b| same(&b)) {
            continue;
        }
        let merged: Vec<&Attachment> =
            std::iter::once(a).chain(m.attachments[i + 1..].iter().filter(same)).collect();
        let places: String = merged.iter().map(|b| place(b)).collect();
        let mark = if merged.iter().any(|b| chosen(b)) { "  <- chosen" } else { "" };
        let _ = writeln!(s, "      {kind} {}: {}{places}{mark}", a.key, a.label);
    }
    if let Some(key) = &m.chosen_option {
        let label = option_label(thread, key).unwrap_or(key.as_str());
        let _ = writeln!(s, "      chose: {label}");
    }
    s
}

/// A verdict's images (the after-screenshot), one line each, with where it was saved.
fn verdict_images(m: &Message, images: &BTreeMap<String, String>, prefix: &str) -> String {
    let mut s = String::new();
    for a in &m.attachments {
        let place = match (images.get(&a.key), &a.url) {
            (Some(path), _) => path.clone(),
            (None, Some(url)) => format!("(not saved) <{url}>"),
            (None, None) => "(no image)".to_owned(),
        };
        let what =
            if a.label == VERDICT_SHOT_LABEL { "after-screenshot".to_owned() } else { a.label.clone() };
        let _ = writeln!(s, "{prefix}{what}: {place}");
    }
    s
}

/// `next --claimed-by`'s text for items a person sent back as still wrong: each item,
/// the person's words and the after-screenshot saved for it (`saved[i]` is item i's).
pub fn sent_back_text(items: &[(Change, Vec<Message>)], saved: &[SavedImages]) -> String {
    let none = BTreeMap::new();
    let mut s = format!(
        "{} sent back as still wrong, checked on the stage:\n",
        if items.len() == 1 { "1 item".to_owned() } else { format!("{} items", items.len()) }
    );
    for (i, (c, thread)) in items.iter().enumerate() {
        let _ = writeln!(s, "  {}  {}", short(c), c.title);
        if let Some(v) = thread.last() {
            let who = v.author_name.as_deref().unwrap_or("the filer");
            let _ = writeln!(s, "    {who}: {}", one_line(&v.body, 500));
            s.push_str(&verdict_images(v, saved.get(i).map_or(&none, |x| &x.attachments), "    "));
        }
    }
    s.trim_end().to_owned()
}

/// `next --claimed-by`'s lines for an answered item: the item, then its question block.
pub fn answer_lines(c: &Change, thread: &[Message], images: &BTreeMap<String, String>) -> String {
    format!(
        "{}  {}{}",
        short(c),
        c.title,
        question_block(c.status, thread, images).trim_end().replace('\n', "\n    ")
    )
}

/// The choices a question just asked offers, a line each: `option KEY: LABEL`, and
/// `(with image)` where the question carries the option's image.
pub fn asked_options(question: &Message) -> String {
    let Some(open) = open_question(ChangeStatus::NeedsAnswer, std::slice::from_ref(question)) else {
        return String::new();
    };
    open.choices
        .iter()
        .map(|c| {
            let image = if c.image_key.is_some() { " (with image)" } else { "" };
            format!("\n  option {}: {}{image}", c.key, one_line(&c.label, 200))
        })
        .collect()
}

/// An element's styles as `show` prints them, `name: value` declarations in the compact
/// set's order; `None` when `css` asks for none.
pub fn styles_text(styles: &ElementStyles, css: CssDetail) -> Option<String> {
    let shown = match css {
        CssDetail::None => return None,
        CssDetail::Changed => styles.in_order(false),
        CssDetail::Full => styles.in_order(true),
    };
    if shown.is_empty() {
        return Some("none differ from its parent or its tag's default".to_owned());
    }
    let declarations: Vec<String> =
        shown.iter().map(|(name, value)| format!("{}: {}", one_line(name, 40), compact_css(value))).collect();
    Some(declarations.join("; "))
}

/// A computed value said shortly: `rgb()` colours as hex (`rgba()` with alpha too, a
/// fully transparent one as `transparent`) and `0px` as `0`; anything else as it is.
pub fn compact_css(value: &str) -> String {
    let value = one_line(value, 200);
    let mut out = String::new();
    let mut rest = value.as_str();
    while let Some(at) = rest.find("rgb") {
        let (before, tail) = rest.split_at(at);
        out.push_str(before);
        let colour = tail.find(')').and_then(|end| Some((hex_colour(&tail[..=end])?, end + 1)));
        let (said, used) = colour.unwrap_or_else(|| ("rgb".to_owned(), 3));
        out.push_str(&said);
        rest = &tail[used..];
    }
    out.push_str(rest);
    out.split(' ').map(|word| if word == "0px" { "0" } else { word }).collect::<Vec<_>>().join(" ")
}

/// `rgb(r, g, b)` or `rgba(r, g, b, a)` as `#rrggbb`, `#rrggbbaa` or `transparent`.
fn hex_colour(function: &str) -> Option<String> {
    let args = function.strip_prefix("rgba(").or_else(|| function.strip_prefix("rgb("))?.strip_suffix(')')?;
    let parts: Vec<&str> = args.split(',').map(str::trim).collect();
    let channel = |p: &str| p.parse::<u8>().ok();
    let rgb = [channel(parts.first()?)?, channel(parts.get(1)?)?, channel(parts.get(2)?)?];
    let hex: String = rgb.iter().map(|c| format!("{c:02x}")).collect();
    match parts.get(3) {
        None if parts.len() == 3 => Some(format!("#{hex}")),
        Some(alpha) if parts.len() == 4 => {
            let alpha = alpha.parse::<f64>().ok().filter(|a| (0.0..=1.0).contains(a))?;
            Some(if alpha == 0.0 {
                "transparent".to_owned()
            } else {
                format!("#{hex}{:02x}", (alpha * 255.0).round() as u8)
            })
        }
        _ => None,
    }
}

/// `GET https://api.example/orders: 404`, or `: no response` for status 0.
pub fn failed_request(r: &FailedRequest) -> String {
    format!("{} {}: {}", one_line(&r.method, 20), one_line(&r.url, 300), r.status_text())
}

fn indent(text: &str, prefix: &str) -> String {
    text.lines().map(|l| format!("{prefix}{l}")).collect::<Vec<_>>().join("\n")
}

fn one_line(text: &str, max_chars: usize) -> String {
    let joined = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if joined.chars().count() > max_chars {
        joined.chars().take(max_chars).collect::<String>() + "…"
    } else {
        joined
    }
}

/// What `shot` says it attached.
pub fn shot_text(out: &AttachChangeShotOutput, kind: AttachmentKind, item: &str) -> String {
    format!(
        "Attached {} \"{}\" to #{} (key {}).",
        kind.as_str(),
        out.message.body,
        item.trim().trim_start_matches('#'),
        out.key
    )
}

/// What `done` says about the completed item: its commit, branch and whether it is live.
pub fn done_text(c: &Change) -> String {
    let commit = c.head_commit.as_deref().map(|s| format!(" in {}", short_sha(s))).unwrap_or_default();
    let branch = c.branch.as_deref().map(|b| format!(" on {b}")).unwrap_or_default();
    let live = match c.live {
        Some(true) => " It is live on its stage.",
        Some(false) => " It goes live when the stage deploys a build that contains it.",
        None => "",
    };
    format!("#{} is done{commit}{branch}.{live}", c.short_id)
}

#[cfg(test)]
mod tests;

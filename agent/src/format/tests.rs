//! Unit tests of what the agent CLI prints: items and threads, stats, durations and
//! local times, styles and failed requests, why nothing was claimed, and shell quoting.

use redline_protocol::{Attachment, Capture, Element, ElementStyles, FailedRequest, Rect, Viewport};

use super::*;
use crate::rules::tests::{NOW, change, group};

#[test]
fn durations_read_in_their_largest_units() {
    for (ms, shown) in [
        (0, "0s"),
        (59_999, "59s"),
        (60_000, "1m"),
        (3_599_000, "59m"),
        (3_600_000, "1h"),
        (15_000_000, "4h10m"),
        (86_400_000, "1d"),
        (273_600_000, "3d4h"),
    ] {
        assert_eq!(duration(ms), shown, "{ms}");
    }
}

#[test]
fn stats_are_a_table_of_the_project_then_agents_then_filers() {
    let minutes = |count, median: u64, p90: u64| DurationStats {
        count,
        median_ms: Some(median * 60_000),
        p90_ms: Some(p90 * 60_000),
    };
    let total = LoopStats {
        filed: 5,
        done: 4,
        dismissed: 1,
        verified: 3,
        still_wrong: 1,
        still_wrong_rate: Some(1.0 / 3.0),
        questions_per_item: Some(0.6),
        to_done: minutes(4, 30, 240),
        to_verified: minutes(3, 120, 300),
        ..Default::default()
    };
    let agent = LoopStats {
        name: Some("agent-\u{1b}[31mb".into()),
        filed: 1,
        done: 1,
        to_done: minutes(1, 60, 60),
        ..Default::default()
    };
    let out = GetStatsOutput { since: NOW, total, agents: vec![agent], filers: vec![] };
    // The escape character a name may carry is not printed.
    assert_eq!(
        stats(&out, 30),
        "Items filed in the last 30 days (since 2026-11-29); times are median / 90th percentile.
               FILED  DONE  DISMISSED  VERIFIED  STILL WRONG  QUESTIONS/ITEM   TO DONE  TO VERIFIED
all items          5     4          1         3      1 (33%)            0.60  30m / 4h      2h / 5h
by agent:
  agent-[31mb      1     1          0         0            0               -   1h / 1h            -"
    );
}

const UTC: LocalTime<'static> = LocalTime { offset: &|_| 0 };

#[test]
fn formats_local_hh_mm() {
    // NOW is 2026-11-29T17:35:27Z.
    assert_eq!(hhmm(NOW, 0), "17:35");
    assert_eq!(hhmm(NOW, 3600), "18:35");
    assert_eq!(hhmm(NOW, 7 * 3600), "00:35");
    assert_eq!(hhmm(NOW, -18 * 3600), "23:35");
    assert_eq!(hhmm(NOW, 5 * 3600 + 1800), "23:05");
    let plus2 = LocalTime { offset: &|_| 7200 };
    assert_eq!(plus2.hhmm(NOW.plus_minutes(30)), "20:05");
}

#[test]
fn explains_why_nothing_was_claimed() {
    let item = |short: &str, reason, at: Option<Timestamp>, by: Option<&str>| NotClaimableItem {
        change_id: format!("id-{short}"),
        short_id: Some(short.into()),
        reason,
        claimable_at: at,
        claimed_by: by.map(Into::into),
    };
    let items = [
        item("3", NotClaimableReason::Held, Some(NOW.plus_minutes(1)), None),
        item("4", NotClaimableReason::Leased, Some(NOW.plus_minutes(30)), Some("agent-b")),
        item("5", NotClaimableReason::Leased, None, Some("agent-b")),
        item("6", NotClaimableReason::Done, None, None),
        item("7", NotClaimableReason::Dismissed, None, None),
        NotClaimableItem { short_id: None, ..item("x", NotClaimableReason::NotFound, None, None) },
    ];
    let plus1 = LocalTime { offset: &|_| 3600 };
    let text = explain_not_claimable(&items, "agent a", &plus1);
    assert_eq!(
        text,
        "Nothing was claimed:\n\
             \x20 #3 is held: its filer is still adding to the batch; claimable at 18:36\n\
             \x20 #4 is inside another group's lease (claimed by agent-b); claimable at 19:05\n\
             \x20 #5 is in a conversation of another group (claimed by agent-b): its claimant may renew it\n\
             \x20 #6 is done\n\
             \x20 #7 was dismissed\n\
             \x20 id-x was not found in this project\n\
             Wait for claimable work instead: redline wait --claim --claimed-by 'agent a'"
    );
    let evil = [item("8", NotClaimableReason::Leased, None, Some("b\u{1b}[2J\u{1b}]0;x\u{7}"))];
    let text = explain_not_claimable(&evil, "a\u{1b}[31m", &plus1);
    assert!(text.contains("(claimed by b[2J]0;x)"), "{text}");
    assert!(!text.contains(['\u{1b}', '\u{7}']), "{text:?}");
}

#[test]
fn availability_reads_well() {
    let mut c = change(1);
    assert_eq!(availability(&c, None, NOW, &UTC), "claimable now");
    c.held = true;
    c.held_until = Some(NOW.plus_seconds(60));
    assert_eq!(availability(&c, None, NOW, &UTC), "held by its filer, claimable at 17:36");
    c.held = false;
    c.status = ChangeStatus::Claimed;
    let g = group("g", "agent-b", NOW.plus_minutes(30));
    assert_eq!(availability(&c, Some(&g), NOW, &UTC), "claimed by agent-b until 18:05");
    let lapsed = group("g", "agent-b", NOW);
    assert_eq!(availability(&c, Some(&lapsed), NOW, &UTC), "claimable now");
    c.status = ChangeStatus::Done;
    c.head_commit = Some("0123456789abcdef".into());
    c.live = Some(true);
    assert_eq!(availability(&c, Some(&g), NOW, &UTC), "done in 0123456, live");
    assert_eq!(list_line(&c, &[], NOW, &UTC), "#1    done         Item 1  (done in 0123456, live)");
    c.verified_at = Some(NOW);
    c.verified_by = Some("Ann".into());
    assert_eq!(availability(&c, None, NOW, &UTC), "done in 0123456, live, verified by Ann");
    c.head_commit = None;
    assert_eq!(availability(&c, None, NOW, &UTC), "done, verified by Ann");
}

fn message(kind: AuthorKind, name: &str, body: &str) -> Message {
    Message {
        message_id: "m".into(),
        change_id: "c".into(),
        author_kind: kind,
        author_name: Some(name.into()),
        body: body.into(),
        attachments: vec![],
        chosen_option: None,
        created_at: NOW,
        message_type: None,
    }
}

fn styled() -> ElementStyles {
    ElementStyles {
        changed: [("color", "rgb(255, 0, 0)"), ("padding", "0px 12px"), ("display", "inline-flex")].into(),
        unchanged: [("font-size", "16px"), ("background-color", "rgba(0, 0, 0, 0)")].into(),
    }
}

#[test]
fn styles_print_what_changed_everything_or_nothing() {
    assert_eq!(
        styles_text(&styled(), CssDetail::Changed).as_deref(),
        Some("color: #ff0000; padding: 0 12px; display: inline-flex")
    );
    assert_eq!(
        styles_text(&styled(), CssDetail::Full).as_deref(),
        Some(
            "font-size: 16px; color: #ff0000; background-color: transparent; padding: 0 12px; display: inline-flex"
        )
    );
    assert_eq!(styles_text(&styled(), CssDetail::None), None);
    let plain = ElementStyles { changed: Default::default(), ..styled() };
    assert_eq!(
        styles_text(&plain, CssDetail::Changed).as_deref(),
        Some("none differ from its parent or its tag's default")
    );
}

#[test]
fn computed_values_are_said_shortly() {
    assert_eq!(compact_css("rgb(51, 51, 51)"), "#333333");
    assert_eq!(compact_css("rgba(0, 0, 0, 0)"), "transparent");
    assert_eq!(compact_css("rgba(255, 0, 0, 0.5)"), "#ff000080");
    assert_eq!(compact_css("0px 0px 16px"), "0 0 16px");
    assert_eq!(
        compact_css("linear-gradient(rgb(0, 0, 255), rgba(0, 0, 0, 0))"),
        "linear-gradient(#0000ff, transparent)"
    );
    assert_eq!(compact_css("\"Inter\", system-ui"), "\"Inter\", system-ui", "anything else as it is");
    assert_eq!(compact_css("rgb(300, 0, 0)"), "rgb(300, 0, 0)", "not a colour: left alone");
    assert_eq!(compact_css("rgb(1, 2"), "rgb(1, 2");
}

#[test]
fn failed_requests_say_method_address_and_status() {
    let r = FailedRequest { method: "POST".into(), url: "https://api.example/orders".into(), status: 500 };
    assert_eq!(failed_request(&r), "POST https://api.example/orders: 500");
    let refused = FailedRequest { method: "GET".into(), url: "http://127.0.0.1:1/x".into(), status: 0 };
    assert_eq!(failed_request(&refused), "GET http://127.0.0.1:1/x: no response");
}

#[test]
fn an_element_inside_frames_says_which_frame_its_page_is_in() {
    let mut c = change(8);
    c.capture = Some(Capture {
        stroke: vec![],
        bounds: None,
        elements: vec![
            Element {
                css_path: Some("#checkout |> iframe.card |> form > button".into()),
                tag: "button".into(),
                ..Default::default()
            },
            Element { css_path: Some("main > button".into()), tag: "button".into(), ..Default::default() },
        ],
        device_pixel_ratio: None,
        scroll: None,
        failed_requests: vec![],
    });
    let out = GetChangeOutput {
        change: c,
        thread: vec![],
        stage_url: None,
        shown_message_ids: None,
        older_cursor: None,
        message_count: None,
        refind: None,
    };
    let text = show(&out, None, &SavedImages::default(), CssDetail::Changed, NOW, &UTC, &[]);
    assert!(
            text.contains(
                "     css:       #checkout |> iframe.card |> form > button\n     in frame:  #checkout |> iframe.card (the rest of the path is in its page)\n"
            ),
            "{text}"
        );
    assert_eq!(text.matches("in frame:").count(), 1, "an element of the top page is in no frame");
}

#[test]
fn shows_an_item_with_everything_an_agent_needs() {
    let mut c = change(7);
    c.title = "Total is wrong".into();
    c.body = Some("It should include tax.".into());
    c.route = Some("/orders".into());
    c.git_sha = Some("a91c4e2ffff".into());
    c.status = ChangeStatus::InProgress;
    c.viewport = Some(Viewport { width: 1280.0, height: 720.0 });
    c.console_errors = vec!["TypeError: x is undefined".into()];
    c.capture = Some(Capture {
        stroke: vec![],
        bounds: None,
        elements: vec![Element {
            test_id: Some("orders.total".into()),
            component_test_id: Some("order-summary".into()),
            source_anchor: Some("src/routes/app.orders.tsx:42".into()),
            css_path: Some("main > div.total".into()),
            text: Some("Total:\n  42 €".into()),
            rect: Some(Rect { x: 12.4, y: 340.0, width: 240.0, height: 31.6 }),
            tag: "div".into(),
            styles: Some(styled()),
            ..Default::default()
        }],
        device_pixel_ratio: None,
        scroll: None,
        failed_requests: vec![FailedRequest {
            method: "GET".into(),
            url: "https://demo.example.com/api/tax".into(),
            status: 404,
        }],
    });
    c.screenshot_url = Some("http://x/blobs/k".into());
    let mut ask = message(AuthorKind::Agent, "agent-a", "Which tax?");
    ask.message_type = Some(MessageType::Question);
    ask.attachments = vec![
        Attachment { key: "opt-1".into(), label: "VAT".into(), kind: AttachmentKind::Option, url: None },
        Attachment { key: "opt-2".into(), label: "None".into(), kind: AttachmentKind::Option, url: None },
    ];
    let mut shot = message(AuthorKind::Agent, "agent-a", "VAT");
    shot.message_type = Some(MessageType::Shot);
    shot.attachments = vec![Attachment {
        key: "s1.png".into(),
        label: "VAT".into(),
        kind: AttachmentKind::Option,
        url: Some("http://x/blobs/s1.png".into()),
    }];
    let mut answer = message(AuthorKind::User, "Ann", "VAT: please");
    answer.message_type = Some(MessageType::Answer);
    answer.chosen_option = Some("opt-1".into());
    let out = GetChangeOutput {
        change: c.clone(),
        thread: vec![ask, shot, answer],
        stage_url: Some("https://demo.example.com/".into()),
        shown_message_ids: None,
        older_cursor: None,
        message_count: None,
        refind: None,
    };
    let saved = SavedImages {
        screenshot: Some("/cache/p-7-k.png".into()),
        attachments: [("s1.png".to_owned(), "/cache/p-7-s1.png".to_owned())].into(),
    };
    let moved = AnchorNow::At { file: "src/routes/app.orders.tsx".into(), line: 47, edited: false };
    let text = show(&out, None, &saved, CssDetail::Changed, NOW, &UTC, &[Some(moved)]);
    let expected = "\
#7 Total is wrong
Status:   in_progress (in a group)
Stage:    https://demo.example.com/
Route:    /orders  (https://demo.example.com/orders)
Filed:    by Ann at 17:35 on build a91c4e2
Viewport: 1280x720

It should include tax.

Question (answered): Which tax?
  1. VAT  (key opt-1)  image /cache/p-7-s1.png  <- chosen
  2. None  (key opt-2)
Answer:   Ann: VAT: please

Circled elements (1):
  1. <div>
     test id:   orders.total
     component: order-summary
     source:    src/routes/app.orders.tsx:42 as of a91c4e2 → now src/routes/app.orders.tsx:47
     css:       main > div.total
     text:      \"Total: 42 €\"
     rect:      x 12 y 340, 240x32 (CSS px in the viewport)
     styles:    color: #ff0000; padding: 0 12px; display: inline-flex

Console errors (1):
  - TypeError: x is undefined

Failed requests (1):
  - GET https://demo.example.com/api/tax: 404

Thread (3):
  [17:35] agent agent-a (question): Which tax?
      option opt-1: VAT  <- chosen
      option opt-2: None
  [17:35] agent agent-a (shot): VAT
      option s1.png: VAT  /cache/p-7-s1.png
  [17:35] Ann (answer): VAT: please
      chose: VAT

Screenshot: /cache/p-7-k.png
";
    assert_eq!(text, expected);
    assert_eq!(
        answer_lines(&c, &out.thread, &saved.attachments),
        "#7  Total is wrong\n    Question (answered): Which tax?\n      1. VAT  (key opt-1)  image /cache/p-7-s1.png  <- chosen\n      2. None  (key opt-2)\n    Answer:   Ann: VAT: please"
    );
}

#[test]
fn an_open_question_lists_its_choices_with_their_images() {
    let mut ask = message(AuthorKind::Agent, "agent-a", "Which header?");
    ask.message_type = Some(MessageType::Question);
    ask.attachments = ["Dark", "Light"]
        .iter()
        .enumerate()
        .map(|(i, l)| Attachment {
            key: format!("o{i}"),
            label: (*l).into(),
            kind: AttachmentKind::Option,
            url: None,
        })
        .collect();
    let thread = vec![ask];
    let text = question_block(ChangeStatus::NeedsAnswer, &thread, &BTreeMap::new());
    assert_eq!(
        text,
        "\nQuestion (open, waiting for the filer): Which header?\n  1. Dark  (key o0)\n  2. Light  (key o1)\n"
    );
    assert_eq!(question_block(ChangeStatus::InProgress, &[], &BTreeMap::new()), "");
}

#[test]
fn a_questions_text_option_and_its_image_are_one_choice_in_the_thread() {
    let mut ask = message(AuthorKind::Agent, "agent-a", "Which header?");
    ask.message_type = Some(MessageType::Question);
    let option = |key: &str, label: &str, url: Option<&str>| Attachment {
        key: key.into(),
        label: label.into(),
        kind: AttachmentKind::Option,
        url: url.map(str::to_owned),
    };
    ask.attachments = vec![
        option("o0", "Dark", None),
        option("o1", "Light", None),
        option("k-dark", "dark", Some("http://x/blobs/k-dark")),
    ];
    let images = BTreeMap::from([("k-dark".to_owned(), "/cache/k-dark.png".to_owned())]);
    let thread = vec![ask];
    let line = thread_message(&thread[0], &thread, &images, &UTC);
    assert_eq!(
        line.lines().skip(1).collect::<Vec<_>>(),
        ["      option o0: Dark  /cache/k-dark.png", "      option o1: Light"],
        "{line}"
    );
}

#[test]
fn terminal_control_characters_are_removed() {
    assert_eq!(terminal_safe("ok\x1b]0;pwned\x07 \x1b[2Jline\r\nnext\ttab"), "ok]0;pwned [2Jline\nnext\ttab");
    assert_eq!(terminal_safe("a\u{202e}b\u{2066}c\u{9b}d"), "abcd");
    assert_eq!(terminal_safe("Total: 42 €"), "Total: 42 €");
}

#[test]
fn quotes_shell_words() {
    assert_eq!(shell_word("agent-a"), "agent-a");
    assert_eq!(shell_word("it's me"), r"'it'\''s me'");
    assert_eq!(shell_word(""), "''");
}

#[test]
fn a_verdict_that_sent_an_item_back_is_shown_with_its_after_screenshot() {
    let mut c = change(3);
    c.title = "Total is red".into();
    c.completed_by = Some("agent-a".into());
    let mut note = message(AuthorKind::Agent, "agent-a", "Made it green");
    note.message_type = Some(MessageType::Note);
    let mut verdict = message(AuthorKind::User, "Ann", "Still wrong: still red on mobile");
    verdict.message_type = Some(MessageType::Verdict);
    verdict.attachments = vec![Attachment {
        key: "a1.png".into(),
        label: "after".into(),
        kind: AttachmentKind::Evidence,
        url: Some("http://x/blobs/a1.png".into()),
    }];
    let thread = vec![note, verdict];
    let saved = SavedImages {
        screenshot: None,
        attachments: [("a1.png".to_owned(), "/cache/p-3-a1.png".to_owned())].into(),
    };
    assert_eq!(
        sent_back_text(&[(c.clone(), thread.clone())], std::slice::from_ref(&saved)),
        "1 item sent back as still wrong, checked on the stage:\n  #3  Total is red\n    Ann: Still wrong: still \
             red on mobile\n    after-screenshot: /cache/p-3-a1.png"
    );
    let out = GetChangeOutput {
        change: c.clone(),
        thread: thread.clone(),
        stage_url: None,
        shown_message_ids: None,
        older_cursor: None,
        message_count: None,
        refind: None,
    };
    let text = show(&out, None, &saved, CssDetail::Changed, NOW, &UTC, &[]);
    assert!(
            text.contains(
                "\nSent back at 17:35 by Ann: Still wrong: still red on mobile\n  after-screenshot: /cache/p-3-a1.png\n"
            ),
            "{text}"
        );
    assert!(text.contains("  [17:35] Ann (verdict): Still wrong: still red on mobile\n      image a1.png: after  /cache/p-3-a1.png\n"), "{text}");
    // Once claimed again it is no longer "sent back"; the verdict stays in the thread.
    let mut claimed = out.clone();
    claimed.change.status = ChangeStatus::Claimed;
    let text = show(&claimed, None, &saved, CssDetail::Changed, NOW, &UTC, &[]);
    assert!(!text.contains("Sent back"), "{text}");
    assert!(text.contains("Ann (verdict): Still wrong"), "{text}");
}

#[test]
fn an_item_re_found_on_a_later_build_says_what_moved_and_what_is_gone() {
    use redline_protocol::{Refind, RefoundElement, Whereabouts};
    let out = GetChangeOutput {
        change: change(7),
        thread: vec![],
        stage_url: None,
        shown_message_ids: None,
        older_cursor: None,
        message_count: None,
        refind: Some(Refind {
            git_sha: "b2c3d4e5f6".into(),
            elements: vec![
                RefoundElement {
                    label: "orders.export".into(),
                    whereabouts: Whereabouts::Moved,
                    css_path: Some(".section-head > button".into()),
                },
                RefoundElement {
                    label: "orders.summary\u{1b}[2J".into(),
                    whereabouts: Whereabouts::Gone,
                    css_path: None,
                },
            ],
            found_by: Some("ana".into()),
            found_at: NOW,
        }),
    };
    let text = show(&out, None, &SavedImages::default(), CssDetail::Changed, NOW, &UTC, &[]);
    assert!(
        text.contains(
            "\nRe-found on build b2c3d4e by ana at 17:35 (moved): orders.export moved to `.section-head > button`; orders.summary[2J gone\n"
        ),
        "{text}"
    );
    let without = GetChangeOutput { refind: None, ..out };
    assert!(
        !show(&without, None, &SavedImages::default(), CssDetail::Changed, NOW, &UTC, &[])
            .contains("Re-found")
    );
}

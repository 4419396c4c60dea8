//! What a webhook request carries: the event and the item as it stood when the
//! delivery was first attempted, as our JSON or as a Slack message, and its signature.
//!
//! Requests are signed as the Standard Webhooks convention says (the headers
//! `webhook-id`, `webhook-timestamp` and `webhook-signature: v1,<base64 HMAC-SHA256 of
//! "{id}.{timestamp}.{body}">`, keyed by the base64 after `whsec_`), so receivers can
//! check them with a few lines or an existing library; docs/webhooks.md.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use hmac::{Hmac, KeyInit, Mac};
use redline_protocol::{AuthorKind, ChangeStatus, Timestamp};
use serde::Serialize;
use sha2::Sha256;

/// The prefix of a generated secret (Standard Webhooks' form).
pub const SECRET_PREFIX: &str = "whsec_";

/// The key a secret signs with: the bytes its base64 stands for when it has the
/// `whsec_` form, else its text as given (a secret a receiver made up).
pub fn signing_key(secret: &str) -> Vec<u8> {
    secret
        .strip_prefix(SECRET_PREFIX)
        .and_then(|b64| BASE64.decode(b64).ok())
        .unwrap_or_else(|| secret.as_bytes().to_vec())
}

/// The `webhook-signature` header's value for `body` sent as message `id` at `timestamp`
/// (Unix seconds).
pub fn signature(key: &[u8], id: &str, timestamp: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    mac.update(format!("{id}.{timestamp}.{body}").as_bytes());
    format!("v1,{}", BASE64.encode(mac.finalize().into_bytes()))
}

/// A new secret: 32 random bytes in the `whsec_` form.
pub fn new_secret() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the OS gives random bytes");
    format!("{SECRET_PREFIX}{}", BASE64.encode(bytes))
}

/// How a webhook's requests are written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// [`Occurrence`] as JSON.
    Json,
    /// A Slack message (`text` and `blocks`), for Slack's incoming webhooks.
    Slack,
}

impl Format {
    pub fn parse(s: &str) -> Option<Format> {
        match s {
            "json" => Some(Format::Json),
            "slack" => Some(Format::Slack),
            _ => None,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "json",
            Format::Slack => "slack",
        }
    }

    /// The request body for `occurrence`.
    pub fn body(self, occurrence: &Occurrence) -> String {
        let value = match self {
            Format::Json => serde_json::to_value(occurrence).expect("an occurrence serialises"),
            Format::Slack => slack_message(occurrence),
        };
        value.to_string()
    }
}

/// One event as a webhook tells it (the JSON format's body).
#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Occurrence {
    /// The event's `type`, as on the event stream (`asked`, `done`, …), or `ping` for
    /// `redline webhook test`.
    #[serde(rename = "type")]
    pub event_type: String,
    pub project_id: String,
    /// The event's number in the project's sequence (the event stream's `id`).
    pub seq: i64,
    pub occurred_at: Timestamp,
    /// The item as it stood when the delivery was first attempted.
    pub change: Option<ItemSummary>,
    /// The message the event is about: the question asked, the answer, the reply, the
    /// done note or the verdict.
    pub message: Option<MessageSummary>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ItemSummary {
    pub change_id: String,
    pub short_id: String,
    pub title: String,
    pub status: ChangeStatus,
    pub route: Option<String>,
    pub filed_by: Option<String>,
    pub completed_by: Option<String>,
    pub head_commit: Option<String>,
    pub commit_url: Option<String>,
    pub pull_request_url: Option<String>,
    pub live: Option<bool>,
    pub verified_by: Option<String>,
    /// The stage's page the item was filed on (the stage's URL and the item's route).
    pub page_url: Option<String>,
    /// A signed, expiring link to the screenshot.
    pub screenshot_url: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MessageSummary {
    pub author_kind: AuthorKind,
    pub author_name: Option<String>,
    /// What the message says (an answer with its chosen option, a verdict with its word).
    pub text: String,
    /// A question's choices.
    pub options: Vec<OptionSummary>,
}

#[derive(Clone, Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OptionSummary {
    pub label: String,
    pub image_url: Option<String>,
}

/// Slack's limit on a section's text (its Block Kit reference).
const SLACK_TEXT_MAX: usize = 3_000;

/// `occurrence` as a Slack message: a line saying what happened (also the
/// notification's `text`), the item's title linked to its page, the question's choices,
/// who filed it and where it stands, and the screenshot. What filers, agents and pages
/// wrote is escaped, so it can neither mention `@channel` nor forge a link.
pub fn slack_message(occurrence: &Occurrence) -> serde_json::Value {
    let headline = headline(occurrence);
    let mut blocks = Vec::new();
    let mut main = format!("*{}*", escape(&headline));
    if let Some(item) = &occurrence.change {
        let title = format!("#{} {}", item.short_id, item.title).replace('|', "¦");
        main.push('\n');
        main.push_str(&match &item.page_url {
            Some(url) => format!("<{}|{}>", link(url), escape(&title)),
            None => escape(&title),
        });
    }
    if let Some(message) = &occurrence.message {
        main.push_str("\n>");
        main.push_str(&escape(&message.text).replace('\n', "\n>"));
        for option in &message.options {
            main.push_str("\n• ");
            main.push_str(&escape(&option.label));
        }
    }
    blocks.push(section(&main));
    if let Some(item) = &occurrence.change {
        let mut facts = vec![format!("status: {}", item.status.as_str())];
        if let Some(by) = &item.filed_by {
            facts.push(format!("filed by {}", escape(by)));
        }
        if let Some(url) = item.pull_request_url.as_ref().or(item.commit_url.as_ref()) {
            let what = if item.pull_request_url.is_some() { "pull request" } else { "commit" };
            facts.push(format!("<{}|{what}>", link(url)));
        }
        blocks.push(serde_json::json!({
            "type": "context",
            "elements": [{ "type": "mrkdwn", "text": truncate(&facts.join(" · "), SLACK_TEXT_MAX) }],
        }));
        if let Some(url) = &item.screenshot_url {
            blocks.push(serde_json::json!({
                "type": "image",
                "image_url": url,
                "alt_text": truncate(&format!("Screenshot of #{}", item.short_id), 2_000),
            }));
        }
    }
    // The notification's text is mrkdwn too: names and titles in it are escaped as in
    // the blocks, so an agent named `<!channel>` mentions nobody.
    serde_json::json!({ "text": truncate(&escape(&headline), SLACK_TEXT_MAX), "blocks": blocks })
}

fn section(text: &str) -> serde_json::Value {
    serde_json::json!({ "type": "section", "text": { "type": "mrkdwn", "text": truncate(text, SLACK_TEXT_MAX) } })
}

/// What happened, in a line.
fn headline(o: &Occurrence) -> String {
    let item = o.change.as_ref();
    let n = item.map(|i| format!("#{}", i.short_id)).unwrap_or_default();
    let author = o.message.as_ref().and_then(|m| m.author_name.clone());
    let agent =
        author.clone().or_else(|| item.and_then(|i| i.completed_by.clone())).unwrap_or("The agent".into());
    let person = author.or_else(|| item.and_then(|i| i.filed_by.clone())).unwrap_or("Someone".into());
    match o.event_type.as_str() {
        "ping" => "Redline webhook test: this webhook works".to_owned(),
        "filed" => format!("{person} filed {n}"),
        "released" => format!("{n} went to the agent"),
        "claimed" => format!("{n} was claimed"),
        "asked" => format!("{agent} asks about {n}"),
        "answered" => format!("{person} answered about {n}"),
        "replied" => format!("{} replied on {n}", author_or(o, "Someone")),
        "shot" => format!("{} attached an image to {n}", author_or(o, "The agent")),
        "done" => format!("{agent} marked {n} done"),
        "status" if item.and_then(|i| i.live) == Some(true) => format!("{n} is live on the stage: check it"),
        "verified" => format!("{person} checked {n} on the stage"),
        "regressed" => format!("{n}'s verified fix is gone from the stage"),
        other => format!("{n}: {other}"),
    }
}

fn author_or(o: &Occurrence, or: &str) -> String {
    o.message.as_ref().and_then(|m| m.author_name.clone()).unwrap_or_else(|| or.to_owned())
}

/// Text as Slack's mrkdwn shows it literally: `&`, `<` and `>` escaped, which is all
/// Slack reads as control characters (mentions and links are `<…>`).
fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

/// A URL as the target of a Slack link `<url|text>`: escaped, and its `|` (which would
/// end the target early) percent-encoded.
fn link(url: &str) -> String {
    escape(url).replace('|', "%7C")
}

/// At most `max` characters, cut at a character boundary with an ellipsis.
fn truncate(text: &str, max: usize) -> String {
    match text.char_indices().nth(max - 1) {
        Some((at, _)) if text[at..].chars().count() > 1 => format!("{}…", &text[..at]),
        _ => text.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn asked() -> Occurrence {
        Occurrence {
            event_type: "asked".into(),
            project_id: "p".into(),
            seq: 7,
            occurred_at: Timestamp::from_unix_millis(1_700_000_000_000),
            change: Some(ItemSummary {
                change_id: "c".into(),
                short_id: "3".into(),
                title: "Total <!channel> & red".into(),
                status: ChangeStatus::NeedsAnswer,
                route: Some("/orders".into()),
                filed_by: Some("Ann".into()),
                completed_by: None,
                head_commit: None,
                commit_url: None,
                pull_request_url: None,
                live: None,
                verified_by: None,
                page_url: Some("https://stage.example/orders".into()),
                screenshot_url: Some("https://redline.example/blobs/k?exp=1&sig=2".into()),
            }),
            message: Some(MessageSummary {
                author_kind: AuthorKind::Agent,
                author_name: Some("agent-1".into()),
                text: "Which colour?".into(),
                options: vec![OptionSummary { label: "Dark".into(), image_url: None }],
            }),
        }
    }

    /// The signature a receiver computes with Standard Webhooks' published example
    /// (their test vector: this secret, id, timestamp and body give this signature).
    #[test]
    fn signatures_match_the_standard_webhooks_test_vector() {
        let key = signing_key("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw");
        let body = r#"{"test": 2432232314}"#;
        assert_eq!(
            signature(&key, "msg_p5jXN8AQM9LWM0D4loKWxJek", 1614265330, body),
            "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
        );
    }

    #[test]
    fn a_secret_without_the_prefix_signs_with_its_own_bytes() {
        assert_eq!(signing_key("plain words"), b"plain words");
        assert!(new_secret().starts_with(SECRET_PREFIX));
        assert_eq!(signing_key(&new_secret()).len(), 32);
    }

    #[test]
    fn slack_text_is_escaped_so_a_title_cannot_mention_the_channel() {
        let body = Format::Slack.body(&asked());
        assert!(!body.contains("<!channel>"), "{body}");
        assert!(body.contains("&lt;!channel&gt; &amp; red"), "{body}");
        assert!(body.contains("<https://stage.example/orders|#3 Total"), "{body}");
    }

    #[test]
    fn the_notification_text_escapes_names_as_the_blocks_do() {
        let mut o = asked();
        o.message.as_mut().unwrap().author_name = Some("<!channel> <https://evil.example|x>".into());
        let msg = slack_message(&o);
        let text = msg["text"].as_str().unwrap();
        assert_eq!(text, "&lt;!channel&gt; &lt;https://evil.example|x&gt; asks about #3");
        assert!(!msg.to_string().contains("<!channel>"), "{msg}");
    }

    #[test]
    fn long_texts_are_cut_to_slacks_limit() {
        let mut o = asked();
        o.message.as_mut().unwrap().text = "é".repeat(10_000);
        let msg = slack_message(&o);
        let text = msg["blocks"][0]["text"]["text"].as_str().unwrap();
        assert_eq!(text.chars().count(), SLACK_TEXT_MAX);
        assert!(text.ends_with('…'));
    }
}

//! Outgoing webhooks: a project's events sent to URLs its operator added (`redline
//! webhook add`), as signed JSON or Slack messages (`payload.rs`), by each server
//! process's sender (`sender.rs`), never to private addresses unless allowed
//! (`address.rs`).
//!
//! Delivery is durable and at least once: a trigger on `events` (migration 0017) writes
//! a `webhook_deliveries` row for each webhook that wants the event, in the same
//! transaction as the event itself, so an event committed is an event that will be sent,
//! whichever process or admin command wrote it, and however the server stops.

pub mod address;
pub mod payload;
pub mod sender;

use anyhow::{Context, bail};
use redline_protocol::{
    AuthorKind, ChangeEventType, ListWebhooks, ListWebhooksInput, ListWebhooksOutput, MessageType,
    THREAD_PAGE_MAX, Timestamp, Webhook, WebhookAttempt, answer_text, is_route, open_question, option_label,
};
use serde::Serialize;
use sqlx::Row;
use sqlx::any::AnyRow;

use self::payload::{Format, ItemSummary, MessageSummary, Occurrence, OptionSummary};
use self::sender::{Addresses, Attempt};
use crate::admin::find_project;
use crate::error::ApiError;
use crate::ops::{Ctx, Op};
use crate::queue::{find_item, read_thread_latest};
use crate::services::Services;
use crate::store::Store;

/// The `webhook-id` (the idempotency key) of the delivery of event `seq` to a webhook:
/// the same for every attempt.
pub fn pending_delivery_id(webhook_id: &str, seq: i64) -> String {
    format!("msg_{}_{seq}", webhook_id.replace('-', ""))
}

/// The event types a webhook is for, from names as `--events` takes them: the event
/// stream's types, `live` for `status` (an item's fix became live or stopped being), or
/// `all`.
pub fn parse_events(names: &[String]) -> anyhow::Result<Vec<ChangeEventType>> {
    let mut events = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let found: Vec<ChangeEventType> = match name {
            "all" => ChangeEventType::ALL.to_vec(),
            "live" => vec![ChangeEventType::Status],
            _ => match ChangeEventType::ALL.into_iter().find(|t| t.as_str() == name) {
                Some(t) => vec![t],
                None => {
                    let known: Vec<&str> = ChangeEventType::ALL.iter().map(|t| t.as_str()).collect();
                    bail!("unknown event {name:?} (expected all, live or one of {})", known.join(", "))
                }
            },
        };
        for t in found {
            if !events.contains(&t) {
                events.push(t);
            }
        }
    }
    if events.is_empty() {
        bail!("--events names no event");
    }
    Ok(events)
}

/// What `webhook add` is given.
pub struct WebhookSpec<'a> {
    pub project: &'a str,
    pub url: &'a str,
    pub events: Vec<ChangeEventType>,
    pub format: Format,
    /// The signing secret; `None` makes one.
    pub secret: Option<String>,
}

/// A webhook as the admin commands show it to the operator.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct WebhookInfo {
    pub webhook_id: String,
    pub project_id: String,
    pub url: String,
    pub events: Vec<String>,
    pub format: String,
    pub created_at: Timestamp,
    pub pending: u64,
    pub failed: u64,
    /// Pending deliveries dropped, the oldest first, to keep the backlog within
    /// [`sender::BACKLOG_MAX`].
    pub dropped: u64,
    /// When the oldest pending delivery is tried next (after a failure: its back-off,
    /// or the receiver's `Retry-After` when longer).
    pub next_attempt_at: Option<Timestamp>,
    pub last_attempt: Option<WebhookAttempt>,
    /// The error of the latest delivery given up on.
    pub last_failure: Option<String>,
    /// Shown once, by `webhook add` when it made the secret.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// Checks a webhook's URL: `http` or `https`, a host, and (unless private addresses are
/// allowed) an address that resolves to public ones only.
async fn check_url(url: &str, addresses: Addresses) -> anyhow::Result<()> {
    let parsed = reqwest::Url::parse(url).with_context(|| format!("{url:?} is not a URL"))?;
    if !matches!(parsed.scheme(), "http" | "https") {
        bail!("a webhook URL is http or https, not {}", parsed.scheme());
    }
    if url.len() > redline_protocol::URL_MAX_CHARS {
        bail!("a webhook URL is at most {} characters", redline_protocol::URL_MAX_CHARS);
    }
    addresses.check(&parsed).await.map_err(anyhow::Error::msg)
}

/// `webhook add`.
pub async fn add_webhook(
    store: &Store,
    spec: WebhookSpec<'_>,
    addresses: Addresses,
    now: Timestamp,
) -> anyhow::Result<WebhookInfo> {
    let project =
        find_project(store, spec.project).await?.with_context(|| format!("no project {:?}", spec.project))?;
    check_url(spec.url, addresses).await?;
    let made = spec.secret.is_none();
    let secret = spec.secret.unwrap_or_else(payload::new_secret);
    let events: Vec<&str> = spec.events.iter().map(|t| t.as_str()).collect();
    let webhook_id = uuid::Uuid::now_v7().to_string();
    sqlx::query(
        "INSERT INTO webhooks (webhook_id, project_id, url, events, format, secret, created_at) \
         VALUES ($1, $2, $3, $4, $5, $6, $7)",
    )
    .bind(&webhook_id)
    .bind(&project.project_id)
    .bind(spec.url)
    .bind(format!(",{},", events.join(",")))
    .bind(spec.format.as_str())
    .bind(&secret)
    .bind(now.unix_millis())
    .execute(store.pool())
    .await?;
    let mut info = find_webhook(store, &webhook_id).await?;
    info.secret = made.then_some(secret);
    Ok(info)
}

const WEBHOOK_SELECT: &str = "SELECT w.webhook_id, w.project_id, w.url, w.events, w.format, w.created_at, \
     w.last_attempt_at, w.last_status, w.last_error, w.dropped, \
     (SELECT d.next_attempt_at FROM webhook_deliveries d WHERE d.state = 'pending' AND d.webhook_id = w.webhook_id \
      ORDER BY d.seq LIMIT 1) AS next_attempt_at, \
     (SELECT COUNT(*) FROM webhook_deliveries d WHERE d.webhook_id = w.webhook_id AND d.state = 'pending') AS pending, \
     (SELECT COUNT(*) FROM webhook_deliveries d WHERE d.webhook_id = w.webhook_id AND d.state = 'failed') AS failed, \
     (SELECT d.last_error FROM webhook_deliveries d WHERE d.webhook_id = w.webhook_id AND d.state = 'failed' \
      ORDER BY d.seq DESC LIMIT 1) AS last_failure \
     FROM webhooks w";

fn info_from_row(row: &AnyRow) -> Result<WebhookInfo, sqlx::Error> {
    let events: String = row.try_get("events")?;
    let last_attempt = match row.try_get::<Option<i64>, _>("last_attempt_at")? {
        Some(at) => {
            let error: Option<String> = row.try_get("last_error")?;
            Some(WebhookAttempt {
                at: Timestamp::from_unix_millis(at),
                ok: error.is_none(),
                http_status: row
                    .try_get::<Option<i32>, _>("last_status")?
                    .and_then(|s| u16::try_from(s).ok()),
                error,
            })
        }
        None => None,
    };
    Ok(WebhookInfo {
        webhook_id: row.try_get("webhook_id")?,
        project_id: row.try_get("project_id")?,
        url: row.try_get("url")?,
        events: events.split(',').filter(|e| !e.is_empty()).map(str::to_owned).collect(),
        format: row.try_get("format")?,
        created_at: Timestamp::from_unix_millis(row.try_get("created_at")?),
        pending: row.try_get::<i64, _>("pending")? as u64,
        failed: row.try_get::<i64, _>("failed")? as u64,
        dropped: row.try_get::<i64, _>("dropped")? as u64,
        next_attempt_at: row.try_get::<Option<i64>, _>("next_attempt_at")?.map(Timestamp::from_unix_millis),
        last_attempt,
        last_failure: row.try_get("last_failure")?,
        secret: None,
    })
}

async fn find_webhook(store: &Store, webhook_id: &str) -> anyhow::Result<WebhookInfo> {
    let row = sqlx::query(sqlx::AssertSqlSafe(format!("{WEBHOOK_SELECT} WHERE w.webhook_id = $1")))
        .bind(webhook_id)
        .fetch_optional(store.pool())
        .await?
        .with_context(|| format!("no webhook {webhook_id:?} (see `redline webhook list`)"))?;
    Ok(info_from_row(&row)?)
}

async fn webhooks_of(store: &Store, project_id: &str) -> Result<Vec<WebhookInfo>, sqlx::Error> {
    let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
        "{WEBHOOK_SELECT} WHERE w.project_id = $1 ORDER BY w.created_at, w.webhook_id"
    )))
    .bind(project_id)
    .fetch_all(store.pool())
    .await?;
    rows.iter().map(info_from_row).collect()
}

/// `webhook list`: every webhook, or a project's.
pub async fn list_webhooks(store: &Store, project: Option<&str>) -> anyhow::Result<Vec<WebhookInfo>> {
    match project {
        Some(p) => {
            let project = find_project(store, p).await?.with_context(|| format!("no project {p:?}"))?;
            Ok(webhooks_of(store, &project.project_id).await?)
        }
        None => {
            let rows = sqlx::query(sqlx::AssertSqlSafe(format!(
                "{WEBHOOK_SELECT} ORDER BY w.created_at, w.webhook_id"
            )))
            .fetch_all(store.pool())
            .await?;
            Ok(rows.iter().map(info_from_row).collect::<Result<_, _>>()?)
        }
    }
}

/// `webhook remove`: the webhook and what it had still to send.
pub async fn remove_webhook(store: &Store, webhook_id: &str) -> anyhow::Result<WebhookInfo> {
    let info = find_webhook(store, webhook_id).await?;
    let mut tx = store.begin_write().await?;
    sqlx::query("DELETE FROM webhook_deliveries WHERE webhook_id = $1")
        .bind(webhook_id)
        .execute(&mut *tx)
        .await?;
    sqlx::query("DELETE FROM webhooks WHERE webhook_id = $1").bind(webhook_id).execute(&mut *tx).await?;
    tx.commit().await?;
    Ok(info)
}

/// `webhook test`: sends a `ping` now, signed as every delivery, and says how it went.
pub async fn test_webhook(
    store: &Store,
    webhook_id: &str,
    addresses: Addresses,
    now: Timestamp,
) -> anyhow::Result<Attempt> {
    let row = sqlx::query("SELECT project_id, url, format, secret FROM webhooks WHERE webhook_id = $1")
        .bind(webhook_id)
        .fetch_optional(store.pool())
        .await?
        .with_context(|| format!("no webhook {webhook_id:?} (see `redline webhook list`)"))?;
    let ping = Occurrence {
        event_type: "ping".into(),
        project_id: row.try_get("project_id")?,
        seq: 0,
        occurred_at: now,
        change: None,
        message: None,
    };
    let format = Format::parse(&row.try_get::<String, _>("format")?).unwrap_or(Format::Json);
    let id = format!("msg_ping_{}", uuid::Uuid::now_v7().simple());
    let url: String = row.try_get("url")?;
    let secret: String = row.try_get("secret")?;
    Ok(sender::post(&sender::client(addresses), addresses, &url, &secret, &id, format.body(&ping), now).await)
}

/// A stored event, as a delivery names it.
pub struct EventRef<'a> {
    pub project_id: &'a str,
    pub event_type: &'a str,
    pub seq: i64,
    pub change_id: &'a str,
    pub occurred_at: Timestamp,
}

/// `event` as a webhook tells it: the item as it stands at `now` and the message the
/// event is about.
async fn occurrence(
    state: &Services,
    base_url: &str,
    event: EventRef<'_>,
    now: Timestamp,
) -> Result<Occurrence, ApiError> {
    let EventRef { project_id, event_type, seq, change_id, occurred_at } = event;
    let mut conn = state.store.pool().acquire().await?;
    let item = find_item(&mut conn, project_id, change_id, now).await?.change;
    // The message an event is about is among the thread's latest: a page of them is
    // read, not a thread of any length.
    let thread = read_thread_latest(&mut conn, &item.change_id, i64::from(THREAD_PAGE_MAX)).await?;
    let stage_url: Option<String> = sqlx::query("SELECT url FROM stages WHERE stage_id = $1")
        .bind(&item.stage_id)
        .fetch_one(&mut *conn)
        .await?
        .try_get("url")?;
    let link = |key: &str| state.blobs.url(base_url, key, now);
    let latest = |role: MessageType| thread.iter().rev().find(|m| m.role() == role);
    let summary = |m: &redline_protocol::Message, text: String, options: Vec<OptionSummary>| MessageSummary {
        author_kind: m.author_kind,
        author_name: m.author_name.clone(),
        text,
        options,
    };
    let message = match event_type {
        "asked" => latest(MessageType::Question).map(|m| {
            let options = match open_question(item.status, &thread) {
                Some(open) if std::ptr::eq(open.message, m) => open
                    .choices
                    .iter()
                    .map(|c| OptionSummary {
                        label: c.label.clone(),
                        image_url: c.image_key.as_deref().map(link),
                    })
                    .collect(),
                _ => m.options().map(|o| OptionSummary { label: o.label.clone(), image_url: None }).collect(),
            };
            summary(m, m.body.clone(), options)
        }),
        "answered" => latest(MessageType::Answer).map(|m| {
            let chosen = m.chosen_option.as_deref().and_then(|k| option_label(&thread, k));
            summary(m, answer_text(&m.body, chosen), vec![])
        }),
        "replied" => latest(MessageType::Reply).map(|m| summary(m, m.body.clone(), vec![])),
        "done" => latest(MessageType::Note)
            .filter(|m| m.author_kind == AuthorKind::Agent)
            .map(|m| summary(m, m.body.clone(), vec![])),
        // A verdict's body already says the verdict ("Still wrong: …").
        "verified" | "regressed" => latest(MessageType::Verdict).map(|m| summary(m, m.body.clone(), vec![])),
        _ => None,
    };
    // A route stored before routes were checked is left out rather than followed.
    let route = item.route.as_deref().filter(|r| is_route(r));
    let page_url = match (&stage_url, route) {
        (Some(stage), Some(route)) => {
            reqwest::Url::parse(stage).and_then(|u| u.join(route)).ok().map(String::from)
        }
        (Some(stage), None) => Some(stage.clone()),
        _ => None,
    };
    Ok(Occurrence {
        event_type: event_type.to_owned(),
        project_id: project_id.to_owned(),
        seq,
        occurred_at,
        message,
        change: Some(ItemSummary {
            screenshot_url: item.screenshot_key.as_deref().map(link),
            change_id: item.change_id,
            short_id: item.short_id,
            title: item.title,
            status: item.status,
            route: item.route,
            filed_by: item.filed_by,
            completed_by: item.completed_by,
            head_commit: item.head_commit,
            commit_url: item.commit_url,
            pull_request_url: item.pull_request_url,
            live: item.live,
            verified_by: item.verified_by,
            page_url,
        }),
    })
}

impl Op for ListWebhooks {
    type Answer = ListWebhooksOutput;

    async fn run(ctx: &Ctx<'_>, input: ListWebhooksInput) -> Result<Self::Answer, ApiError> {
        ctx.who.require_project(&input.project_id)?;
        let webhooks = webhooks_of(&ctx.state.store, &input.project_id)
            .await?
            .into_iter()
            .map(|w| Webhook {
                target: target_of(&w.url),
                webhook_id: w.webhook_id,
                events: w.events,
                format: w.format,
                created_at: w.created_at,
                pending: w.pending,
                failed: w.failed,
                last_attempt: w.last_attempt,
            })
            .collect();
        Ok(ListWebhooksOutput { webhooks })
    }
}

/// What `listWebhooks` shows of a URL: its scheme, host and port, never its path or
/// query, which for Slack's and most receivers' URLs hold the secret.
fn target_of(url: &str) -> String {
    reqwest::Url::parse(url).map(|u| u.origin().ascii_serialization()).unwrap_or_default()
}

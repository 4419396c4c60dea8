//! Sending deliveries. Every server process runs one sender; a webhook's deliveries are
//! sent by one process at a time, the one holding its lease (`webhooks.sender`,
//! `sender_until`), taken with a conditional update that only one process can win, so
//! several processes on one Postgres database send each event once. The holder sends
//! the webhook's oldest pending delivery, then the next: a webhook gets its events in
//! order, and one that fails is retried with exponential back-off before anything
//! after it is sent. A process that dies mid-send leaves its lease to lapse
//! ([`LEASE`]); another then sends the delivery again, under the same `webhook-id`.

use std::collections::HashSet;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures_util::StreamExt;
use redline_protocol::Timestamp;
use sqlx::Row;

use super::address::refusal;
use super::payload::{Format, signature, signing_key};
use super::{EventRef, occurrence, pending_delivery_id};
use crate::error::ApiError;
use crate::filter::{Bind, Filter, placeholders};
use crate::services::Services;

/// How long one request may take, connecting included.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a lease lasts: longer than a request may take, so a living holder renews it
/// before it lapses, and short, so a dead holder's deliveries wait little.
const LEASE: Duration = Duration::from_secs(15);
/// How often the sender looks for deliveries nobody woke it for: retries coming due,
/// leases of processes that died.
const POLL: Duration = Duration::from_secs(1);
/// How much of a receiver's answer is read, for the error shown when it is not 2xx.
const ANSWER_READ_MAX: usize = 1024;
/// The most webhooks one process sends to at once.
const SENDING_MAX: usize = 16;
/// Delivered deliveries are kept this long (for `webhook list`), failed ones four times
/// as long.
const KEEP_DELIVERED_MS: i64 = 7 * 24 * 3_600_000;
/// The most deliveries a webhook keeps pending: past it the oldest are dropped, and
/// counted (`webhooks.dropped`, `redline webhook list`), so a receiver down for a day
/// under a busy project costs a bounded backlog.
pub const BACKLOG_MAX: i64 = 1_000;
/// The longest wait a receiver's `Retry-After` is honoured for.
const RETRY_AFTER_MAX_MS: i64 = 3_600_000;

/// What to do after an attempt that failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AfterFailure {
    /// Try again at this time (Unix ms).
    RetryAt(i64),
    /// A day has passed since the event: mark the delivery failed.
    GiveUp,
}

/// Retries stop a day after the event.
pub const GIVE_UP_AFTER_MS: i64 = 24 * 3_600_000;
/// The first retry waits a second; each next one twice as long, at most a quarter hour.
const FIRST_RETRY_MS: i64 = 1_000;
const LONGEST_RETRY_MS: i64 = 15 * 60_000;

/// When to try again a delivery of an event at `created_at` whose `attempts`-th
/// attempt just failed at `now` (all Unix ms).
pub fn after_failure(created_at: i64, attempts: u32, now: i64) -> AfterFailure {
    if now - created_at >= GIVE_UP_AFTER_MS {
        return AfterFailure::GiveUp;
    }
    let wait = FIRST_RETRY_MS.saturating_mul(1 << attempts.saturating_sub(1).min(30)).min(LONGEST_RETRY_MS);
    AfterFailure::RetryAt(now + wait)
}

/// Whether a webhook may be sent to private and loopback addresses (`serve
/// --allow-private-webhooks`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Addresses {
    PublicOnly,
    AllowPrivate,
}

impl Addresses {
    fn allows(self, ip: IpAddr) -> Result<(), String> {
        match (self, refusal(ip)) {
            (Addresses::PublicOnly, Some(why)) => Err(format!(
                "refused: {ip} is {why} (`--allow-private-webhooks` lets the server send to such addresses)"
            )),
            _ => Ok(()),
        }
    }

    /// Checks every address `url`'s host stands for; the error says which is refused.
    pub async fn check(self, url: &reqwest::Url) -> Result<(), String> {
        let host = match self.check_literal(url)? {
            Some(name) => name,
            None => return Ok(()),
        };
        let addrs = tokio::net::lookup_host((host, url.port_or_known_default().unwrap_or(443)))
            .await
            .map_err(|e| format!("{host} does not resolve: {e}"))?;
        addrs.into_iter().try_for_each(|a| self.allows(a.ip()))
    }

    /// Checks a host given as an address (which the client's [`Resolver`] never sees);
    /// answers the host's name when it is one, for the resolver to check.
    fn check_literal(self, url: &reqwest::Url) -> Result<Option<&str>, String> {
        match url.host() {
            Some(url::Host::Ipv4(ip)) => self.allows(ip.into()).map(|()| None),
            Some(url::Host::Ipv6(ip)) => self.allows(ip.into()).map(|()| None),
            Some(url::Host::Domain(name)) => Ok(Some(name)),
            None => Err("the URL names no host".into()),
        }
    }
}

/// Resolves names for the webhook client, keeping only the addresses [`Addresses`]
/// allows, so the request goes where the check looked even if the name's answer changes.
struct Resolver(Addresses);

impl reqwest::dns::Resolve for Resolver {
    fn resolve(&self, name: reqwest::dns::Name) -> reqwest::dns::Resolving {
        let addresses = self.0;
        Box::pin(async move {
            let found: Vec<SocketAddr> = tokio::net::lookup_host((name.as_str(), 0)).await?.collect();
            let allowed: Vec<SocketAddr> =
                found.iter().copied().filter(|a| addresses.allows(a.ip()).is_ok()).collect();
            if allowed.is_empty() {
                let why =
                    found.first().map_or("no address".to_owned(), |a| addresses.allows(a.ip()).unwrap_err());
                return Err(std::io::Error::other(why).into());
            }
            Ok(Box::new(allowed.into_iter()) as reqwest::dns::Addrs)
        })
    }
}

/// The client webhooks are sent with: no redirects followed (a receiver names its
/// final address), no proxy from the environment, bounded in time.
pub fn client(addresses: Addresses) -> reqwest::Client {
    let _ = rustls::crypto::ring::default_provider().install_default();
    reqwest::Client::builder()
        .dns_resolver(Arc::new(Resolver(addresses)))
        .redirect(reqwest::redirect::Policy::none())
        .no_proxy()
        .timeout(REQUEST_TIMEOUT)
        .connect_timeout(REQUEST_TIMEOUT / 2)
        .user_agent(concat!("Redline-Webhooks/", env!("CARGO_PKG_VERSION")))
        .build()
        .expect("the webhook client's settings are valid")
}

/// How one attempt went.
#[derive(Debug)]
pub struct Attempt {
    pub status: Option<u16>,
    /// `None` when the receiver answered 2xx.
    pub error: Option<String>,
    /// How long the receiver asked to be left alone (its `Retry-After`), in ms.
    pub retry_after_ms: Option<i64>,
}

/// Sends `body` to `url`, signed with `secret` as message `id` at `now`.
pub async fn post(
    client: &reqwest::Client,
    addresses: Addresses,
    url: &str,
    secret: &str,
    id: &str,
    body: String,
    now: Timestamp,
) -> Attempt {
    let failed = |error: String| Attempt { status: None, error: Some(error), retry_after_ms: None };
    let url = match reqwest::Url::parse(url) {
        Ok(url) => url,
        Err(e) => return failed(format!("the URL is not valid: {e}")),
    };
    // A name is checked by the client's resolver as it connects (one lookup, and the
    // request goes to the address checked); only an address given as such is checked here.
    if let Err(why) = addresses.check_literal(&url) {
        return failed(why);
    }
    let timestamp = now.unix_millis() / 1000;
    let request = client
        .post(url)
        .header("content-type", "application/json")
        .header("webhook-id", id)
        .header("webhook-timestamp", timestamp.to_string())
        .header("webhook-signature", signature(&signing_key(secret), id, timestamp, &body))
        .header("idempotency-key", id)
        .body(body);
    // The URL is left out of errors: a receiver's path is often its secret (Slack's).
    let response = match request.send().await {
        Ok(response) => response,
        Err(e) => return failed(error_chain(&e.without_url())),
    };
    let status = response.status();
    if status.is_success() {
        return Attempt { status: Some(status.as_u16()), error: None, retry_after_ms: None };
    }
    let retry_after_ms = response
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| retry_after_ms(v, now));
    let mut answer = Vec::new();
    let mut chunks = response.bytes_stream();
    while answer.len() < ANSWER_READ_MAX {
        match chunks.next().await {
            Some(Ok(chunk)) => answer.extend_from_slice(&chunk),
            _ => break,
        }
    }
    answer.truncate(ANSWER_READ_MAX);
    let said: String =
        String::from_utf8_lossy(&answer).chars().filter(|c| !c.is_control()).take(200).collect();
    let what = if status.is_redirection() { "redirected (give the final URL)" } else { "answered" };
    Attempt {
        status: Some(status.as_u16()),
        error: Some(format!("{what} {status}: {}", said.trim()).trim().to_owned()),
        retry_after_ms,
    }
}

/// A `Retry-After` value (seconds, or an HTTP date) as the ms to wait from `now`, at
/// most [`RETRY_AFTER_MAX_MS`]; `None` when it is neither.
fn retry_after_ms(value: &str, now: Timestamp) -> Option<i64> {
    let value = value.trim();
    let ms = match value.parse::<u32>() {
        Ok(seconds) => i64::from(seconds) * 1_000,
        Err(_) => http_date_ms(value)? - now.unix_millis(),
    };
    Some(ms.clamp(0, RETRY_AFTER_MAX_MS))
}

/// An HTTP date in its preferred form (`Sun, 06 Nov 1994 08:49:37 GMT`, RFC 9110) as
/// Unix ms.
fn http_date_ms(value: &str) -> Option<i64> {
    let (_, rest) = value.split_once(", ")?;
    let parts: Vec<&str> = rest.split(' ').collect();
    let [day, month, year, time, "GMT"] = parts.as_slice() else { return None };
    const MONTHS: [&str; 12] =
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
    let month = MONTHS.iter().position(|m| m == month)? as i64 + 1;
    let (day, year): (i64, i64) = (day.parse().ok()?, year.parse().ok()?);
    let hms: Vec<i64> = time.split(':').map(|n| n.parse().ok()).collect::<Option<_>>()?;
    let [h, m, s] = hms.as_slice() else { return None };
    // Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's days_from_civil).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    Some(((days * 24 + h) * 60 + m) * 60_000 + s * 1_000)
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// One process's sender.
struct Sender {
    state: Services,
    client: reqwest::Client,
    addresses: Addresses,
    /// The base of links in the requests (signed screenshot URLs).
    base_url: String,
    /// Names this process in `webhooks.sender`.
    me: String,
    /// Webhooks this process is sending to now.
    sending: Mutex<HashSet<String>>,
    /// The most deliveries a webhook keeps pending ([`BACKLOG_MAX`]).
    backlog_max: i64,
}

/// Starts this process's sender, keeping at most [`BACKLOG_MAX`] deliveries pending
/// per webhook.
pub fn spawn(state: Services, addresses: Addresses, base_url: String) {
    spawn_with_backlog(state, addresses, base_url, BACKLOG_MAX)
}

/// Starts this process's sender, keeping at most `backlog_max` deliveries pending per
/// webhook. Woken by the events the process learns of (its own writes, and other
/// processes' through the event hub), it looks only at the webhooks of their projects;
/// every [`POLL`] it looks at every webhook's oldest pending delivery (one index probe
/// each), for retries coming due and leases of processes that died.
pub fn spawn_with_backlog(state: Services, addresses: Addresses, base_url: String, backlog_max: i64) {
    let sender = Arc::new(Sender {
        client: client(addresses),
        addresses,
        base_url,
        me: uuid::Uuid::now_v7().to_string(),
        sending: Mutex::default(),
        backlog_max,
        state,
    });
    tokio::spawn(async move {
        let mut last_pruned = 0;
        // The first look is at every webhook; then a look at every webhook each POLL
        // (however often events wake the sender), at those of woken projects between.
        let mut last_look_at_all: Option<tokio::time::Instant> = None;
        let mut woken: Vec<String> = Vec::new();
        loop {
            let now = sender.state.clock.now().unix_millis();
            let all = last_look_at_all.is_none_or(|at| at.elapsed() >= POLL);
            if !woken.is_empty()
                && let Err(e) = sender.start_due(Some(&woken), now).await
            {
                tracing::warn!(error = %e, "looking for webhook deliveries");
            }
            if all {
                last_look_at_all = Some(tokio::time::Instant::now());
                if let Err(e) = sender.start_due(None, now).await {
                    tracing::warn!(error = %e, "looking for webhook deliveries");
                }
            }
            if now - last_pruned > 3_600_000 {
                last_pruned = now;
                if let Err(e) = prune(&sender.state, now).await {
                    tracing::warn!(error = %e, "pruning webhook deliveries");
                }
            }
            let deliveries = &sender.state.events.deliveries;
            woken = tokio::select! {
                _ = deliveries.woken() => deliveries.take(),
                _ = tokio::time::sleep(POLL) => Vec::new(),
            };
        }
    });
}

impl Sender {
    /// Starts sending to every webhook (of the `woken` projects, when given: their
    /// backlogs capped first) whose oldest pending delivery is due and whose lease this
    /// process wins. Each webhook costs a probe of its oldest pending delivery, however
    /// long its backlog.
    async fn start_due(self: &Arc<Self>, woken: Option<&[String]>, now: i64) -> Result<(), sqlx::Error> {
        let mut due = Filter::new(
            "SELECT w.webhook_id, (SELECT d.next_attempt_at FROM webhook_deliveries d \
             WHERE d.state = 'pending' AND d.webhook_id = w.webhook_id ORDER BY d.seq LIMIT 1) AS next_at \
             FROM webhooks w WHERE 1 = 1"
                .to_owned(),
        );
        if let Some(projects) = woken {
            due.and(
                &format!("w.project_id IN ({})", placeholders(projects.len())),
                projects.iter().map(|p| Bind::Text(p.clone())),
            );
        }
        let mut conn = self.state.store.pool().acquire().await?;
        let webhooks = due.fetch(&mut conn).await?;
        drop(conn);
        for row in webhooks {
            let webhook_id: String = row.try_get("webhook_id")?;
            if woken.is_some() {
                self.cap_backlog(&webhook_id).await?;
            }
            if row.try_get::<Option<i64>, _>("next_at")?.is_none_or(|at| at > now) {
                continue;
            }
            {
                let mut sending = self.sending.lock().expect("sending lock");
                if sending.len() >= SENDING_MAX || !sending.insert(webhook_id.clone()) {
                    continue;
                }
            }
            let sender = self.clone();
            tokio::spawn(async move {
                if let Err(e) = sender.send_all(&webhook_id).await {
                    tracing::warn!(error = ?e, webhook_id, "sending webhook deliveries");
                }
                sender.sending.lock().expect("sending lock").remove(&webhook_id);
            });
        }
        Ok(())
    }

    /// Drops the webhook's oldest pending deliveries past [`Sender::backlog_max`],
    /// counting them in `webhooks.dropped`.
    async fn cap_backlog(&self, webhook_id: &str) -> Result<(), sqlx::Error> {
        let edge: Option<i64> = sqlx::query_scalar(
            "SELECT seq FROM webhook_deliveries WHERE state = 'pending' AND webhook_id = $1 \
             ORDER BY seq DESC LIMIT 1 OFFSET $2",
        )
        .bind(webhook_id)
        .bind(self.backlog_max)
        .fetch_optional(self.state.store.pool())
        .await?;
        let Some(edge) = edge else { return Ok(()) };
        let mut tx = self.state.store.begin_write().await?;
        let dropped = sqlx::query(
            "DELETE FROM webhook_deliveries WHERE state = 'pending' AND webhook_id = $1 AND seq <= $2",
        )
        .bind(webhook_id)
        .bind(edge)
        .execute(&mut *tx)
        .await?
        .rows_affected();
        sqlx::query("UPDATE webhooks SET dropped = dropped + $1 WHERE webhook_id = $2")
            .bind(dropped as i64)
            .bind(webhook_id)
            .execute(&mut *tx)
            .await?;
        tx.commit().await?;
        tracing::info!(webhook_id, dropped, "dropped the oldest pending webhook deliveries");
        Ok(())
    }

    /// Takes or renews the webhook's lease; false when another process holds it.
    async fn lease(&self, webhook_id: &str, now: i64) -> Result<bool, sqlx::Error> {
        let taken = sqlx::query(
            "UPDATE webhooks SET sender = $1, sender_until = $2 \
             WHERE webhook_id = $3 AND (sender_until < $4 OR sender = $1)",
        )
        .bind(&self.me)
        .bind(now + LEASE.as_millis() as i64)
        .bind(webhook_id)
        .bind(now)
        .execute(self.state.store.pool())
        .await?;
        Ok(taken.rows_affected() == 1)
    }

    /// Sends the webhook's due deliveries in order while this process holds its lease,
    /// until one fails or none is due; then lets the lease go.
    async fn send_all(&self, webhook_id: &str) -> Result<(), ApiError> {
        self.cap_backlog(webhook_id).await?;
        loop {
            let now = self.state.clock.now();
            if !self.lease(webhook_id, now.unix_millis()).await? {
                return Ok(());
            }
            let sent = self.send_next(webhook_id, now).await;
            if !matches!(sent, Ok(true)) {
                sqlx::query("UPDATE webhooks SET sender_until = 0 WHERE webhook_id = $1 AND sender = $2")
                    .bind(webhook_id)
                    .bind(&self.me)
                    .execute(self.state.store.pool())
                    .await?;
                return sent.map(|_| ());
            }
        }
    }

    /// Sends the webhook's oldest pending delivery if it is due; true when it was
    /// delivered (so the next may follow).
    async fn send_next(&self, webhook_id: &str, now: Timestamp) -> Result<bool, ApiError> {
        let pool = self.state.store.pool();
        let Some(head) = sqlx::query(
            "SELECT d.seq, d.event_type, d.change_id, d.created_at, d.attempts, d.next_attempt_at, d.body, \
                    w.project_id, w.url, w.format, w.secret \
             FROM webhook_deliveries d JOIN webhooks w ON w.webhook_id = d.webhook_id \
             WHERE d.webhook_id = $1 AND d.state = 'pending' ORDER BY d.seq LIMIT 1",
        )
        .bind(webhook_id)
        .fetch_optional(pool)
        .await?
        else {
            return Ok(false);
        };
        if head.try_get::<i64, _>("next_attempt_at")? > now.unix_millis() {
            return Ok(false);
        }
        let seq: i64 = head.try_get("seq")?;
        let created_at: i64 = head.try_get("created_at")?;
        let body = match head.try_get::<Option<String>, _>("body")? {
            Some(body) => body,
            None => {
                let format = Format::parse(&head.try_get::<String, _>("format")?).unwrap_or(Format::Json);
                let project_id: String = head.try_get("project_id")?;
                let change_id: String = head.try_get("change_id")?;
                let event_type: String = head.try_get("event_type")?;
                let event = EventRef {
                    project_id: &project_id,
                    event_type: &event_type,
                    seq,
                    change_id: &change_id,
                    occurred_at: Timestamp::from_unix_millis(created_at),
                };
                let occurrence = occurrence(&self.state, &self.base_url, event, now).await?;
                let body = format.body(&occurrence);
                sqlx::query("UPDATE webhook_deliveries SET body = $1 WHERE webhook_id = $2 AND seq = $3")
                    .bind(&body)
                    .bind(webhook_id)
                    .bind(seq)
                    .execute(pool)
                    .await?;
                body
            }
        };
        let url: String = head.try_get("url")?;
        let secret: String = head.try_get("secret")?;
        let id = pending_delivery_id(webhook_id, seq);
        let attempt = post(&self.client, self.addresses, &url, &secret, &id, body, now).await;
        let attempts = head.try_get::<i32, _>("attempts")? as u32 + 1;
        let done_at = self.state.clock.now().unix_millis();
        let (state, next) = match (&attempt.error, after_failure(created_at, attempts, done_at)) {
            (None, _) => ("delivered", done_at),
            // A receiver that asked for a pause gets it, if longer than the back-off.
            (Some(_), AfterFailure::RetryAt(at)) => {
                ("pending", at.max(done_at + attempt.retry_after_ms.unwrap_or(0)))
            }
            (Some(_), AfterFailure::GiveUp) => ("failed", done_at),
        };
        if let Some(error) = &attempt.error {
            tracing::info!(webhook_id, seq, attempts, error, "webhook delivery failed");
        }
        sqlx::query(
            "UPDATE webhook_deliveries SET state = $1, attempts = $2, next_attempt_at = $3, last_error = $4 \
             WHERE webhook_id = $5 AND seq = $6",
        )
        .bind(state)
        .bind(attempts as i32)
        .bind(next)
        .bind(&attempt.error)
        .bind(webhook_id)
        .bind(seq)
        .execute(pool)
        .await?;
        sqlx::query("UPDATE webhooks SET last_attempt_at = $1, last_status = $2, last_error = $3 WHERE webhook_id = $4")
            .bind(done_at)
            .bind(attempt.status.map(i32::from))
            .bind(&attempt.error)
            .bind(webhook_id)
            .execute(pool)
            .await?;
        Ok(attempt.error.is_none())
    }
}

/// Deletes what `webhook list` no longer needs: deliveries delivered a week ago, failed
/// ones after four weeks.
async fn prune(state: &Services, now: i64) -> Result<(), sqlx::Error> {
    sqlx::query(
        "DELETE FROM webhook_deliveries WHERE (state = 'delivered' AND created_at < $1) \
         OR (state = 'failed' AND created_at < $2)",
    )
    .bind(now - KEEP_DELIVERED_MS)
    .bind(now - 4 * KEEP_DELIVERED_MS)
    .execute(state.store.pool())
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retries_back_off_twice_as_long_each_time_up_to_a_quarter_hour() {
        let waits: Vec<i64> = (1..=12)
            .map(|n| match after_failure(0, n, 1_000) {
                AfterFailure::RetryAt(at) => at - 1_000,
                AfterFailure::GiveUp => panic!("gave up early"),
            })
            .collect();
        assert_eq!(&waits[..5], &[1_000, 2_000, 4_000, 8_000, 16_000]);
        assert_eq!(waits[11], 15 * 60_000);
        assert_eq!(after_failure(0, 5_000, 1_000), AfterFailure::RetryAt(1_000 + 15 * 60_000));
    }

    #[test]
    fn retry_after_is_read_as_seconds_or_an_http_date() {
        let now = Timestamp::from_unix_millis(784_111_777_000); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(retry_after_ms("120", now), Some(120_000));
        assert_eq!(retry_after_ms("Sun, 06 Nov 1994 08:50:37 GMT", now), Some(60_000));
        assert_eq!(retry_after_ms("Sun, 06 Nov 1994 08:40:00 GMT", now), Some(0), "a date past is now");
        assert_eq!(retry_after_ms("99999999", now), Some(RETRY_AFTER_MAX_MS));
        assert_eq!(retry_after_ms("soon", now), None);
        assert_eq!(http_date_ms("Thu, 01 Jan 1970 00:00:00 GMT"), Some(0));
        assert_eq!(http_date_ms("Tue, 29 Feb 2028 12:00:00 GMT"), Some(1_835_438_400_000));
    }

    #[test]
    fn a_day_after_the_event_the_delivery_is_given_up() {
        assert_eq!(
            after_failure(0, 40, GIVE_UP_AFTER_MS - 1),
            AfterFailure::RetryAt(GIVE_UP_AFTER_MS - 1 + 15 * 60_000)
        );
        assert_eq!(after_failure(0, 40, GIVE_UP_AFTER_MS), AfterFailure::GiveUp);
    }
}

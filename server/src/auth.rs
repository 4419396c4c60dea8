//! Bearer tokens. A token is `rl_` + 43 base64url characters (32 random bytes); only
//! its SHA-256 is stored, and it never appears in logs or error messages. A token
//! belongs to one project and one person, carries scopes, and may expire; a revoked
//! token is refused.
//!
//! A token's check is reused for [`CHECK_REUSE_MS`]: every request names its token, and
//! reading it from the store each time was a round trip per request
//! (docs/benchmarks-history.md, "Where it stands"). So a token revoked by `redline
//! token revoke` (run in another process, which cannot tell this one) is refused at
//! most that long after; an expiry is exact. Requests that find no reusable check
//! while one is being read wait for that read instead of each reading the token again.
//!
//! A request whose token must be read from the store first takes a call from its client
//! address's [`TOKEN_READS`] bucket, given back once the token turns out to be known: so
//! a client sending made-up tokens is answered 429 after a burst, before the store is
//! asked, while one with real tokens is never held up.

use std::collections::HashMap;
use std::sync::Mutex;

use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use futures_util::FutureExt;
use futures_util::future::{BoxFuture, Shared};
use redline_protocol::{Scope, Timestamp};
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::error::ApiError;
use crate::limit::{Limiter, RateLimit};
use crate::store::rows::opt_ts;
use crate::store::{Store, hex};

/// Who is calling: the token's project, person and scopes.
#[derive(Clone, Debug)]
pub struct Principal {
    /// The token's id (not its secret), e.g. for rate limits.
    pub token_id: String,
    pub project_id: String,
    pub project_name: String,
    pub user_id: String,
    pub user_name: String,
    pub scopes: Vec<Scope>,
    /// A group token's group (`createGroupToken`): such a token has no scopes and may
    /// call only what `crate::ops::group_token` allows, on that group's items.
    pub group_id: Option<String>,
}

impl Principal {
    /// 403 unless the token has `scope`.
    pub fn require(&self, scope: Scope) -> Result<(), ApiError> {
        if self.scopes.contains(&scope) {
            Ok(())
        } else {
            Err(ApiError::forbidden(format!("this token lacks the scope {}", scope.as_str())))
        }
    }

    /// 403 unless `project_id` is the token's project ("A token belongs to one project
    /// and never sees another's items").
    pub fn require_project(&self, project_id: &str) -> Result<(), ApiError> {
        if project_id == self.project_id {
            Ok(())
        } else {
            Err(ApiError::forbidden("this token belongs to another project"))
        }
    }
}

/// Scopes as stored: space-separated wire names.
pub fn stored_scopes(stored: &str) -> Vec<Scope> {
    stored.split_whitespace().filter_map(Scope::from_wire).collect()
}

/// A fresh secret token.
pub fn generate_token() -> String {
    let mut bytes = [0u8; 32];
    getrandom::fill(&mut bytes).expect("the operating system's random source failed");
    format!("rl_{}", URL_SAFE_NO_PAD.encode(bytes))
}

/// Lower-case hex SHA-256 of a token, as stored.
pub fn hash_token(token: &str) -> String {
    hex(&Sha256::digest(token.as_bytes()))
}

/// The bearer token of a request, if it sent one.
fn bearer(headers: &HeaderMap) -> Result<&str, ApiError> {
    let value = headers
        .get(header::AUTHORIZATION)
        .ok_or_else(|| ApiError::unauthorized("missing Authorization: Bearer token"))?;
    let value = value.to_str().map_err(|_| ApiError::unauthorized("malformed Authorization header"))?;
    match value.split_once(' ') {
        Some((scheme, token)) if scheme.eq_ignore_ascii_case("bearer") && !token.trim().is_empty() => {
            Ok(token.trim())
        }
        _ => Err(ApiError::unauthorized("the Authorization header must be `Bearer <token>`")),
    }
}

/// The stored form (SHA-256) of a request's bearer token; 401 if it sent none.
pub fn token_hash(headers: &HeaderMap) -> Result<String, ApiError> {
    Ok(hash_token(bearer(headers)?))
}

/// How long a token's check is reused, in milliseconds of the server's clock.
pub const CHECK_REUSE_MS: i64 = 1000;

/// Reads of tokens that are not known, per client address: a person who pasted a
/// token wrong tries a few times; a client guessing tokens is slowed to this.
pub const TOKEN_READS: RateLimit = RateLimit { per_second: 5.0, burst: 100.0 };

/// Tokens checked in the last [`CHECK_REUSE_MS`] or being read now, by the SHA-256 of
/// the secret.
pub struct TokenChecks {
    slots: Mutex<HashMap<String, Slot>>,
    /// Per client address: reads of tokens that turned out unknown (see [`TOKEN_READS`]).
    reads: Limiter,
    read_limit: RateLimit,
    #[cfg(test)]
    store_reads: std::sync::atomic::AtomicUsize,
}

impl Default for TokenChecks {
    fn default() -> Self {
        TokenChecks::with_read_limit(TOKEN_READS)
    }
}

impl std::fmt::Debug for TokenChecks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TokenChecks").finish_non_exhaustive()
    }
}

/// A read of one token from the store, awaited by every request that needs it.
type Reading = Shared<BoxFuture<'static, Result<Checked, ApiError>>>;

enum Slot {
    Checked(Checked),
    /// Being read: when a reused check runs out, the next request of every agent using
    /// the token misses at once, and each would read the same row through the pool.
    Reading(Reading),
}

impl Slot {
    fn kept(&self, now: Timestamp) -> bool {
        match self {
            Slot::Checked(checked) => checked.reusable(now),
            Slot::Reading(_) => true,
        }
    }
}

#[derive(Clone, Debug)]
struct Checked {
    who: Principal,
    expires_at: Option<Timestamp>,
    at: Timestamp,
}

impl Checked {
    fn reusable(&self, now: Timestamp) -> bool {
        now.unix_millis() - self.at.unix_millis() < CHECK_REUSE_MS
            && self.expires_at.is_none_or(|end| now < end)
    }
}

/// Past this many, a check of a new token first drops the stale ones.
const CHECKS_KEPT: usize = 10_000;

impl TokenChecks {
    /// Checks whose reads of unknown tokens are limited to `read_limit` per client.
    pub fn with_read_limit(read_limit: RateLimit) -> TokenChecks {
        TokenChecks {
            slots: Mutex::default(),
            reads: Limiter::default(),
            read_limit,
            #[cfg(test)]
            store_reads: Default::default(),
        }
    }

    /// Resolves the request's bearer token: 401 when missing, unknown, revoked or expired;
    /// 429 when `client` (its address, as the limits key it) has sent too many unknown
    /// tokens lately and this one would have to be read from the store.
    pub async fn authenticate(
        &self,
        store: &Store,
        headers: &HeaderMap,
        client: &str,
        now: Timestamp,
    ) -> Result<Principal, ApiError> {
        self.check(store, token_hash(headers)?, Some(client), now).await
    }

    /// Checks the token whose secret hashes to `hash` (as [`TokenChecks::authenticate`]
    /// does a request's): e.g. again and again while its event streams are open.
    pub async fn check_hash(
        &self,
        store: &Store,
        hash: String,
        now: Timestamp,
    ) -> Result<Principal, ApiError> {
        self.check(store, hash, None, now).await
    }

    async fn check(
        &self,
        store: &Store,
        hash: String,
        client: Option<&str>,
        now: Timestamp,
    ) -> Result<Principal, ApiError> {
        let (reading, started) = {
            let mut slots = self.lock();
            match slots.get(&hash) {
                Some(Slot::Checked(checked)) if checked.reusable(now) => return Ok(checked.who.clone()),
                Some(Slot::Reading(reading)) => (reading.clone(), false),
                _ => {
                    if let Some(client) = client {
                        self.reads.check(client, self.read_limit, now)?;
                    }
                    #[cfg(test)]
                    self.store_reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                    if slots.len() >= CHECKS_KEPT {
                        slots.retain(|_, slot| slot.kept(now));
                    }
                    let reading = read(store.clone(), hash.clone(), now).boxed().shared();
                    slots.insert(hash.clone(), Slot::Reading(reading.clone()));
                    (reading, true)
                }
            }
        };
        let checked = reading.clone().await;
        // A known token was no guess: the read it cost is given back.
        if let (true, Some(client), Ok(_)) = (started, client, &checked) {
            self.reads.refund(client, self.read_limit);
        }
        let mut slots = self.lock();
        // The first request back from the read stores its outcome (a refusal is not
        // kept: the next request reads again).
        if let Some(Slot::Reading(current)) = slots.get(&hash)
            && current.ptr_eq(&reading)
        {
            match &checked {
                Ok(checked) => slots.insert(hash, Slot::Checked(checked.clone())),
                Err(_) => slots.remove(&hash),
            };
        }
        let checked = checked?;
        // A read that began before this request may have ended after the token expired.
        match checked.expires_at {
            Some(end) if end <= now => Err(expired(end)),
            _ => Ok(checked.who),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Slot>> {
        self.slots.lock().expect("the token checks are never poisoned")
    }
}

fn expired(end: Timestamp) -> ApiError {
    ApiError::unauthorized(format!("this token expired at {end}"))
}

/// Reads the token whose secret hashes to `hash` at `now`. A group token ends with its
/// group's lease: its check is reused no later than the lease's end.
async fn read(store: Store, hash: String, now: Timestamp) -> Result<Checked, ApiError> {
    let row = sqlx::query(
        "SELECT t.token_id, t.project_id, p.name AS project_name, t.user_id, u.name AS user_name, t.scopes, \
         t.expires_at, t.revoked_at, t.group_id, g.claim_expires_at AS lease_end \
         FROM tokens t JOIN projects p ON p.project_id = t.project_id JOIN users u ON u.user_id = t.user_id \
         LEFT JOIN claim_groups g ON g.group_id = t.group_id \
         WHERE t.token_hash = $1",
    )
    .bind(&hash)
    .fetch_optional(store.pool())
    .await?
    .ok_or_else(|| ApiError::unauthorized("unknown token"))?;
    if opt_ts(&row, "revoked_at")?.is_some() {
        return Err(ApiError::unauthorized("this token has been revoked"));
    }
    let mut expires_at = opt_ts(&row, "expires_at")?;
    if let Some(end) = expires_at
        && end <= now
    {
        return Err(expired(end));
    }
    let group_id: Option<String> = row.try_get("group_id")?;
    if group_id.is_some() {
        let lease_end = opt_ts(&row, "lease_end")?.filter(|end| now < *end);
        let Some(lease_end) = lease_end else {
            return Err(ApiError::unauthorized("this token's group has ended (its lease lapsed)"));
        };
        expires_at = Some(expires_at.map_or(lease_end, |end| end.min(lease_end)));
    }
    let scopes: String = row.try_get("scopes")?;
    let who = Principal {
        token_id: row.try_get("token_id")?,
        project_id: row.try_get("project_id")?,
        project_name: row.try_get("project_name")?,
        user_id: row.try_get("user_id")?,
        user_name: row.try_get("user_name")?,
        scopes: stored_scopes(&scopes),
        group_id,
    };
    Ok(Checked { who, expires_at, at: now })
}

#[cfg(test)]
mod tests {
    use axum::response::IntoResponse;

    use super::*;

    #[test]
    fn tokens_are_random_and_hashed() {
        let a = generate_token();
        assert!(a.starts_with("rl_") && a.len() == 46, "{a}");
        assert_ne!(a, generate_token());
        assert_eq!(hash_token("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        assert_eq!(hex(&[0x00, 0x0f, 0xa0, 0xff]), "000fa0ff");
    }

    const NOW: Timestamp = Timestamp::from_unix_millis(1_000_000);

    fn bearing(token: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(header::AUTHORIZATION, format!("Bearer {token}").parse().unwrap());
        headers
    }

    /// A store that knows no token, checks with a read of `rl_x` under way, the headers
    /// that send `rl_x`, and where the read's outcome is sent.
    struct ReadUnderWay {
        _dir: tempfile::TempDir,
        store: Store,
        checks: TokenChecks,
        headers: HeaderMap,
    }

    async fn read_under_way() -> (ReadUnderWay, tokio::sync::oneshot::Sender<Result<Checked, ApiError>>) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_dir(dir.path()).await.unwrap();
        let checks = TokenChecks::default();
        let (done, read) = tokio::sync::oneshot::channel();
        let reading = async move { read.await.unwrap() }.boxed().shared();
        checks.lock().insert(hash_token("rl_x"), Slot::Reading(reading));
        (ReadUnderWay { _dir: dir, store, checks, headers: bearing("rl_x") }, done)
    }

    fn someone(name: &str) -> Checked {
        let who = Principal {
            token_id: "t".to_owned(),
            project_id: "p".to_owned(),
            project_name: "demo".to_owned(),
            user_id: "u".to_owned(),
            user_name: name.to_owned(),
            scopes: vec![Scope::Read],
            group_id: None,
        };
        Checked { who, expires_at: None, at: NOW }
    }

    #[tokio::test]
    async fn requests_that_miss_together_share_one_read() {
        // The store knows no token: only the read already under way can let them in.
        let (under_way, done) = read_under_way().await;
        let ReadUnderWay { store, checks, headers, .. } = &under_way;
        let waiting = futures_util::future::join(
            checks.authenticate(store, headers, "client", NOW),
            checks.authenticate(store, headers, "client", NOW),
        );
        done.send(Ok(someone("ann"))).unwrap();
        let (a, b) = waiting.await;
        assert_eq!((a.unwrap().user_name, b.unwrap().user_name), ("ann".to_owned(), "ann".to_owned()));
        // Kept, and reused by the next request.
        assert_eq!(checks.authenticate(store, headers, "client", NOW).await.unwrap().user_name, "ann");
        // Once it runs out, the token is read again: unknown to the store.
        let later = NOW.plus_seconds(1);
        assert_eq!(checks.authenticate(store, headers, "client", later).await.unwrap_err().status(), 401);
    }

    #[tokio::test]
    async fn a_read_begun_before_the_expiry_lets_no_later_request_in() {
        let (under_way, done) = read_under_way().await;
        let ReadUnderWay { store, checks, headers, .. } = &under_way;
        let mut expiring = someone("bob");
        expiring.expires_at = Some(NOW.plus_seconds(1));
        let waiting = checks.authenticate(store, headers, "client", NOW.plus_seconds(1));
        done.send(Ok(expiring)).unwrap();
        assert_eq!(waiting.await.unwrap_err().status(), 401);
    }

    #[tokio::test]
    async fn a_refused_read_is_not_kept() {
        let (under_way, done) = read_under_way().await;
        let ReadUnderWay { store, checks, headers, .. } = &under_way;
        let waiting = checks.authenticate(store, headers, "client", NOW);
        done.send(Err(ApiError::unauthorized("this token has been revoked"))).unwrap();
        assert_eq!(waiting.await.unwrap_err().status(), 401);
        assert!(checks.lock().is_empty());
    }

    /// A client sending made-up tokens is refused with 429 once its burst is spent, and
    /// from then on the store is not asked; known tokens cost no part of the burst, and
    /// other clients are not held up.
    #[tokio::test]
    async fn unknown_tokens_are_refused_before_the_store_once_a_client_sent_many() {
        use std::sync::atomic::Ordering::Relaxed;
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_dir(dir.path()).await.unwrap();
        crate::admin::add_project(&store, "demo", None, NOW).await.unwrap();
        let mut known = Vec::new();
        for name in ["a", "b", "c", "d"] {
            let made = crate::admin::create_token(&store, "demo", &[Scope::Read], name, None, NOW);
            known.push(made.await.unwrap().token);
        }
        let checks = TokenChecks::with_read_limit(RateLimit { per_second: 1.0, burst: 3.0 });
        let auth = |token: &str, client: &'static str| {
            let headers = bearing(token);
            let checks = &checks;
            let store = &store;
            async move { checks.authenticate(store, &headers, client, NOW).await }
        };
        for token in &known {
            assert_eq!(auth(token, "192.0.2.1").await.unwrap().scopes, [Scope::Read]);
        }
        for guess in 0..3 {
            assert_eq!(auth(&format!("rl_guess{guess}"), "192.0.2.1").await.unwrap_err().status(), 401);
        }
        assert_eq!(checks.store_reads.load(Relaxed), 7);
        for guess in 3..200 {
            let refused = auth(&format!("rl_guess{guess}"), "192.0.2.1").await.unwrap_err();
            assert_eq!(refused.status(), 429);
            let response = refused.into_response();
            assert_eq!(response.headers()[header::RETRY_AFTER], "1");
        }
        assert_eq!(checks.store_reads.load(Relaxed), 7, "no guess past the burst reached the store");
        assert_eq!(auth("rl_guess0", "198.51.100.7").await.unwrap_err().status(), 401, "another client");
        // A token checked a moment ago needs no read, so it is let in even now.
        assert_eq!(auth(&known[0], "192.0.2.1").await.unwrap().user_name, "a");
    }

    #[test]
    fn parses_bearer_header() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h).unwrap_err().status(), 401);
        h.insert(header::AUTHORIZATION, "Basic xyz".parse().unwrap());
        assert!(bearer(&h).is_err());
        h.insert(header::AUTHORIZATION, "bearer rl_x".parse().unwrap());
        assert_eq!(bearer(&h).unwrap(), "rl_x");
    }
}

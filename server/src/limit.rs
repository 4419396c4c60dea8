//! Rate limiting: a token bucket per key, on the server clock (and, apart, the
//! [`BodyBudget`] of request bodies in flight). Calls with a token are
//! limited per token; the sign-in calls, which have none, per client address and per
//! kind of call (`requestCliAuth`, `pollCliAuth`, `/auth/verify`), each in buckets of
//! their own (see [`SignInLimits`]). A caller over its rate gets 429 with
//! `Retry-After`, which clients treat as transient.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName};
use redline_protocol::Timestamp;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::error::ApiError;

/// The bytes of request bodies that all requests together may hold at once by default
/// (`redline serve --body-budget-mb`).
pub const BODY_BUDGET_BYTES: usize = 64 * 1024 * 1024;

/// How many bytes of request bodies all requests together hold at once: each request
/// takes its body's bytes (its `Content-Length` at once, what it sends beyond as it
/// comes) and keeps them until it is answered, as what it parses from them is held as
/// long. A request that does not fit is answered 503 with `Retry-After` while it is
/// read, so a burst of large bodies slows clients down instead of exhausting memory.
#[derive(Clone, Debug)]
pub struct BodyBudget(Arc<Semaphore>);

impl BodyBudget {
    pub fn new(bytes: usize) -> BodyBudget {
        BodyBudget(Arc::new(Semaphore::new(bytes.min(Semaphore::MAX_PERMITS))))
    }

    /// Bytes not taken now.
    pub fn available(&self) -> usize {
        self.0.available_permits()
    }

    /// Takes `bytes` more for `held`, or answers 503.
    pub fn take(&self, held: &mut Option<OwnedSemaphorePermit>, bytes: usize) -> Result<(), ApiError> {
        let busy = || ApiError::unavailable("the server is reading too many requests at once; try again", 1);
        let permits = u32::try_from(bytes).map_err(|_| busy())?;
        let taken = self.0.clone().try_acquire_many_owned(permits).map_err(|_| busy())?;
        match held {
            Some(held) => held.merge(taken),
            None => *held = Some(taken),
        }
        Ok(())
    }
}

impl Default for BodyBudget {
    fn default() -> Self {
        BodyBudget::new(BODY_BUDGET_BYTES)
    }
}

/// `burst` calls at once, refilled at `per_second`.
#[derive(Clone, Copy, Debug)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: f64,
}

impl RateLimit {
    /// `per_second` calls, in bursts of up to ten seconds' worth.
    pub fn per_second(per_second: f64) -> RateLimit {
        RateLimit { per_second, burst: per_second * 10.0 }
    }
}

impl Default for RateLimit {
    /// Far above what a person or an agent loop needs, low enough to stop a runaway.
    fn default() -> Self {
        RateLimit::per_second(20.0)
    }
}

/// The sign-in calls' limits, each per client address (see [`ClientAddr::key`]).
#[derive(Clone, Copy, Debug)]
pub struct SignInLimits {
    /// `requestCliAuth`: a person starts signing in now and then.
    pub request: RateLimit,
    /// `pollCliAuth`: the CLI and the extension poll every 2 s; several devices may sign
    /// in at once behind one address.
    pub poll: RateLimit,
    /// `GET /auth/verify`, which says whether a code is pending: slow enough that
    /// guessing one of the 20^8 codes is hopeless.
    pub verify: RateLimit,
}

impl Default for SignInLimits {
    fn default() -> Self {
        SignInLimits {
            request: RateLimit { per_second: 0.2, burst: 10.0 },
            poll: RateLimit { per_second: 3.0, burst: 60.0 },
            verify: RateLimit { per_second: 0.5, burst: 20.0 },
        }
    }
}

/// Past this many buckets, a new key first drops the buckets that are full again
/// (dropping one is the same as keeping it), so addresses do not pile up.
const BUCKETS_KEPT: usize = 10_000;

#[derive(Debug, Default)]
pub struct Limiter {
    buckets: Mutex<Buckets>,
}

#[derive(Debug, Default)]
struct Buckets {
    /// Key → (calls left, when last refilled in ms, when full again in ms).
    by_key: HashMap<String, (f64, i64, i64)>,
    /// The next sweep comes when a new key finds this many buckets: twice as many as the
    /// last sweep kept, so that many keys all in use (which a sweep cannot drop) cost
    /// each call O(1) in time over the sweeps, not a sweep per new key.
    sweep_at: usize,
    #[cfg(test)]
    sweeps: usize,
}

impl Limiter {
    /// Takes one call from `key`'s bucket, or answers 429.
    pub fn check(&self, key: &str, limit: RateLimit, now: Timestamp) -> Result<(), ApiError> {
        let now = now.unix_millis();
        let mut buckets = self.buckets.lock().expect("rate limiter lock");
        let buckets = &mut *buckets;
        if buckets.by_key.len() >= buckets.sweep_at.max(BUCKETS_KEPT) && !buckets.by_key.contains_key(key) {
            buckets.by_key.retain(|_, (_, _, full_at)| *full_at > now);
            buckets.sweep_at = buckets.by_key.len() * 2;
            #[cfg(test)]
            {
                buckets.sweeps += 1;
            }
        }
        let (left, last, full_at) = buckets.by_key.entry(key.to_owned()).or_insert((limit.burst, now, now));
        let refill = (now - *last).max(0) as f64 / 1000.0 * limit.per_second;
        *left = (*left + refill).min(limit.burst);
        *last = now;
        let result = if *left >= 1.0 {
            *left -= 1.0;
            Ok(())
        } else {
            let wait = ((1.0 - *left) / limit.per_second).ceil().max(1.0) as u64;
            Err(ApiError::rate_limited(wait))
        };
        *full_at = now + ((limit.burst - *left) / limit.per_second * 1000.0).ceil() as i64;
        result
    }

    /// Gives `key` back the call [`Limiter::check`] took, up to `limit`'s burst: for a
    /// call that turned out not to be what the limit is about (see `auth`).
    pub fn refund(&self, key: &str, limit: RateLimit) {
        let mut buckets = self.buckets.lock().expect("rate limiter lock");
        if let Some((left, _, _)) = buckets.by_key.get_mut(key) {
            *left = (*left + 1.0).min(limit.burst);
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.buckets.lock().expect("rate limiter lock").by_key.len()
    }

    #[cfg(test)]
    fn sweeps(&self) -> usize {
        self.buckets.lock().expect("rate limiter lock").sweeps
    }
}

/// The address a request came from, when the server was started with it (`serve`
/// does; a router driven with `oneshot` has none).
#[derive(Clone, Copy, Debug)]
pub struct ClientAddr(pub Option<SocketAddr>);

impl<S: Send + Sync> FromRequestParts<S> for ClientAddr {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(ClientAddr(parts.extensions.get::<ConnectInfo<SocketAddr>>().map(|info| info.0)))
    }
}

impl ClientAddr {
    /// Who the client is, for rate limits without a token: its IP address (an IPv6
    /// address by its /64, which one host usually has whole). Behind a reverse proxy
    /// every client has the proxy's address, so with `header` (e.g. `X-Forwarded-For`,
    /// given as `redline serve --client-ip-header`) the last address in that header is
    /// used instead: the one the proxy itself saw.
    pub fn key(self, headers: &HeaderMap, header: Option<&HeaderName>) -> String {
        let forwarded = header.and_then(|name| {
            let value = headers.get_all(name).iter().next_back()?.to_str().ok()?;
            value.rsplit(',').next()?.trim().parse::<IpAddr>().ok()
        });
        match forwarded.or(self.0.map(|addr| addr.ip())) {
            Some(IpAddr::V6(v6)) if v6.to_ipv4_mapped().is_none() => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
            Some(IpAddr::V6(v6)) => v6.to_ipv4_mapped().expect("checked above").to_string(),
            Some(ip) => ip.to_string(),
            None => "unknown".to_owned(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refills_over_time() {
        let limiter = Limiter::default();
        let limit = RateLimit { per_second: 2.0, burst: 2.0 };
        let t0 = Timestamp::from_unix_millis(0);
        assert!(limiter.check("a", limit, t0).is_ok());
        assert!(limiter.check("a", limit, t0).is_ok());
        let e = limiter.check("a", limit, t0).unwrap_err();
        assert_eq!(e.status(), 429);
        assert!(limiter.check("b", limit, t0).is_ok(), "buckets are per token");
        assert!(limiter.check("a", limit, t0.plus_millis(500)).is_ok());
    }

    #[test]
    fn full_buckets_are_dropped_once_there_are_many() {
        let limiter = Limiter::default();
        let limit = RateLimit { per_second: 1.0, burst: 2.0 };
        let t0 = Timestamp::from_unix_millis(0);
        for i in 0..BUCKETS_KEPT {
            limiter.check(&i.to_string(), limit, t0).unwrap();
        }
        limiter.check("0", limit, t0).unwrap();
        assert!(limiter.check("0", limit, t0).is_err());
        // A second later every bucket but "0" is full again: a new key drops them.
        limiter.check("new", limit, t0.plus_millis(1000)).unwrap();
        assert_eq!(limiter.len(), 2);
        // "0" kept what it had used.
        limiter.check("0", limit, t0.plus_millis(1000)).unwrap();
        assert!(limiter.check("0", limit, t0.plus_millis(1000)).is_err());
    }

    /// A flood of keys all in use at once (none of them a sweep can drop) sweeps the
    /// buckets a handful of times, not once per new key.
    #[test]
    fn many_keys_in_use_cost_each_call_constant_time() {
        let limiter = Limiter::default();
        let limit = RateLimit { per_second: 1.0, burst: 100.0 };
        let t0 = Timestamp::from_unix_millis(0);
        for i in 0..16 * BUCKETS_KEPT {
            limiter.check(&i.to_string(), limit, t0).unwrap();
        }
        assert_eq!(limiter.len(), 16 * BUCKETS_KEPT, "no bucket in use is dropped");
        assert!(limiter.sweeps() <= 5, "{} sweeps", limiter.sweeps());
    }

    #[test]
    fn clients_are_told_apart_by_address() {
        let addr = |s: &str| ClientAddr(Some(s.parse().unwrap()));
        let none = HeaderMap::new();
        assert_eq!(addr("192.0.2.7:5000").key(&none, None), "192.0.2.7");
        assert_eq!(addr("[2001:db8:1:2:3:4:5:6]:5000").key(&none, None), "2001:db8:1:2::/64");
        assert_eq!(addr("[::ffff:192.0.2.7]:5000").key(&none, None), "192.0.2.7");
        assert_eq!(ClientAddr(None).key(&none, None), "unknown");
        let xff = HeaderName::from_static("x-forwarded-for");
        let mut headers = HeaderMap::new();
        headers.insert(&xff, "198.51.100.1, 203.0.113.9".parse().unwrap());
        // Only with the header named; then the proxy's own entry (the last) counts.
        assert_eq!(addr("10.0.0.1:1").key(&headers, None), "10.0.0.1");
        assert_eq!(addr("10.0.0.1:1").key(&headers, Some(&xff)), "203.0.113.9");
        headers.insert(&xff, "not an address".parse().unwrap());
        assert_eq!(addr("10.0.0.1:1").key(&headers, Some(&xff)), "10.0.0.1");
    }
}

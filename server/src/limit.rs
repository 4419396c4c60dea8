//! Rate limiting: a token bucket per key, on the server clock (and, apart, the
//! [`Budget`]s of request bodies and answers in flight, and the [`Deadlines`] a client
//! is held to). Calls with a token are
//! limited per token; the sign-in calls, which have none, per client address and per
//! kind of call (`requestCliAuth`, `pollCliAuth`, `/auth/verify`), each in buckets of
//! their own (see [`SignInLimits`]). A caller over its rate gets 429 with
//! `Retry-After`, which clients treat as transient.

use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{ConnectInfo, FromRequestParts};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderName};
use redline_protocol::Timestamp;

use crate::error::ApiError;

/// The largest request body, that of an RPC carrying an image: an 8 MiB image grows by
/// a third in base64, plus room for the rest of the input.
pub const MAX_BODY_BYTES: usize = redline_protocol::IMAGE_MAX_BYTES / 3 * 4 + 1024 * 1024;

/// The bytes of request bodies that all requests together may hold at once by default
/// (`redline serve --body-budget-mb`).
pub const BODY_BUDGET_BYTES: usize = 64 * 1024 * 1024;

/// The bytes of answers that all requests together may hold at once by default
/// (`redline serve --answer-budget-mb`).
pub const ANSWER_BUDGET_BYTES: usize = 128 * 1024 * 1024;

/// Bytes that requests in flight hold, of the server's memory: their bodies as they
/// arrive, or their answers until sent. Every request holds its bytes for its holders
/// (its token and its client address, or only the address) and keeps them until it is
/// done (answered, or its answer sent) or dropped (a deadline passed, the client went
/// away). A request that does not fit is refused: 503 with `Retry-After` when all
/// holders together hold the whole budget, 429 when one holder would hold more than
/// its share (a quarter by default): a few clients, however slow or greedy, cannot
/// take what everyone else needs.
#[derive(Clone, Debug)]
pub struct Budget(Arc<BudgetState>);

#[derive(Debug)]
struct BudgetState {
    total: usize,
    share: usize,
    /// What is held, for the refusals' messages: "request bodies", "answers".
    what: &'static str,
    held: Mutex<Holdings>,
}

impl BudgetState {
    fn full(&self) -> ApiError {
        ApiError::unavailable(format!("the server holds too many {} at once; try again", self.what), 1)
    }

    fn over_share(&self) -> ApiError {
        ApiError::holds_too_much(format!("this client holds too many {} at once; try again", self.what), 1)
    }
}

/// What is held now, in all and by holder (a holder holding nothing has no entry).
#[derive(Debug, Default)]
struct Holdings {
    all: usize,
    by_holder: HashMap<String, usize>,
}

impl Budget {
    /// `total` bytes, of which one holder may hold `share` at most.
    pub fn new(total: usize, share: usize, what: &'static str) -> Budget {
        let held = Mutex::default();
        Budget(Arc::new(BudgetState { total, share: share.min(total), what, held }))
    }

    /// The budget of request bodies: `total` bytes, a quarter of it for one holder but
    /// never less than the largest body (which always fits a quiet server).
    pub fn for_bodies(total: usize) -> Budget {
        Budget::new(total, (total / 4).max(MAX_BODY_BYTES), "request bodies")
    }

    /// The budget of answers: `total` bytes, a quarter of it for one holder.
    pub fn for_answers(total: usize) -> Budget {
        Budget::new(total, total / 4, "answers")
    }

    /// Bytes held now, by all requests together.
    pub fn held(&self) -> usize {
        self.0.held.lock().expect("budget lock").all
    }

    /// Bytes held now by `holder`'s requests.
    pub fn held_by(&self, holder: Holder<'_>) -> usize {
        self.0.held.lock().expect("budget lock").by_holder.get(&holder.key()).copied().unwrap_or(0)
    }

    /// Refuses a request before its work is done when one of its `holders` holds half
    /// its share already (429), or the budget is full (503): a client piling up unread
    /// answers is refused before each is made, not after.
    pub fn check_room(&self, holders: &[String]) -> Result<(), ApiError> {
        let budget = &*self.0;
        let held = budget.held.lock().expect("budget lock");
        if held.all >= budget.total {
            return Err(budget.full());
        }
        if holders.iter().any(|h| held.by_holder.get(h).is_some_and(|n| *n >= budget.share / 2)) {
            return Err(budget.over_share());
        }
        Ok(())
    }

    /// A request's hold, of nothing yet, for `holders` (see [`Holder`]).
    pub fn hold(&self, holders: Vec<String>) -> Hold {
        Hold { budget: self.clone(), holders, bytes: 0 }
    }
}

/// The key a request holds budget under: its token, and where it came from.
pub enum Holder<'a> {
    Token(&'a str),
    Client(&'a str),
}

impl Holder<'_> {
    pub fn key(&self) -> String {
        match self {
            Holder::Token(id) => format!("token {id}"),
            Holder::Client(address) => format!("client {address}"),
        }
    }
}

/// What one request holds of a [`Budget`]; given back when dropped.
#[derive(Debug)]
pub struct Hold {
    budget: Budget,
    holders: Vec<String>,
    bytes: usize,
}

impl Hold {
    /// Takes `bytes` more, or refuses (503: the budget is full; 429: a holder of this
    /// request would hold more than its share).
    pub fn take(&mut self, bytes: usize) -> Result<(), ApiError> {
        let budget = &*self.budget.0;
        let mut held = budget.held.lock().expect("budget lock");
        if held.all + bytes > budget.total {
            return Err(budget.full());
        }
        let over_share =
            |holder: &String| held.by_holder.get(holder).copied().unwrap_or(0) + bytes > budget.share;
        if self.holders.iter().any(over_share) {
            return Err(budget.over_share());
        }
        held.all += bytes;
        for holder in &self.holders {
            *held.by_holder.entry(holder.clone()).or_default() += bytes;
        }
        self.bytes += bytes;
        Ok(())
    }
}

impl Drop for Hold {
    fn drop(&mut self) {
        if self.bytes == 0 {
            return;
        }
        let mut held = self.budget.0.held.lock().expect("budget lock");
        held.all -= self.bytes;
        for holder in &self.holders {
            if let Some(n) = held.by_holder.get_mut(holder) {
                *n -= self.bytes;
                if *n == 0 {
                    held.by_holder.remove(holder);
                }
            }
        }
    }
}

/// How long the server waits on a client, and how many connections one may hold (see
/// `http::transport`, `docs/server.md`).
#[derive(Clone, Copy, Debug)]
pub struct Deadlines {
    /// A request's headers (and a kept-alive connection's next request) must arrive
    /// within this, or the connection is closed.
    pub headers: Duration,
    /// A request body may pause this long at most between two chunks (408 beyond).
    pub body_idle: Duration,
    /// An answer may wait this long at most for the client to take more of it (the
    /// connection is cut off beyond).
    pub send_idle: Duration,
    /// A body, or an answer, must move at least this many bytes a second on average:
    /// it has its idle deadline plus its length at this rate in all.
    pub min_bytes_per_sec: u64,
    /// How many connections one client address may hold open at once; more are
    /// answered 503 and closed. Not applied behind a reverse proxy
    /// (`--client-ip-header`), where every connection is the proxy's.
    pub connections_per_client: usize,
}

impl Deadlines {
    /// The whole time `bytes` may take to arrive or leave, with `idle` as the longest
    /// pause.
    pub fn overall(&self, idle: Duration, bytes: usize) -> Duration {
        idle + Duration::from_secs_f64(bytes as f64 / self.min_bytes_per_sec.max(1) as f64)
    }
}

impl Default for Deadlines {
    fn default() -> Self {
        Deadlines {
            headers: Duration::from_secs(30),
            body_idle: Duration::from_secs(10),
            send_idle: Duration::from_secs(30),
            min_bytes_per_sec: 32 * 1024,
            connections_per_client: 256,
        }
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

/// The most buckets kept, however many keys are in use (about 10 MB): a new key that
/// finds this many, none of them full again, drops the half that will be full soonest
/// (the least used; each starts full again, a little early), so a flood of keys cannot
/// grow the map without bound and costs each call O(1) over the sweeps.
const BUCKETS_MAX: usize = 100_000;

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

impl Buckets {
    /// Drops the buckets full again, and past [`BUCKETS_MAX`] / 2 those full soonest.
    fn sweep(&mut self, now: i64) {
        self.by_key.retain(|_, (_, _, full_at)| *full_at > now);
        let keep = BUCKETS_MAX / 2;
        if self.by_key.len() > keep {
            let mut full_ats: Vec<i64> = self.by_key.values().map(|(_, _, full_at)| *full_at).collect();
            let drop = full_ats.len() - keep;
            let cut = *full_ats.select_nth_unstable(drop).1;
            // Those full at `cut` itself are kept only as far as `keep` allows.
            let mut at_cut = keep - full_ats[drop..].iter().filter(|f| **f > cut).count();
            self.by_key.retain(|_, (_, _, full_at)| {
                *full_at > cut
                    || (*full_at == cut && at_cut > 0 && {
                        at_cut -= 1;
                        true
                    })
            });
        }
        self.sweep_at = (self.by_key.len() * 2).min(BUCKETS_MAX);
        #[cfg(test)]
        {
            self.sweeps += 1;
        }
    }
}

impl Limiter {
    /// Takes one call from `key`'s bucket, or answers 429.
    pub fn check(&self, key: &str, limit: RateLimit, now: Timestamp) -> Result<(), ApiError> {
        let now = now.unix_millis();
        let mut buckets = self.buckets.lock().expect("rate limiter lock");
        let buckets = &mut *buckets;
        if buckets.by_key.len() >= buckets.sweep_at.max(BUCKETS_KEPT) && !buckets.by_key.contains_key(key) {
            buckets.sweep(now);
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
        for i in 0..8 * BUCKETS_KEPT {
            limiter.check(&i.to_string(), limit, t0).unwrap();
        }
        assert_eq!(limiter.len(), 8 * BUCKETS_KEPT, "no bucket in use is dropped below the bound");
        assert!(limiter.sweeps() <= 5, "{} sweeps", limiter.sweeps());
    }

    /// Three times as many keys as the bound, all in use: the map never holds more than
    /// the bound, the sweeps stay few, and the bucket used most (drained before the
    /// flood) is kept, still limited.
    #[test]
    fn a_flood_of_keys_in_use_is_held_to_the_bound() {
        let limiter = Limiter::default();
        let limit = RateLimit { per_second: 1.0, burst: 100.0 };
        let t0 = Timestamp::from_unix_millis(0);
        for _ in 0..100 {
            limiter.check("busy", limit, t0).unwrap();
        }
        let mut most = 0;
        for i in 0..3 * BUCKETS_MAX {
            limiter.check(&i.to_string(), limit, t0).unwrap();
            if i % 1000 == 0 {
                most = most.max(limiter.len());
            }
        }
        most = most.max(limiter.len());
        assert!(most <= BUCKETS_MAX, "{most} buckets");
        assert!(limiter.sweeps() <= 12, "{} sweeps", limiter.sweeps());
        assert_eq!(limiter.check("busy", limit, t0).unwrap_err().status(), 429);
    }

    /// A hold takes for each of its holders: past the total 503, past one holder's
    /// share 429 (for every request of that holder, whatever its other holder), and all
    /// of it comes back when the hold is dropped.
    #[test]
    fn budgets_are_shared_and_given_back() {
        let budget = Budget::new(1000, 400, "answers");
        let key = |h: Holder<'_>| h.key();
        let mut a = budget.hold(vec![key(Holder::Token("a")), key(Holder::Client("192.0.2.1"))]);
        a.take(300).unwrap();
        assert_eq!(
            budget.check_room(&[key(Holder::Token("a"))]).unwrap_err().status(),
            429,
            "half its share"
        );
        let mut b = budget.hold(vec![key(Holder::Token("b")), key(Holder::Client("192.0.2.1"))]);
        assert_eq!(b.take(101).unwrap_err().status(), 429, "the address is over its share");
        b.take(100).unwrap();
        let mut c = budget.hold(vec![key(Holder::Token("c")), key(Holder::Client("192.0.2.2"))]);
        c.take(400).unwrap();
        let mut d = budget.hold(vec![key(Holder::Token("d")), key(Holder::Client("192.0.2.3"))]);
        assert_eq!(d.take(201).unwrap_err().status(), 503, "the budget is full");
        d.take(200).unwrap();
        assert_eq!((budget.held(), budget.held_by(Holder::Client("192.0.2.1"))), (1000, 400));
        drop((a, b, c, d));
        assert_eq!(budget.held(), 0);
        assert!(
            budget.0.held.lock().unwrap().by_holder.is_empty(),
            "no holder is kept once it holds nothing"
        );
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

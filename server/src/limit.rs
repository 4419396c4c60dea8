//! Per-token rate limiting: a token bucket per bearer token, on the server clock. A
//! caller over its rate gets 429 with `Retry-After`, which clients treat as transient.

use std::collections::HashMap;
use std::sync::Mutex;

use redline_protocol::Timestamp;

use crate::error::ApiError;

/// `burst` calls at once, refilled at `per_second`.
#[derive(Clone, Copy, Debug)]
pub struct RateLimit {
    pub per_second: f64,
    pub burst: f64,
}

impl Default for RateLimit {
    /// Far above what a person or an agent loop needs, low enough to stop a runaway.
    fn default() -> Self {
        RateLimit { per_second: 20.0, burst: 200.0 }
    }
}

#[derive(Debug, Default)]
pub struct Limiter {
    /// Token id → (calls left, when last refilled in ms).
    buckets: Mutex<HashMap<String, (f64, i64)>>,
}

impl Limiter {
    /// Takes one call from `key`'s bucket, or answers 429.
    pub fn check(&self, key: &str, limit: RateLimit, now: Timestamp) -> Result<(), ApiError> {
        let now = now.unix_millis();
        let mut buckets = self.buckets.lock().expect("rate limiter lock");
        let (left, last) = buckets.entry(key.to_owned()).or_insert((limit.burst, now));
        let refill = (now - *last).max(0) as f64 / 1000.0 * limit.per_second;
        *left = (*left + refill).min(limit.burst);
        *last = now;
        if *left >= 1.0 {
            *left -= 1.0;
            Ok(())
        } else {
            let wait = ((1.0 - *left) / limit.per_second).ceil().max(1.0) as u64;
            Err(ApiError::rate_limited(wait))
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
}

//! Bearer tokens. A token is `rl_` + 43 base64url characters (32 random bytes); only
//! its SHA-256 is stored, and it never appears in logs or error messages. A token
//! belongs to one project and one person, carries scopes, and may expire; a revoked
//! token is refused.
//!
//! A token's check is reused for [`CHECK_REUSE_MS`]: every request names its token, and
//! reading it from the store each time was a round trip per request (BENCHMARKS.md).
//! So a token revoked by `redline token revoke` (run in another process, which cannot
//! tell this one) is refused at most that long after; an expiry is exact.

use std::collections::HashMap;
use std::sync::Mutex;

use axum::http::{HeaderMap, header};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use redline_protocol::{Scope, Timestamp};
use sha2::{Digest, Sha256};
use sqlx::Row;

use crate::db::Store;
use crate::error::ApiError;
use crate::rows::opt_ts;

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

pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
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

/// How long a token's check is reused, in milliseconds of the server's clock.
pub const CHECK_REUSE_MS: i64 = 1000;

/// Tokens checked in the last [`CHECK_REUSE_MS`], by the SHA-256 of the secret.
#[derive(Debug, Default)]
pub struct TokenChecks {
    checked: Mutex<HashMap<String, Checked>>,
}

#[derive(Debug)]
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
    /// Resolves the request's bearer token: 401 when missing, unknown, revoked or expired.
    pub async fn authenticate(
        &self,
        store: &Store,
        headers: &HeaderMap,
        now: Timestamp,
    ) -> Result<Principal, ApiError> {
        let hash = hash_token(bearer(headers)?);
        if let Some(checked) = self.lock().get(&hash)
            && checked.reusable(now)
        {
            return Ok(checked.who.clone());
        }
        let (who, expires_at) = check(store, &hash, now).await?;
        let mut checked = self.lock();
        if checked.len() >= CHECKS_KEPT {
            checked.retain(|_, c| c.reusable(now));
        }
        checked.insert(hash, Checked { who: who.clone(), expires_at, at: now });
        Ok(who)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<String, Checked>> {
        self.checked.lock().expect("the token checks are never poisoned")
    }
}

/// Reads the token whose secret hashes to `hash`: its principal and expiry.
async fn check(
    store: &Store,
    hash: &str,
    now: Timestamp,
) -> Result<(Principal, Option<Timestamp>), ApiError> {
    let row = sqlx::query(
        "SELECT t.token_id, t.project_id, p.name AS project_name, t.user_id, u.name AS user_name, t.scopes, \
         t.expires_at, t.revoked_at \
         FROM tokens t JOIN projects p ON p.project_id = t.project_id JOIN users u ON u.user_id = t.user_id \
         WHERE t.token_hash = $1",
    )
    .bind(hash)
    .fetch_optional(store.pool())
    .await?
    .ok_or_else(|| ApiError::unauthorized("unknown token"))?;
    if opt_ts(&row, "revoked_at")?.is_some() {
        return Err(ApiError::unauthorized("this token has been revoked"));
    }
    let expires_at = opt_ts(&row, "expires_at")?;
    if let Some(end) = expires_at
        && end <= now
    {
        return Err(ApiError::unauthorized(format!("this token expired at {end}")));
    }
    let scopes: String = row.try_get("scopes")?;
    let who = Principal {
        token_id: row.try_get("token_id")?,
        project_id: row.try_get("project_id")?,
        project_name: row.try_get("project_name")?,
        user_id: row.try_get("user_id")?,
        user_name: row.try_get("user_name")?,
        scopes: stored_scopes(&scopes),
    };
    Ok((who, expires_at))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_are_random_and_hashed() {
        let a = generate_token();
        assert!(a.starts_with("rl_") && a.len() == 46, "{a}");
        assert_ne!(a, generate_token());
        assert_eq!(hash_token("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
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

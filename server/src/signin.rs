//! Sign-in, the whole of it: `requestCliAuth {}` → `{code, expiresAt, verifyUrl,
//! deviceSecret}`; the person opens `verifyUrl` (`/auth/verify`, which says how a code
//! is approved, `crate::http::verify`) and has the code approved (`redline auth approve CODE …` on the server,
//! or refused: `auth reject`; `auth list` shows the codes waiting); `pollCliAuth {code,
//! deviceSecret}` → `{status, token?}`.
//!
//! The short code is read aloud and typed, so it only approves: a poll must present
//! the long random device secret that only the asking device was told (stored as its
//! SHA-256, like tokens). The token is made by the first such poll after approval,
//! within [`APPROVAL_LIFETIME_SECS`] of it, and handed out once (the row is deleted as
//! it is collected); the store never holds a token secret. Codes past their expiry
//! are deleted by the next `requestCliAuth`. Each call, and `/auth/verify`, is
//! rate-limited per client address (`crate::limit::SignInLimits`).

use anyhow::{Context, bail};
use redline_protocol::{
    CliAuthPoll, CliAuthRequest, CliAuthStatus, PollCliAuth, PollCliAuthInput, RequestCliAuth,
    RequestCliAuthInput, Scope, Timestamp,
};
use serde::Serialize;
use sqlx::Row;

use crate::admin::{self, create_token};
use crate::auth::{generate_token, hash_token, stored_scopes};
use crate::error::ApiError;
use crate::limit::{RateLimit, SignInLimits};
use crate::ops::AnonymousOp;
use crate::services::Services;
use crate::store::Store;

/// How long a code can be approved.
pub const CODE_LIFETIME_SECS: i64 = 600;

/// How long an approved code's token can be collected, from the approval.
pub const APPROVAL_LIFETIME_SECS: i64 = 300;

/// How many days a token from a sign-in code lasts unless `auth approve --expires-in-days`
/// says otherwise: a device's token left behind stops working by itself.
pub const SIGN_IN_TOKEN_DAYS: u32 = 90;

/// A fresh device secret: 32 random bytes, like a token's (and made the same way).
fn new_device_secret() -> String {
    format!("rlds_{}", generate_token().trim_start_matches("rl_"))
}

/// Consonants only: no words, no 0/O or 1/I confusion.
const ALPHABET: &[u8] = b"BCDFGHJKLMNPQRSTVWXZ";

/// A fresh code, `XXXX-XXXX` (8 letters of 20: about 34 bits). Knowing a code is not
/// enough to collect its token (that takes the device secret); `/auth/verify`, which
/// tells whether a code is pending, is rate-limited per client, so a live code cannot
/// be found by guessing in time.
fn new_code() -> String {
    let mut code = String::with_capacity(9);
    while code.len() < 9 {
        let mut byte = [0u8; 1];
        getrandom::fill(&mut byte).expect("the operating system's random source failed");
        // 240 is the largest multiple of 20 below 256: no letter is likelier than another.
        if byte[0] < 240 {
            if code.len() == 4 {
                code.push('-');
            }
            code.push(char::from(ALPHABET[usize::from(byte[0] % 20)]));
        }
    }
    code
}

/// A code as a person may type it: any case, with or without the dash or spaces.
pub fn normalize_code(code: &str) -> Option<String> {
    let letters: String =
        code.chars().filter(|c| !matches!(c, '-' | ' ')).map(|c| c.to_ascii_uppercase()).collect();
    (letters.len() == 8 && letters.bytes().all(|b| ALPHABET.contains(&b)))
        .then(|| format!("{}-{}", &letters[..4], &letters[4..]))
}

impl AnonymousOp for RequestCliAuth {
    fn limit(limits: &SignInLimits) -> RateLimit {
        limits.request
    }

    async fn run(
        state: &Services,
        base_url: &str,
        client: &str,
        now: Timestamp,
        _: RequestCliAuthInput,
    ) -> Result<CliAuthRequest, ApiError> {
        // Codes past their expiry (never approved, rejected, or approved and not
        // collected in time) go first: each request clears them, so the table holds
        // only live codes, and requests are rate-limited.
        sqlx::query("DELETE FROM cli_auth WHERE expires_at <= $1")
            .bind(now.unix_millis())
            .execute(state.store.pool())
            .await?;
        let code = new_code();
        let secret = new_device_secret();
        let expires_at = now.plus_seconds(CODE_LIFETIME_SECS);
        sqlx::query(
            "INSERT INTO cli_auth (code, status, expires_at, created_at, secret_hash, requested_from) \
             VALUES ($1, 'pending', $2, $3, $4, $5)",
        )
        .bind(&code)
        .bind(expires_at.unix_millis())
        .bind(now.unix_millis())
        .bind(hash_token(&secret))
        .bind(client)
        .execute(state.store.pool())
        .await?;
        let verify_url = format!("{base_url}/auth/verify?code={code}");
        Ok(CliAuthRequest { code, expires_at, verify_url, device_secret: Some(secret) })
    }
}

impl AnonymousOp for PollCliAuth {
    fn limit(limits: &SignInLimits) -> RateLimit {
        limits.poll
    }

    async fn run(
        state: &Services,
        _: &str,
        _: &str,
        now: Timestamp,
        input: PollCliAuthInput,
    ) -> Result<CliAuthPoll, ApiError> {
        let secret = input.device_secret.as_deref().filter(|s| !s.is_empty()).ok_or_else(|| {
            ApiError::bad_input("deviceSecret", "is required: send the deviceSecret requestCliAuth answered")
        })?;
        let expired = Ok(CliAuthPoll { status: CliAuthStatus::Expired, token: None });
        let Some(code) = normalize_code(&input.code) else { return expired };
        let secret_hash = hash_token(secret);
        // A wrong secret is answered as an unknown code: the poll learns nothing.
        let row = sqlx::query(
            "SELECT status, project_id, scopes, user_name, expires_at, token_days FROM cli_auth \
             WHERE code = $1 AND secret_hash = $2",
        )
        .bind(&code)
        .bind(&secret_hash)
        .fetch_optional(state.store.pool())
        .await?;
        let Some(row) = row else { return expired };
        let status: String = row.try_get("status")?;
        let live = now.unix_millis() < row.try_get::<i64, _>("expires_at")?;
        match status.as_str() {
            "pending" if live => Ok(CliAuthPoll { status: CliAuthStatus::Pending, token: None }),
            "rejected" => Ok(CliAuthPoll { status: CliAuthStatus::Rejected, token: None }),
            "approved" if live => {
                // Collect it first, so two polls cannot both make a token: the one whose
                // delete removed the row makes it.
                let collected = sqlx::query(
                    "DELETE FROM cli_auth WHERE code = $1 AND secret_hash = $2 AND status = 'approved' \
                     AND expires_at > $3",
                )
                .bind(&code)
                .bind(&secret_hash)
                .bind(now.unix_millis())
                .execute(state.store.pool())
                .await?
                .rows_affected();
                if collected != 1 {
                    return expired;
                }
                let project_id: String = row.try_get("project_id")?;
                let scopes: String = row.try_get("scopes")?;
                let scopes = stored_scopes(&scopes);
                let name: String = row.try_get("user_name")?;
                let days = row.try_get::<Option<i32>, _>("token_days")?.unwrap_or(SIGN_IN_TOKEN_DAYS as i32);
                let expires_at = now.plus_minutes(i64::from(days) * 24 * 60);
                let token = create_token(&state.store, &project_id, &scopes, &name, Some(expires_at), now)
                    .await
                    .map_err(ApiError::internal)?;
                Ok(CliAuthPoll { status: CliAuthStatus::Confirmed, token: Some(token.token) })
            }
            // Expired while pending, approved and not collected in time, or (a row from
            // before codes were deleted as collected) delivered.
            _ => expired,
        }
    }
}

/// What `GET /auth/verify?code=…` (the `verifyUrl`, served by `crate::http::verify`)
/// says: how the code is approved. Plain text, and the code is echoed only once it is
/// known to be ours.
pub async fn verify_text(state: &Services, code: Option<&str>) -> String {
    let known = match code.and_then(normalize_code) {
        Some(code) => {
            sqlx::query("SELECT 1 FROM cli_auth WHERE code = $1 AND status = 'pending' AND expires_at > $2")
                .bind(&code)
                .bind(state.clock.now().unix_millis())
                .fetch_optional(state.store.pool())
                .await
                .ok()
                .flatten()
                .map(|_| code)
        }
        None => None,
    };
    match known {
        Some(code) => format!(
            "Redline sign-in\n\nCode: {code}\n\nTo let the device showing this code in, run this where the \
             server's data lives:\n\n  redline auth approve {code} --project PROJECT --name \"YOUR NAME\" \\\n    \
             --scope changes:project:read,changes:project:file\n\n(add changes:project:write for an agent).\n\
             To refuse it:\n\n  redline auth reject {code}\n"
        ),
        None => {
            "Redline sign-in\n\nThis code is unknown, used or expired. Start signing in again.\n".to_owned()
        }
    }
}

/// What `auth approve` tells the person approving: where and when the code was asked
/// for (so they can tell it is theirs) and how long the token will last.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct SignInApproval {
    pub code: String,
    /// The asking client's address (a /64 for IPv6), as the server saw it.
    pub requested_from: Option<String>,
    pub requested_at: Timestamp,
    pub token_expires_in_days: u32,
}

/// Approves a pending sign-in code for the person `name` on `project` with `scopes`;
/// the client that asked for the code receives a new token, lasting `token_days`, on its
/// next poll (with the code's device secret) within
/// [`APPROVAL_LIFETIME_SECS`].
pub async fn approve_sign_in(
    store: &Store,
    code: &str,
    grant: SignInGrant<'_>,
    now: Timestamp,
) -> anyhow::Result<SignInApproval> {
    let SignInGrant { project, scopes, name, token_days } = grant;
    let project = admin::project(store, project).await?;
    let name = name.trim();
    if name.is_empty() || scopes.is_empty() {
        bail!("approving needs the person's name (--name) and at least one scope");
    }
    let scope_names: Vec<&str> = scopes.iter().map(|s| s.as_str()).collect();
    let code = pending_code(store, code, now).await?;
    // The approval lasts minutes from now, whatever was left of the code's lifetime:
    // a token nobody collects soon is not made at all.
    let until = now.plus_seconds(APPROVAL_LIFETIME_SECS);
    let row = sqlx::query(
        "UPDATE cli_auth SET status = 'approved', project_id = $2, scopes = $3, user_name = $4, \
         expires_at = $5, token_days = $6 WHERE code = $1 AND status = 'pending' \
         RETURNING requested_from, created_at",
    )
    .bind(&code)
    .bind(&project.project_id)
    .bind(scope_names.join(" "))
    .bind(name)
    .bind(until.unix_millis())
    .bind(token_days as i32)
    .fetch_optional(store.pool())
    .await?
    .with_context(|| format!("sign-in code {code} was decided meanwhile"))?;
    Ok(SignInApproval {
        code,
        requested_from: row.try_get("requested_from")?,
        requested_at: Timestamp::from_unix_millis(row.try_get("created_at")?),
        token_expires_in_days: token_days,
    })
}

/// Who a sign-in code is approved for, and for how long its token lasts.
pub struct SignInGrant<'a> {
    pub project: &'a str,
    pub scopes: &'a [Scope],
    pub name: &'a str,
    pub token_days: u32,
}

/// A sign-in code waiting for a decision (`auth list`).
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingSignIn {
    pub code: String,
    pub requested_from: Option<String>,
    pub requested_at: Timestamp,
    pub expires_at: Timestamp,
}

/// The sign-in codes waiting for a decision, the oldest first.
pub async fn pending_sign_ins(store: &Store, now: Timestamp) -> anyhow::Result<Vec<PendingSignIn>> {
    let rows = sqlx::query(
        "SELECT code, requested_from, created_at, expires_at FROM cli_auth \
         WHERE status = 'pending' AND expires_at > $1 ORDER BY created_at",
    )
    .bind(now.unix_millis())
    .fetch_all(store.pool())
    .await?;
    rows.iter()
        .map(|r| {
            Ok(PendingSignIn {
                code: r.try_get("code")?,
                requested_from: r.try_get("requested_from")?,
                requested_at: Timestamp::from_unix_millis(r.try_get("created_at")?),
                expires_at: Timestamp::from_unix_millis(r.try_get("expires_at")?),
            })
        })
        .collect()
}

/// Refuses a pending sign-in code.
pub async fn reject_sign_in(store: &Store, code: &str, now: Timestamp) -> anyhow::Result<()> {
    let code = pending_code(store, code, now).await?;
    sqlx::query("UPDATE cli_auth SET status = 'rejected' WHERE code = $1")
        .bind(&code)
        .execute(store.pool())
        .await?;
    Ok(())
}

/// The normalised `code`, if it is pending and not expired.
async fn pending_code(store: &Store, code: &str, now: Timestamp) -> anyhow::Result<String> {
    let code = normalize_code(code).with_context(|| format!("{code:?} is not a sign-in code"))?;
    let pending =
        sqlx::query("SELECT 1 FROM cli_auth WHERE code = $1 AND status = 'pending' AND expires_at > $2")
            .bind(&code)
            .bind(now.unix_millis())
            .fetch_optional(store.pool())
            .await?;
    match pending {
        Some(_) => Ok(code),
        None => bail!("sign-in code {code} is unknown, already decided, or expired"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_are_readable_and_normalise() {
        let code = new_code();
        assert_eq!(code.len(), 9, "{code}");
        assert_eq!(normalize_code(&code.to_lowercase().replace('-', " ")), Some(code.clone()));
        assert_ne!(code, new_code());
        assert_eq!(normalize_code("BCDF-GHJ"), None);
        assert_eq!(normalize_code("ABCD-EFGH"), None, "vowels are not in codes");
    }

    #[test]
    fn device_secrets_are_long_and_random() {
        let secret = new_device_secret();
        assert!(secret.starts_with("rlds_") && secret.len() == 48, "{secret}");
        assert_ne!(secret, new_device_secret());
    }
}

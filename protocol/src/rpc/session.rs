//! The session and sign-in (served by `ops/session.rs` and the server's `signin.rs`):
//! `getSession`, `requestCliAuth`, `pollCliAuth`.

use serde::{Deserialize, Serialize};

use crate::bound::{NoNul, Opt, Text};
use crate::{ID_MAX_CHARS, Timestamp};

/// `getSession`: `{}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct GetSessionInput {}

/// A project the session may use, as listed in [`Session::projects`].
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct SessionProject {
    pub project_id: String,
    pub name: String,
}

/// `getSession` → `{userId, name, projects, scopes}`. `scopes` are wire names such as
/// `changes:project:read` (see [`Scope`]); kept as strings so an unknown Fabric scope
/// still reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct Session {
    pub user_id: String,
    pub name: String,
    pub projects: Vec<SessionProject>,
    pub scopes: Vec<String>,
}

/// `requestCliAuth`: `{}`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct RequestCliAuthInput {}

/// `requestCliAuth` → `{code, expiresAt, verifyUrl}`, and **(ours)** `deviceSecret`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
pub struct CliAuthRequest {
    pub code: String,
    pub expires_at: Timestamp,
    pub verify_url: String,
    /// **(ours)** A long random secret known only to the device that asked: the short
    /// `code` (read aloud, typed, shown in URLs) only approves; the token is handed to
    /// a poll that presents this secret. Absent from servers that do not make one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_secret: Option<String>,
}

/// `pollCliAuth`: `{code}`, and **(ours)** `deviceSecret`, which a Redline server
/// requires (the `deviceSecret` its `requestCliAuth` answered); send it whenever the
/// request answered one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "camelCase")]
#[cfg_attr(feature = "schema", schemars(transform = crate::schema::device_secret_required))]
pub struct PollCliAuthInput {
    /// A code that names no request (an empty one too) is answered `expired`.
    #[serde(with = "Text::<NoNul, 0, ID_MAX_CHARS>")]
    pub code: String,
    // Read as optional, stated as [`DeviceSecret`] (never null: the transform above
    // makes it required).
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "Opt::<DeviceSecret>::deserialize"
    )]
    #[cfg_attr(feature = "schema", schemars(with = "DeviceSecret"))]
    pub device_secret: Option<String>,
}

/// `pollCliAuth`'s `deviceSecret`, when it is there.
type DeviceSecret = Text<NoNul, 1, ID_MAX_CHARS>;

/// The state of a sign-in code: `pending|confirmed|expired|rejected`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum CliAuthStatus {
    Pending,
    Confirmed,
    Expired,
    Rejected,
}

/// `pollCliAuth` → `{status, token?}`; `token` only once `confirmed`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
pub struct CliAuthPoll {
    pub status: CliAuthStatus,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

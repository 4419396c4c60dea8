//! Whether the extension can reach its server, as the panel shows it.

use redline_protocol::rpc::Session;

use crate::rules::api_error::ApiError;
use crate::rules::settings::Settings;

/// The outcome of checking the configured server with `getSession`.
#[derive(Debug, Clone, PartialEq)]
pub enum Connection {
    /// No token saved yet: the panel asks for settings first.
    NotConfigured,
    Connected {
        api_url: String,
        session: Session,
    },
    Failed {
        api_url: String,
        error: ApiError,
    },
}

impl Connection {
    /// The check's result for `settings`, given what `getSession` answered.
    pub fn from_check(settings: &Settings, result: Result<Session, ApiError>) -> Connection {
        let api_url = settings.api_url.clone();
        match result {
            Ok(session) => Connection::Connected { api_url, session },
            Err(error) => Connection::Failed { api_url, error },
        }
    }

    /// One line for the status view.
    pub fn headline(&self) -> String {
        match self {
            Connection::NotConfigured => "Not set up yet".to_owned(),
            Connection::Connected { session, .. } => format!("Connected as {}", session.name),
            Connection::Failed { error: ApiError::SignIn { .. }, .. } => "Signed out".to_owned(),
            Connection::Failed { .. } => "Cannot reach the server".to_owned(),
        }
    }

    /// What to tell the person next.
    pub fn detail(&self) -> String {
        match self {
            Connection::NotConfigured => {
                "Open Settings and paste the API URL and a token (`cargo xtask start` prints both)."
                    .to_owned()
            }
            Connection::Connected { api_url, session } => {
                let projects: Vec<&str> = session.projects.iter().map(|p| p.name.as_str()).collect();
                format!("{api_url} · project {}", projects.join(", "))
            }
            Connection::Failed { api_url, error } => format!("{api_url}: {error}"),
        }
    }

    pub fn is_connected(&self) -> bool {
        matches!(self, Connection::Connected { .. })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use redline_protocol::rpc::SessionProject;

    fn settings() -> Settings {
        Settings { api_url: "http://127.0.0.1:7878".into(), token: "t".into() }
    }

    #[test]
    fn connected_names_the_person_and_project() {
        let session = Session {
            user_id: "u1".into(),
            name: "Ada".into(),
            projects: vec![SessionProject { project_id: "p1".into(), name: "dev".into() }],
            scopes: vec!["changes:project:read".into()],
        };
        let connection = Connection::from_check(&settings(), Ok(session));
        assert!(connection.is_connected());
        assert_eq!(connection.headline(), "Connected as Ada");
        assert_eq!(connection.detail(), "http://127.0.0.1:7878 · project dev");
    }

    #[test]
    fn failures_say_whether_to_sign_in_or_wait() {
        let signed_out = Connection::from_check(
            &settings(),
            Err(ApiError::SignIn { status: 401, message: "unknown token".into() }),
        );
        assert_eq!(signed_out.headline(), "Signed out");
        assert_eq!(signed_out.detail(), "http://127.0.0.1:7878: Sign in again: unknown token");
        let down = Connection::from_check(&settings(), Err(ApiError::Network("refused".into())));
        assert_eq!(down.headline(), "Cannot reach the server");
        assert!(!down.is_connected());
    }
}

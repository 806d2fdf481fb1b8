//! `containerServerAuth`: the runner proves it is the container's own by
//! presenting a credential the worker put in that container's environment.
//! The socket is already mounted into one container only; the credential
//! keeps a socket reached some other way (a shared mount, a leaked path)
//! from taking that container's inputs.

use levers9_config::ContainerServerAuthMode;
use subtle::ConstantTimeEq;

use crate::security::{Check, SecurityMetrics, Subject};

/// The environment variable the runner finds its credential in.
pub const CREDENTIAL_VARIABLE: &str = "LEVERS9_CONTAINER_SERVER_CREDENTIAL";

/// One container server's credential check.
#[derive(Debug, Clone)]
pub struct ServerAuth {
    mode: ContainerServerAuthMode,
    credential: String,
    subject: Subject,
    metrics: SecurityMetrics,
}

impl ServerAuth {
    /// A check in `mode` with a fresh random credential (none when `off`).
    pub fn new(mode: ContainerServerAuthMode, subject: Subject, metrics: SecurityMetrics) -> Self {
        let credential = match mode {
            ContainerServerAuthMode::Off => String::new(),
            _ => hex::encode(rand::random::<[u8; 32]>()),
        };
        ServerAuth {
            mode,
            credential,
            subject,
            metrics,
        }
    }

    /// The variable and value to put in the container's environment, if
    /// the mode issues a credential.
    pub fn env(&self) -> Option<(String, String)> {
        (!self.credential.is_empty())
            .then(|| (CREDENTIAL_VARIABLE.to_owned(), self.credential.clone()))
    }

    /// Whether a runner that presented `presented` is served. A missing or
    /// wrong credential is recorded in `observe` and `enforce`, and refused
    /// only in `enforce`.
    pub fn admits(&self, presented: &str, call: &str) -> bool {
        let mode = match self.mode {
            ContainerServerAuthMode::Off => return true,
            ContainerServerAuthMode::Observe => "observe",
            ContainerServerAuthMode::Enforce => "enforce",
        };
        // In constant time, so the time taken does not tell how much of a
        // guess was right (a length that differs answers at once: every
        // credential is 64 hex characters, which is no secret).
        if bool::from(presented.as_bytes().ct_eq(self.credential.as_bytes())) {
            return true;
        }
        let what = if presented.is_empty() {
            format!("{call} without the container's credential")
        } else {
            format!("{call} with a wrong credential")
        };
        self.metrics
            .record(Check::ContainerServerAuth, mode, &self.subject, &what);
        self.mode != ContainerServerAuthMode::Enforce
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(mode: ContainerServerAuthMode) -> ServerAuth {
        ServerAuth::new(
            mode,
            Subject {
                container_id: Some(crate::fake_runtime::id("c")),
                stub_id: "s".into(),
                pool: "p".into(),
            },
            SecurityMetrics::default(),
        )
    }

    #[test]
    fn off_issues_nothing_and_admits_everyone() {
        let off = auth(ContainerServerAuthMode::Off);
        assert_eq!(off.env(), None);
        assert!(off.admits("", "hello"));
        assert_eq!(off.metrics.count(Check::ContainerServerAuth, "off", "p"), 0);
    }

    #[test]
    fn each_container_gets_its_own_credential() {
        let a = auth(ContainerServerAuthMode::Enforce);
        let b = auth(ContainerServerAuthMode::Enforce);
        let (name, value) = a.env().expect("issued");
        assert_eq!(name, CREDENTIAL_VARIABLE);
        assert_eq!(value.len(), 64);
        assert_ne!(a.env(), b.env());
        assert!(a.admits(&value, "hello"));
        assert!(!b.admits(&value, "hello"), "another container's is wrong");
        assert_eq!(
            b.metrics.count(Check::ContainerServerAuth, "enforce", "p"),
            1
        );
    }
}

//! The records the store keeps, as the rest of levers9 sees them.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};

/// A tenant of the install: every function, token and invocation belongs to one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Workspace {
    /// Caller-made id (uuid v7 text).
    pub id: String,
    /// Human-chosen name, unique across the install.
    pub name: String,
    /// When the workspace was created.
    pub created_at: DateTime<Utc>,
}

/// What a caller supplies to create a workspace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewWorkspace {
    /// Caller-made id (uuid v7 text).
    pub id: String,
    /// Human-chosen name, unique across the install.
    pub name: String,
    /// When the workspace was created.
    pub created_at: DateTime<Utc>,
}

/// What a token is allowed to act as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TokenType {
    /// Manages the whole install.
    Admin,
    /// Acts within one workspace.
    Workspace,
    /// Identifies a worker process.
    Worker,
    /// Identifies a machine that runs workers.
    Machine,
}

impl TokenType {
    /// Every token type, in declaration order.
    pub const ALL: [TokenType; 4] = [
        TokenType::Admin,
        TokenType::Workspace,
        TokenType::Worker,
        TokenType::Machine,
    ];

    /// The stored and displayed name of the type.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenType::Admin => "admin",
            TokenType::Workspace => "workspace",
            TokenType::Worker => "worker",
            TokenType::Machine => "machine",
        }
    }
}

impl fmt::Display for TokenType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A token type name that is not one of admin, workspace, worker or machine.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown token type {0:?}: expected one of admin, workspace, worker, machine")]
pub struct UnknownTokenType(pub String);

impl FromStr for TokenType {
    type Err = UnknownTokenType;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        TokenType::ALL
            .into_iter()
            .find(|t| t.as_str() == s)
            .ok_or_else(|| UnknownTokenType(s.to_owned()))
    }
}

/// A stored token, without its hash: nothing outside the store needs it back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    /// Caller-made id (uuid v7 text).
    pub id: String,
    /// The workspace the token acts in.
    pub workspace_id: String,
    /// What the token may act as.
    pub token_type: TokenType,
    /// Free text for humans telling tokens apart.
    pub description: String,
    /// When the token was created.
    pub created_at: DateTime<Utc>,
    /// When the token was last seen in a request, if ever.
    pub last_used_at: Option<DateTime<Utc>>,
    /// When the token was revoked, if it was.
    pub revoked_at: Option<DateTime<Utc>>,
}

/// What a caller supplies to store a token.
#[derive(Clone, PartialEq, Eq)]
pub struct NewToken {
    /// Caller-made id (uuid v7 text).
    pub id: String,
    /// The workspace the token acts in.
    pub workspace_id: String,
    /// What the token may act as.
    pub token_type: TokenType,
    /// Free text for humans telling tokens apart.
    pub description: String,
    /// SHA-256 of the secret (32 bytes); the secret itself is never stored.
    pub hash: Vec<u8>,
    /// When the token was created.
    pub created_at: DateTime<Utc>,
}

// Hand-written so that logging a NewToken never prints the hash, which is enough
// to look the token up.
impl fmt::Debug for NewToken {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewToken")
            .field("id", &self.id)
            .field("workspace_id", &self.workspace_id)
            .field("token_type", &self.token_type)
            .field("description", &self.description)
            .field("hash", &"<redacted>")
            .field("created_at", &self.created_at)
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn token_type_names_round_trip() {
        for t in TokenType::ALL {
            assert_eq!(t.as_str().parse::<TokenType>(), Ok(t));
            assert_eq!(t.to_string(), t.as_str());
        }
    }

    #[test]
    fn unknown_token_type_error_names_the_valid_values() {
        let err = "root".parse::<TokenType>().unwrap_err();
        let message = err.to_string();
        assert!(message.contains("\"root\""), "{message}");
        for t in TokenType::ALL {
            assert!(message.contains(t.as_str()), "{message}");
        }
    }

    #[test]
    fn new_token_debug_hides_the_hash() {
        let token = NewToken {
            id: "t".into(),
            workspace_id: "w".into(),
            token_type: TokenType::Admin,
            description: String::new(),
            hash: vec![0xab; 32],
            created_at: DateTime::UNIX_EPOCH,
        };
        let shown = format!("{token:?}");
        assert!(!shown.contains("171"), "{shown}");
        assert!(shown.contains("<redacted>"), "{shown}");
    }
}

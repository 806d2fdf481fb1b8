//! The defaults the shipped configuration carries. Anyone can read them, so
//! the controlplane warns about each one it runs on.

use crate::schema::Config;
use crate::secret::Secret;

/// The shipped `database.postgres.encryptionKey` (base64 of 32 bytes).
/// Public: it is in this source file.
pub const SHIPPED_ENCRYPTION_KEY: &str = "bGV2ZXJzOS1zaGlwcGVkLWRlZmF1bHQta2V5LTMyYnk=";

/// The shipped `database.postgres.password`.
pub const SHIPPED_POSTGRES_PASSWORD: &str = "password";

/// A shipped default found in the effective configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ShippedDefault {
    /// `database.postgres.encryptionKey` is the shipped key.
    EncryptionKey,
    /// `database.postgres.password` is `password`.
    PostgresPassword,
    /// `database.redis.password` is empty.
    RedisWithoutPassword,
}

impl ShippedDefault {
    /// The config key this default sits in.
    pub fn key(self) -> &'static str {
        match self {
            Self::EncryptionKey => "database.postgres.encryptionKey",
            Self::PostgresPassword => "database.postgres.password",
            Self::RedisWithoutPassword => "database.redis.password",
        }
    }

    /// What the operator should do about it.
    pub fn advice(self) -> &'static str {
        match self {
            Self::EncryptionKey => {
                "the shipped database encryption key is public: set a key of your own (see docs/configuration.md)"
            }
            Self::PostgresPassword => {
                "Postgres runs with the shipped password `password`: set a password of your own"
            }
            Self::RedisWithoutPassword => "Redis is used without a password: set one",
        }
    }
}

impl Config {
    /// The shipped defaults this configuration still runs on. Postgres and
    /// Redis defaults count only when that server is in use.
    pub fn shipped_defaults_in_use(&self) -> Vec<ShippedDefault> {
        let db = &self.database;
        let mut found = Vec::new();
        if db.postgres.encryption_key.expose() == SHIPPED_ENCRYPTION_KEY {
            found.push(ShippedDefault::EncryptionKey);
        }
        if db.postgres.is_configured() && db.postgres.password.expose() == SHIPPED_POSTGRES_PASSWORD
        {
            found.push(ShippedDefault::PostgresPassword);
        }
        if db.redis.is_configured() && db.redis.password.is_empty() {
            found.push(ShippedDefault::RedisWithoutPassword);
        }
        found
    }

    /// A copy with every secret replaced by a marker, for printing. A secret
    /// still on its shipped value says so, since that value is public anyway.
    pub fn redacted(&self) -> Config {
        let mut copy = self.clone();
        redact(&mut copy.controlplane.auth.bootstrap_secret, "");
        let pg = &mut copy.database.postgres;
        redact(&mut pg.password, SHIPPED_POSTGRES_PASSWORD);
        redact(&mut pg.encryption_key, SHIPPED_ENCRYPTION_KEY);
        for key in &mut pg.previous_encryption_keys {
            redact(key, SHIPPED_ENCRYPTION_KEY);
        }
        redact(&mut copy.database.redis.password, "");
        let workspace = &mut copy.storage.workspace;
        redact(&mut workspace.access_key_id, "");
        redact(&mut workspace.secret_access_key, "");
        copy
    }
}

fn redact(secret: &mut Secret, shipped: &str) {
    if secret.is_empty() {
        return;
    }
    let marker = if secret.expose() == shipped {
        "<redacted: shipped default>"
    } else {
        "<redacted>"
    };
    *secret = Secret::new(marker);
}

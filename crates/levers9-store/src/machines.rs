//! Bring-your-own machines: pools made at run time, and machines that join
//! one with the agent. A machine's join token is kept only as its SHA-256,
//! works once and until it expires; redeeming it stores the machine's worker
//! credential (a worker token) in the same transaction.

use std::fmt;
use std::str::FromStr;

use chrono::{DateTime, Utc};
use sqlx::FromRow;

use crate::backend::{Backend, Statement, Transactional, Value};
use crate::error::StoreError;
use crate::model::{NewToken, TokenType};
use crate::postgres::PostgresStore;
use crate::sql::{at_rest, insert_token};
use crate::sqlite::SqliteStore;
use crate::task_state::{parse, UnknownState};

/// Where a machine stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MachineState {
    /// Made; its join token not redeemed yet.
    Pending,
    /// Its agent joined and holds a worker credential.
    Joined,
    /// Drained: nothing new is placed on its worker.
    Draining,
}

impl MachineState {
    /// Every state, in the order a machine meets them.
    pub const ALL: [MachineState; 3] = [
        MachineState::Pending,
        MachineState::Joined,
        MachineState::Draining,
    ];

    /// As stored, and as the API shows it.
    pub fn as_str(self) -> &'static str {
        match self {
            MachineState::Pending => "pending",
            MachineState::Joined => "joined",
            MachineState::Draining => "draining",
        }
    }
}

impl FromStr for MachineState {
    type Err = UnknownState;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        parse("machine state", &Self::ALL, Self::as_str, text)
    }
}

/// How a row's text column becomes a state: a text no version of levers9
/// wrote fails the read, naming the states it could have been.
impl TryFrom<String> for MachineState {
    type Error = UnknownState;

    fn try_from(text: String) -> Result<Self, Self::Error> {
        text.parse()
    }
}

/// A pool made at run time (`levers9 pool create`).
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct PoolRecord {
    /// Unique across the install, config pools included.
    pub name: String,
    /// runc or gvisor.
    pub runtime: String,
    /// The GPU type of its machines; empty for none.
    pub gpu_type: String,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

/// A machine of a pool.
#[derive(Debug, Clone, PartialEq, Eq, FromRow)]
pub struct MachineRecord {
    /// Caller-made id (uuid v7 text); also its worker's id.
    pub id: String,
    /// The workspace of the admin who made it; its credential belongs there.
    pub workspace_id: String,
    /// The pool it joins.
    pub pool: String,
    /// Where it stands.
    #[sqlx(try_from = "String")]
    pub state: MachineState,
    /// Until then its join token works, once.
    pub join_expires_at: DateTime<Utc>,
    /// When the join token was redeemed.
    pub join_used_at: Option<DateTime<Utc>>,
    /// The id of its worker credential, once joined.
    pub token_id: Option<String>,
    /// Its host name, as the agent reported it.
    pub hostname: String,
    /// What the agent detected, as the controlplane encoded it.
    pub capacity: String,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

/// What a caller supplies to make a machine.
#[derive(Clone, PartialEq, Eq)]
pub struct NewMachine {
    /// Caller-made id.
    pub id: String,
    /// The maker's workspace.
    pub workspace_id: String,
    /// The pool it joins, from the config or made at run time; the controlplane
    /// checks that it exists, the store does not.
    pub pool: String,
    /// SHA-256 of the join token; the token itself is never stored.
    pub join_hash: Vec<u8>,
    /// When the join token stops working.
    pub join_expires_at: DateTime<Utc>,
    /// When it was made.
    pub created_at: DateTime<Utc>,
}

// Hand-written so that no log line prints the join token's hash.
impl fmt::Debug for NewMachine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NewMachine")
            .field("id", &self.id)
            .field("pool", &self.pool)
            .field("join_hash", &"<redacted>")
            .field("join_expires_at", &self.join_expires_at)
            .finish()
    }
}

/// What redeeming a join token stores along with it.
#[derive(Clone, PartialEq, Eq)]
pub struct JoinRedemption {
    /// SHA-256 of the join token presented.
    pub join_hash: Vec<u8>,
    /// When the agent presents the token: it is expired if its expiry is not
    /// after this, and this is stored as when it was used.
    pub at: DateTime<Utc>,
    /// The host name the agent reports.
    pub hostname: String,
    /// What the agent detected, encoded by the controlplane.
    pub capacity: String,
    /// The id of the worker credential to store.
    pub credential_id: String,
    /// SHA-256 of the worker credential.
    pub credential_hash: Vec<u8>,
}

impl fmt::Debug for JoinRedemption {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("JoinRedemption")
            .field("hostname", &self.hostname)
            .field("credential_id", &self.credential_id)
            .finish_non_exhaustive()
    }
}

/// How redeeming a join token went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum JoinOutcome {
    /// Redeemed now: the machine, with its credential's id.
    Joined(MachineRecord),
    /// Redeemed before: it works once.
    AlreadyUsed(MachineRecord),
    /// Not redeemed in time.
    Expired(MachineRecord),
    /// No machine has this join token (or it was deleted).
    Unknown,
}

/// Pools and machines, whichever database holds them.
#[async_trait::async_trait]
pub trait MachineStore: Send + Sync + 'static {
    /// Stores a pool; AlreadyExists if the name is taken.
    async fn insert_pool(&self, pool: PoolRecord) -> Result<PoolRecord, StoreError>;
    /// Every pool made at run time, by name.
    async fn list_pools(&self) -> Result<Vec<PoolRecord>, StoreError>;
    /// One pool.
    async fn get_pool(&self, name: &str) -> Result<Option<PoolRecord>, StoreError>;
    /// Deletes a pool; true if it existed.
    async fn delete_pool(&self, name: &str) -> Result<bool, StoreError>;
    /// Stores a machine and its join token's hash.
    async fn insert_machine(&self, machine: NewMachine) -> Result<MachineRecord, StoreError>;
    /// Every machine, oldest first.
    async fn list_machines(&self) -> Result<Vec<MachineRecord>, StoreError>;
    /// One machine.
    async fn get_machine(&self, id: &str) -> Result<Option<MachineRecord>, StoreError>;
    /// The machine whose worker credential this token is.
    async fn machine_by_token(&self, token_id: &str) -> Result<Option<MachineRecord>, StoreError>;
    /// Redeems a join token once, before it expires, storing the worker
    /// credential in the same transaction.
    async fn redeem_join(&self, redemption: JoinRedemption) -> Result<JoinOutcome, StoreError>;
    /// Sets a machine's state; None if there is no such machine.
    async fn set_machine_state(
        &self,
        id: &str,
        state: MachineState,
    ) -> Result<Option<MachineRecord>, StoreError>;
    /// Deletes a machine and revokes its credential, in one transaction;
    /// None if there is no such machine.
    async fn delete_machine(
        &self,
        id: &str,
        at: DateTime<Utc>,
    ) -> Result<Option<MachineRecord>, StoreError>;
}

const POOL_COLUMNS: &str = "name, runtime, gpu_type, created_at";
const MACHINE_COLUMNS: &str = "id, workspace_id, pool, state, join_expires_at, join_used_at, \
                               token_id, hostname, capacity, created_at";

/// Stores a pool; AlreadyExists if the name is taken.
async fn insert_pool(writer: &impl Backend, pool: PoolRecord) -> Result<PoolRecord, StoreError> {
    let stored = PoolRecord {
        created_at: at_rest(pool.created_at),
        ..pool
    };
    let insert = Statement::new(format!(
        "INSERT INTO pools ({POOL_COLUMNS}) VALUES ($1, $2, $3, $4)"
    ))
    .bind(stored.name.as_str())
    .bind(stored.runtime.as_str())
    .bind(stored.gpu_type.as_str())
    .bind(stored.created_at);
    writer
        .execute(insert)
        .await
        .map_err(|e| match e.as_database_error() {
            Some(db) if db.is_unique_violation() => {
                StoreError::AlreadyExists(format!("pool {:?}", stored.name))
            }
            _ => StoreError::Database(e),
        })?;
    Ok(stored)
}

/// Stores a machine, pending, with its join token's hash.
async fn insert_machine(
    writer: &impl Backend,
    machine: &NewMachine,
) -> Result<MachineRecord, StoreError> {
    let insert = Statement::new(format!(
        "INSERT INTO machines (id, workspace_id, pool, state, join_hash, \
         join_expires_at, created_at) VALUES ($1, $2, $3, $4, $5, $6, $7) \
         RETURNING {MACHINE_COLUMNS}"
    ))
    .bind(machine.id.as_str())
    .bind(machine.workspace_id.as_str())
    .bind(machine.pool.as_str())
    .bind(MachineState::Pending.as_str())
    .bind(machine.join_hash.as_slice())
    .bind(at_rest(machine.join_expires_at))
    .bind(at_rest(machine.created_at));
    Ok(writer.fetch_one(insert).await?)
}

/// The machine whose `column` (a unique one, named here, never by a caller)
/// holds `value`.
async fn machine_where<'a>(
    pool: &impl Backend,
    column: &'static str,
    value: impl Into<Value<'a>>,
) -> Result<Option<MachineRecord>, StoreError> {
    let select = Statement::new(format!(
        "SELECT {MACHINE_COLUMNS} FROM machines WHERE {column} = $1"
    ))
    .bind(value);
    Ok(pool.fetch_optional(select).await?)
}

/// Redeems a join token in one transaction: the worker credential and the
/// machine's new state are stored together, or neither is.
async fn redeem_join(
    writer: &impl Transactional,
    redemption: &JoinRedemption,
) -> Result<JoinOutcome, StoreError> {
    let at = at_rest(redemption.at);
    let tx = writer.begin().await?;
    let found = machine_where(&tx, "join_hash", redemption.join_hash.as_slice()).await?;
    let Some(machine) = found else {
        return Ok(JoinOutcome::Unknown);
    };
    if machine.join_used_at.is_some() {
        return Ok(JoinOutcome::AlreadyUsed(machine));
    }
    if machine.join_expires_at <= at {
        return Ok(JoinOutcome::Expired(machine));
    }
    let credential = NewToken {
        id: redemption.credential_id.clone(),
        workspace_id: machine.workspace_id.clone(),
        token_type: TokenType::Worker,
        description: format!("machine {}", machine.id),
        hash: redemption.credential_hash.clone(),
        created_at: at,
    };
    insert_token(&tx, &credential).await?;
    // The join_used_at test again: a concurrent redemption that committed
    // first leaves no row here.
    let join = Statement::new(format!(
        "UPDATE machines SET join_used_at = $2, state = $3, hostname = $4, \
         capacity = $5, token_id = $6 WHERE id = $1 AND join_used_at IS NULL \
         RETURNING {MACHINE_COLUMNS}"
    ))
    .bind(machine.id.as_str())
    .bind(at)
    .bind(MachineState::Joined.as_str())
    .bind(redemption.hostname.as_str())
    .bind(redemption.capacity.as_str())
    .bind(credential.id.as_str());
    let joined: Option<MachineRecord> = tx.fetch_optional(join).await?;
    match joined {
        Some(joined) => {
            writer.commit(tx).await?;
            Ok(JoinOutcome::Joined(joined))
        }
        None => Ok(JoinOutcome::AlreadyUsed(machine)),
    }
}

/// Sets a machine's state; None if there is no such machine.
async fn set_machine_state(
    writer: &impl Backend,
    id: &str,
    state: MachineState,
) -> Result<Option<MachineRecord>, StoreError> {
    let update = Statement::new(format!(
        "UPDATE machines SET state = $2 WHERE id = $1 RETURNING {MACHINE_COLUMNS}"
    ))
    .bind(id)
    .bind(state.as_str());
    Ok(writer.fetch_optional(update).await?)
}

/// Deletes a machine and revokes its credential, in one transaction.
async fn delete_machine(
    writer: &impl Transactional,
    id: &str,
    at: DateTime<Utc>,
) -> Result<Option<MachineRecord>, StoreError> {
    let tx = writer.begin().await?;
    let delete = Statement::new(format!(
        "DELETE FROM machines WHERE id = $1 RETURNING {MACHINE_COLUMNS}"
    ))
    .bind(id);
    let gone: Option<MachineRecord> = tx.fetch_optional(delete).await?;
    if let Some(token_id) = gone.as_ref().and_then(|m| m.token_id.as_deref()) {
        let revoke =
            Statement::new("UPDATE tokens SET revoked_at = COALESCE(revoked_at, $2) WHERE id = $1")
                .bind(token_id)
                .bind(at_rest(at));
        tx.execute(revoke).await?;
    }
    writer.commit(tx).await?;
    Ok(gone)
}

/// Implements [`MachineStore`] over a reader and a writer pool (the same
/// pool on Postgres). SQLite takes the `$N` placeholders too, so the
/// statements above are written once.
macro_rules! machine_store_impl {
    ($store:ty, $reader:ident, $writer:ident) => {
        #[async_trait::async_trait]
        impl MachineStore for $store {
            async fn insert_pool(&self, pool: PoolRecord) -> Result<PoolRecord, StoreError> {
                insert_pool(&self.$writer, pool).await
            }

            async fn list_pools(&self) -> Result<Vec<PoolRecord>, StoreError> {
                let select =
                    Statement::new(format!("SELECT {POOL_COLUMNS} FROM pools ORDER BY name"));
                Ok(self.$reader.fetch_all(select).await?)
            }

            async fn get_pool(&self, name: &str) -> Result<Option<PoolRecord>, StoreError> {
                let select =
                    Statement::new(format!("SELECT {POOL_COLUMNS} FROM pools WHERE name = $1"))
                        .bind(name);
                Ok(self.$reader.fetch_optional(select).await?)
            }

            async fn delete_pool(&self, name: &str) -> Result<bool, StoreError> {
                let delete =
                    Statement::new("DELETE FROM pools WHERE name = $1 RETURNING name").bind(name);
                let gone: Option<(String,)> = self.$writer.fetch_optional(delete).await?;
                Ok(gone.is_some())
            }

            async fn insert_machine(
                &self,
                machine: NewMachine,
            ) -> Result<MachineRecord, StoreError> {
                insert_machine(&self.$writer, &machine).await
            }

            async fn list_machines(&self) -> Result<Vec<MachineRecord>, StoreError> {
                let select = Statement::new(format!(
                    "SELECT {MACHINE_COLUMNS} FROM machines ORDER BY created_at, id"
                ));
                Ok(self.$reader.fetch_all(select).await?)
            }

            async fn get_machine(&self, id: &str) -> Result<Option<MachineRecord>, StoreError> {
                machine_where(&self.$reader, "id", id).await
            }

            async fn machine_by_token(
                &self,
                token_id: &str,
            ) -> Result<Option<MachineRecord>, StoreError> {
                machine_where(&self.$reader, "token_id", token_id).await
            }

            async fn redeem_join(
                &self,
                redemption: JoinRedemption,
            ) -> Result<JoinOutcome, StoreError> {
                redeem_join(&self.$writer, &redemption).await
            }

            async fn set_machine_state(
                &self,
                id: &str,
                state: MachineState,
            ) -> Result<Option<MachineRecord>, StoreError> {
                set_machine_state(&self.$writer, id, state).await
            }

            async fn delete_machine(
                &self,
                id: &str,
                at: DateTime<Utc>,
            ) -> Result<Option<MachineRecord>, StoreError> {
                delete_machine(&self.$writer, id, at).await
            }
        }
    };
}

machine_store_impl!(PostgresStore, pool, pool);
machine_store_impl!(SqliteStore, reader, writer);

#[cfg(test)]
mod tests {
    use super::MachineState;

    #[test]
    fn machine_states_read_back_from_the_texts_the_database_holds() {
        let texts: Vec<&str> = MachineState::ALL.iter().map(|s| s.as_str()).collect();
        assert_eq!(texts, ["pending", "joined", "draining"]);
        for state in MachineState::ALL {
            assert_eq!(MachineState::try_from(state.as_str().to_owned()), Ok(state));
        }
        let err = MachineState::try_from("drained".to_owned()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "unknown machine state \"drained\": expected one of pending, joined, draining"
        );
    }
}

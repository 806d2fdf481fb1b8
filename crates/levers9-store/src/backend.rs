//! The one seam between SQL written once and the two databases.
//!
//! A query generic over sqlx's `Database` has to repeat, in its own `where`
//! block, that the database encodes each type it binds, decodes each row type
//! it reads and runs statements on a pool. Here a statement is plain data, its
//! text and its values ([`Statement`]), and each pool or transaction runs it
//! ([`Backend`]), so those bounds are met once, for Postgres and SQLite, and a
//! query is an ordinary function over `&impl Backend` (or `&impl
//! Transactional` when it opens a transaction).

use std::borrow::Cow;

use chrono::{DateTime, Utc};
use sqlx::postgres::PgRow;
use sqlx::sqlite::SqliteRow;
use sqlx::{Arguments, Database, Encode, FromRow, Pool, Postgres, Sqlite, Type};
use tokio::sync::Mutex;

/// A value bound to a `$N` placeholder, as the Rust type sqlx encodes it
/// from (which decides the SQL type Postgres is told).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value<'a> {
    /// Text.
    Text(&'a str),
    /// Bytes (`BYTEA`, `BLOB`).
    Bytes(&'a [u8]),
    /// A 64-bit integer.
    Int(i64),
    /// A boolean.
    Bool(bool),
    /// A time; callers pass it through [`crate::sql::at_rest`] first.
    Time(DateTime<Utc>),
    /// A time or NULL, typed as a time.
    MaybeTime(Option<DateTime<Utc>>),
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(value: &'a str) -> Self {
        Value::Text(value)
    }
}

impl<'a> From<&'a [u8]> for Value<'a> {
    fn from(value: &'a [u8]) -> Self {
        Value::Bytes(value)
    }
}

impl From<i64> for Value<'_> {
    fn from(value: i64) -> Self {
        Value::Int(value)
    }
}

impl From<bool> for Value<'_> {
    fn from(value: bool) -> Self {
        Value::Bool(value)
    }
}

impl From<DateTime<Utc>> for Value<'_> {
    fn from(value: DateTime<Utc>) -> Self {
        Value::Time(value)
    }
}

impl From<Option<DateTime<Utc>>> for Value<'_> {
    fn from(value: Option<DateTime<Utc>>) -> Self {
        Value::MaybeTime(value)
    }
}

/// A statement's text (with `$N` placeholders, which SQLite takes too) and
/// the values of its placeholders, in order.
pub(crate) struct Statement<'a> {
    text: Cow<'a, str>,
    values: Vec<Value<'a>>,
}

impl<'a> Statement<'a> {
    /// A statement with no values bound yet.
    pub(crate) fn new(text: impl Into<Cow<'a, str>>) -> Self {
        Statement {
            text: text.into(),
            values: Vec::new(),
        }
    }

    /// Binds the next placeholder.
    pub(crate) fn bind(mut self, value: impl Into<Value<'a>>) -> Self {
        self.values.push(value.into());
        self
    }
}

/// A row type both databases decode (derive `FromRow`, or a tuple).
pub(crate) trait Row:
    for<'r> FromRow<'r, PgRow> + for<'r> FromRow<'r, SqliteRow> + Send + Unpin
{
}

impl<T> Row for T where T: for<'r> FromRow<'r, PgRow> + for<'r> FromRow<'r, SqliteRow> + Send + Unpin
{}

/// A pool or an open transaction of either database, running [`Statement`]s.
#[async_trait::async_trait]
pub(crate) trait Backend: Sync {
    /// Runs a statement for its effect.
    async fn execute(&self, statement: Statement<'_>) -> Result<(), sqlx::Error>;

    /// The first row; [`sqlx::Error::RowNotFound`] if there is none.
    async fn fetch_one<T: Row>(&self, statement: Statement<'_>) -> Result<T, sqlx::Error>;

    /// The first row, if any.
    async fn fetch_optional<T: Row>(
        &self,
        statement: Statement<'_>,
    ) -> Result<Option<T>, sqlx::Error>;

    /// Every row.
    async fn fetch_all<T: Row>(&self, statement: Statement<'_>) -> Result<Vec<T>, sqlx::Error>;
}

/// A pool, which also opens transactions.
#[async_trait::async_trait]
pub(crate) trait Transactional: Backend {
    /// An open transaction on one of the pool's connections.
    type Transaction: Backend + Send;

    /// Opens a transaction; dropped without [`Transactional::commit`], it
    /// rolls back.
    async fn begin(&self) -> Result<Self::Transaction, sqlx::Error>;

    /// Commits a transaction this pool opened.
    async fn commit(&self, transaction: Self::Transaction) -> Result<(), sqlx::Error>;

    /// Runs the statements in order as one atomic step: a single one alone
    /// (a statement is atomic by itself, and this saves the BEGIN and COMMIT
    /// round trips), more in one transaction.
    async fn execute_atomically(&self, statements: Vec<Statement<'_>>) -> Result<(), sqlx::Error> {
        if statements.len() <= 1 {
            for statement in statements {
                self.execute(statement).await?;
            }
            return Ok(());
        }
        let transaction = self.begin().await?;
        for statement in statements {
            transaction.execute(statement).await?;
        }
        self.commit(transaction).await
    }
}

/// An open transaction of `DB`. Its statements run one after another on
/// its connection; the lock only lets a transaction be handed around as
/// `&impl Backend`, like a pool.
pub(crate) struct Transaction<DB: Database>(Mutex<sqlx::Transaction<'static, DB>>);

/// The values as `DB`'s arguments; an error names the value that did not
/// encode, as sqlx's own `bind` does.
fn arguments<'q, DB>(values: &[Value<'q>]) -> Result<DB::Arguments<'q>, sqlx::Error>
where
    DB: Database,
    &'q str: Encode<'q, DB> + Type<DB>,
    &'q [u8]: Encode<'q, DB> + Type<DB>,
    i64: Encode<'q, DB> + Type<DB>,
    bool: Encode<'q, DB> + Type<DB>,
    DateTime<Utc>: Encode<'q, DB> + Type<DB>,
    Option<DateTime<Utc>>: Encode<'q, DB> + Type<DB>,
{
    let mut arguments = DB::Arguments::<'q>::default();
    for (index, value) in values.iter().enumerate() {
        let added = match *value {
            Value::Text(text) => arguments.add(text),
            Value::Bytes(bytes) => arguments.add(bytes),
            Value::Int(int) => arguments.add(int),
            Value::Bool(flag) => arguments.add(flag),
            Value::Time(time) => arguments.add(time),
            Value::MaybeTime(time) => arguments.add(time),
        };
        added.map_err(|error| {
            sqlx::Error::Encode(format!("Encoding argument ${} failed: {error}", index + 1).into())
        })?;
    }
    Ok(arguments)
}

/// Implements [`Backend`] for the pool and the transaction of one
/// database, and [`Transactional`] for the pool; written once, and
/// instantiated per database so that every sqlx bound is checked on a
/// concrete type. `$on` is a module of the statement runners over any of
/// that database's executors.
macro_rules! backend_impl {
    ($db:ty, $on:ident) => {
        mod $on {
            use super::*;

            pub(super) async fn execute<'c, E>(
                executor: E,
                statement: &Statement<'_>,
            ) -> Result<(), sqlx::Error>
            where
                E: sqlx::Executor<'c, Database = $db>,
            {
                let arguments = arguments::<$db>(&statement.values)?;
                sqlx::query_with(&statement.text, arguments)
                    .execute(executor)
                    .await?;
                Ok(())
            }

            pub(super) async fn fetch_one<'c, E, T: Row>(
                executor: E,
                statement: &Statement<'_>,
            ) -> Result<T, sqlx::Error>
            where
                E: sqlx::Executor<'c, Database = $db>,
            {
                let arguments = arguments::<$db>(&statement.values)?;
                sqlx::query_as_with(&statement.text, arguments)
                    .fetch_one(executor)
                    .await
            }

            pub(super) async fn fetch_optional<'c, E, T: Row>(
                executor: E,
                statement: &Statement<'_>,
            ) -> Result<Option<T>, sqlx::Error>
            where
                E: sqlx::Executor<'c, Database = $db>,
            {
                let arguments = arguments::<$db>(&statement.values)?;
                sqlx::query_as_with(&statement.text, arguments)
                    .fetch_optional(executor)
                    .await
            }

            pub(super) async fn fetch_all<'c, E, T: Row>(
                executor: E,
                statement: &Statement<'_>,
            ) -> Result<Vec<T>, sqlx::Error>
            where
                E: sqlx::Executor<'c, Database = $db>,
            {
                let arguments = arguments::<$db>(&statement.values)?;
                sqlx::query_as_with(&statement.text, arguments)
                    .fetch_all(executor)
                    .await
            }
        }

        #[async_trait::async_trait]
        impl Backend for Pool<$db> {
            async fn execute(&self, statement: Statement<'_>) -> Result<(), sqlx::Error> {
                $on::execute(self, &statement).await
            }

            async fn fetch_one<T: Row>(&self, statement: Statement<'_>) -> Result<T, sqlx::Error> {
                $on::fetch_one(self, &statement).await
            }

            async fn fetch_optional<T: Row>(
                &self,
                statement: Statement<'_>,
            ) -> Result<Option<T>, sqlx::Error> {
                $on::fetch_optional(self, &statement).await
            }

            async fn fetch_all<T: Row>(
                &self,
                statement: Statement<'_>,
            ) -> Result<Vec<T>, sqlx::Error> {
                $on::fetch_all(self, &statement).await
            }
        }

        #[async_trait::async_trait]
        impl Backend for Transaction<$db> {
            async fn execute(&self, statement: Statement<'_>) -> Result<(), sqlx::Error> {
                $on::execute(&mut **self.0.lock().await, &statement).await
            }

            async fn fetch_one<T: Row>(&self, statement: Statement<'_>) -> Result<T, sqlx::Error> {
                $on::fetch_one(&mut **self.0.lock().await, &statement).await
            }

            async fn fetch_optional<T: Row>(
                &self,
                statement: Statement<'_>,
            ) -> Result<Option<T>, sqlx::Error> {
                $on::fetch_optional(&mut **self.0.lock().await, &statement).await
            }

            async fn fetch_all<T: Row>(
                &self,
                statement: Statement<'_>,
            ) -> Result<Vec<T>, sqlx::Error> {
                $on::fetch_all(&mut **self.0.lock().await, &statement).await
            }
        }

        #[async_trait::async_trait]
        impl Transactional for Pool<$db> {
            type Transaction = Transaction<$db>;

            async fn begin(&self) -> Result<Transaction<$db>, sqlx::Error> {
                Ok(Transaction(Mutex::new(Pool::begin(self).await?)))
            }

            async fn commit(&self, transaction: Transaction<$db>) -> Result<(), sqlx::Error> {
                transaction.0.into_inner().commit().await
            }
        }
    };
}

backend_impl!(Postgres, on_postgres);
backend_impl!(Sqlite, on_sqlite);

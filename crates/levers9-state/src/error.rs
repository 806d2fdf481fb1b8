//! The one error type of the crate.

/// Why a hot-state operation failed.
#[derive(Debug, thiserror::Error)]
pub enum StateError {
    /// Redis refused or failed the operation; redis-rs never puts the password in its messages.
    #[error("redis: {0}")]
    Redis(#[from] ::redis::RedisError),
    /// The operation named here did not finish before its deadline.
    #[error("hot state: {0} timed out")]
    Timeout(&'static str),
    /// `connect_with` was given no address at all.
    #[error("hot state: no redis address configured")]
    NoAddress,
    /// An address is not of the form "host:port".
    #[error("hot state: invalid redis address {0:?}, expected host:port")]
    InvalidAddress(String),
    /// Redis answered in a shape the client does not expect (a script and
    /// its caller out of step, or a record written by something else).
    #[error("hot state: unexpected reply: {0}")]
    Unexpected(String),
    /// A reservation or release was asked for a negative amount, which would
    /// turn it into its opposite.
    #[error("hot state: negative amount {amount} for counter {counter:?}")]
    NegativeAmount {
        /// The counter the amount was for.
        counter: String,
        /// The amount given, below zero.
        amount: i64,
    },
}

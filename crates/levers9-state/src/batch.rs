//! What the batch calls of [`crate::HotState`] take and give: a scheduler
//! placing hundreds of requests at once makes a handful of round trips per
//! batch instead of several per request.

use std::time::Duration;

/// One write of [`crate::HotState::write_batch`]; each does what the
/// single call of the same name does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// [`crate::HotState::set_with_ttl`].
    Set {
        /// The key.
        key: String,
        /// Its value.
        value: Vec<u8>,
        /// When it expires.
        ttl: Duration,
    },
    /// [`crate::HotState::set_add`].
    SetAdd {
        /// The set.
        set: String,
        /// The member added.
        member: String,
    },
    /// [`crate::HotState::set_remove`].
    SetRemove {
        /// The set.
        set: String,
        /// The member removed.
        member: String,
    },
    /// [`crate::HotState::push`].
    Push {
        /// The queue.
        queue: String,
        /// The item appended to its tail.
        value: Vec<u8>,
    },
}

/// One reservation of [`crate::HotState::try_reserve_batch`]: a capacity
/// record and the amounts to take from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserve<'a> {
    /// The capacity record.
    pub key: &'a str,
    /// Counter and amount, as [`crate::HotState::try_reserve`] takes them.
    pub amounts: &'a [(&'a str, i64)],
}

/// What became of one reservation of a batch.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reservation {
    /// Its amounts were taken.
    Reserved,
    /// They did not fit (another replica took them first): nothing was
    /// taken, and this is what the record held at that point, every counter
    /// sorted by name, so the caller can correct its picture without another
    /// read. `None` when the record does not exist.
    Refused(Option<Vec<(String, i64)>>),
}

impl Reservation {
    /// Whether the amounts were taken.
    pub fn is_reserved(&self) -> bool {
        matches!(self, Self::Reserved)
    }
}

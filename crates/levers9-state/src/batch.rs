//! What the batch calls of [`crate::HotState`] and [`crate::Capacity`] take
//! and give: a scheduler placing hundreds of requests at once makes a
//! handful of round trips per batch instead of several per request.

use std::time::Duration;

/// One write of [`crate::HotState::write_batch`]; each does what the
/// single call of the same name does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Write {
    /// [`crate::Kv::set_with_ttl`].
    Set {
        /// A name from [`crate::keys`], e.g. `container:<id>`; what it held is
        /// replaced.
        key: String,
        /// The bytes stored, opaque here (the writer's own encoding).
        value: Vec<u8>,
        /// How long it lives, counted from this write.
        ttl: Duration,
    },
    /// [`crate::Sets::set_add`].
    SetAdd {
        /// A set's name from [`crate::keys`], e.g. `workspace-containers:<id>`;
        /// made by its first member.
        set: String,
        /// The member added, usually an id; adding one already there changes
        /// nothing.
        member: String,
    },
    /// [`crate::Sets::set_remove`].
    SetRemove {
        /// A set's name from [`crate::keys`]; emptied, it no longer exists.
        set: String,
        /// The member removed; one not there is no error.
        member: String,
    },
    /// [`crate::Queues::push`].
    Push {
        /// A queue's name from [`crate::keys`], e.g. `worker-inbox:<id>`.
        queue: String,
        /// The item appended to its tail.
        value: Vec<u8>,
    },
}

/// One reservation of [`crate::Capacity::try_reserve_batch`]: a capacity
/// record and the amounts to take from it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Reserve<'a> {
    /// The record's name, e.g. a worker's ([`crate::keys::worker`]); a record
    /// that does not exist refuses the reservation.
    pub key: &'a str,
    /// Counter and amount, as [`crate::Capacity::try_reserve`] takes them.
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

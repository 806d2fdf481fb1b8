//! What [`crate::HotState::map_put`] answers.

/// The outcome of a [`crate::HotState::map_put`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MapPut {
    /// Written; `added` fields were not in the map before.
    Stored {
        /// Fields new to the map.
        added: u64,
    },
    /// Nothing written: the map would have held more than its limit.
    Full {
        /// Fields the map holds.
        len: u64,
    },
}

//! Maps: fields with values under one name, bounded in size.

use crate::StateError;

/// Maps of binary fields to binary values (a dict's entries, a workspace's
/// registry of named objects); every write checks the size limit in the same atomic
/// step, so two writers never both fit under a limit only one fits.
#[async_trait::async_trait]
pub trait Maps: Send + Sync {
    /// Writes `entries` (field, value) into the map `map`, creating it, in
    /// one atomic step, unless that would leave the map with more than
    /// `max_entries` fields: then nothing is written ([`MapPut::Full`]).
    /// With `keep_existing`, a field already in the map keeps its value.
    async fn map_put(
        &self,
        map: &str,
        entries: &[(Vec<u8>, Vec<u8>)],
        max_entries: u64,
        keep_existing: bool,
    ) -> Result<MapPut, StateError>;

    /// The value of a field of the map; None if either is missing.
    async fn map_get(&self, map: &str, field: &[u8]) -> Result<Option<Vec<u8>>, StateError>;

    /// Removes a field of the map and returns its value, in one atomic
    /// step; None if it was not there. An emptied map no longer exists.
    async fn map_take(&self, map: &str, field: &[u8]) -> Result<Option<Vec<u8>>, StateError>;

    /// Number of fields in the map; 0 if it does not exist.
    async fn map_len(&self, map: &str) -> Result<u64, StateError>;

    /// The fields of the map, sorted; empty if it does not exist.
    async fn map_fields(&self, map: &str) -> Result<Vec<Vec<u8>>, StateError>;

    /// The fields of the map with their values, sorted by field.
    async fn map_entries(&self, map: &str) -> Result<Vec<(Vec<u8>, Vec<u8>)>, StateError>;

    /// Deletes the map and every field in it; true if it existed.
    async fn map_delete(&self, map: &str) -> Result<bool, StateError>;
}

/// The outcome of a [`Maps::map_put`].
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

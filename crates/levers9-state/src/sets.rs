//! Sets of string members.

use crate::StateError;

/// Unordered sets of strings (a pool's workers, a workspace's containers);
/// a set exists while it has members.
#[async_trait::async_trait]
pub trait Sets: Send + Sync {
    /// Adds member to the set; true if it was not there yet.
    async fn set_add(&self, set: &str, member: &str) -> Result<bool, StateError>;

    /// Removes member from the set; true if it was there. An emptied set no
    /// longer exists.
    async fn set_remove(&self, set: &str, member: &str) -> Result<bool, StateError>;

    /// The members of the set, sorted; empty if the set does not exist.
    async fn set_members(&self, set: &str) -> Result<Vec<String>, StateError>;
}

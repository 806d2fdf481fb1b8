//! Stubs read lately, so a call does not read its stub's row each time.
//!
//! A stub never changes once made (its id is the hash of what it is), so a
//! cached one is never stale.

use std::collections::HashMap;

use levers9_store::StubRecord;
use levers9_sync::Lock;

/// Stubs kept, at most; past that the cache starts over.
const CAPACITY: usize = 10_000;

/// (workspace, stub id) → stub.
#[derive(Default)]
pub struct StubCache(Lock<HashMap<(String, String), StubRecord>>);

impl StubCache {
    /// The stub `stub_id` of `workspace_id`, if cached.
    pub fn get(&self, workspace_id: &str, stub_id: &str) -> Option<StubRecord> {
        self.0
            .lock()
            .get(&(workspace_id.to_owned(), stub_id.to_owned()))
            .cloned()
    }

    /// Keeps `stub`.
    pub fn put(&self, stub: &StubRecord) {
        let mut stubs = self.0.lock();
        if stubs.len() >= CAPACITY {
            stubs.clear();
        }
        stubs.insert((stub.workspace_id.clone(), stub.id.clone()), stub.clone());
    }
}

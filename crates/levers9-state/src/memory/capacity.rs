//! Capacity records in process: counters by name, per record.

use std::collections::{BTreeMap, HashMap};

use crate::{amounts, StateError};

/// The capacity records; they never expire, like their Redis hashes.
#[derive(Default)]
pub(super) struct Capacities {
    records: HashMap<String, BTreeMap<String, i64>>,
}

impl Capacities {
    pub(super) fn set(&mut self, key: &str, amounts: &[(&str, i64)]) {
        // Like Redis, which cannot hold an empty hash: no counters, no record.
        if amounts.is_empty() {
            return;
        }
        let record = self.records.entry(key.to_owned()).or_default();
        for &(counter, amount) in amounts {
            record.insert(counter.to_owned(), amount);
        }
    }

    pub(super) fn try_reserve(
        &mut self,
        key: &str,
        amounts: &[(&str, i64)],
    ) -> Result<bool, StateError> {
        let amounts = amounts::merged(amounts)?;
        let Some(record) = self.records.get_mut(key) else {
            return Ok(false);
        };
        let fits = amounts
            .iter()
            .all(|&(counter, amount)| record.get(counter).copied().unwrap_or(0) >= amount);
        if !fits {
            return Ok(false);
        }
        for (counter, amount) in amounts {
            // Creates a missing counter at 0 - 0, as HINCRBY does on Redis.
            *record.entry(counter.to_owned()).or_insert(0) -= amount;
        }
        Ok(true)
    }

    pub(super) fn release(&mut self, key: &str, amounts: &[(&str, i64)]) -> Result<(), StateError> {
        let amounts = amounts::merged(amounts)?;
        // A record deleted meanwhile (its worker is gone) stays deleted.
        let Some(record) = self.records.get_mut(key) else {
            return Ok(());
        };
        for (counter, amount) in amounts {
            let have = record.entry(counter.to_owned()).or_insert(0);
            *have = have.saturating_add(amount);
        }
        Ok(())
    }

    pub(super) fn get(&self, key: &str) -> Option<Vec<(String, i64)>> {
        let record = self.records.get(key)?;
        Some(
            record
                .iter()
                .map(|(name, amount)| (name.clone(), *amount))
                .collect(),
        )
    }

    pub(super) fn delete(&mut self, key: &str) -> bool {
        self.records.remove(key).is_some()
    }
}

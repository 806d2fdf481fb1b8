//! Capacity records in process: counters by name, per record.

use std::collections::{BTreeMap, HashMap};

use crate::{amounts, Reservation, Reserve, StateError};

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

    pub(super) fn try_reserve_batch(
        &mut self,
        reservations: &[Reserve<'_>],
    ) -> Result<Vec<Reservation>, StateError> {
        // Every amount is checked first: a negative one fails the batch with
        // nothing taken, as on Redis.
        let merged = reservations
            .iter()
            .map(|r| amounts::merged(r.amounts))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(reservations
            .iter()
            .zip(merged)
            .map(|(r, amounts)| self.try_reserve(r.key, &amounts))
            .collect())
    }

    /// One reservation of merged amounts.
    fn try_reserve(&mut self, key: &str, amounts: &[(&str, i64)]) -> Reservation {
        let Some(record) = self.records.get_mut(key) else {
            return Reservation::Refused(None);
        };
        let fits = amounts
            .iter()
            .all(|&(counter, amount)| record.get(counter).copied().unwrap_or(0) >= amount);
        if !fits {
            return Reservation::Refused(self.get(key));
        }
        for &(counter, amount) in amounts {
            // Creates a missing counter at 0 - 0, as HINCRBY does on Redis.
            *record.entry(counter.to_owned()).or_insert(0) -= amount;
        }
        Reservation::Reserved
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

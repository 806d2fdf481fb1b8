//! Capacity records: one Redis hash of integer counters per record.
//!
//! Reserving is a Lua script so that the check and the decrement are one
//! atomic step for every controlplane replica at once; a check in Rust
//! followed by HINCRBY would let two replicas both see enough and overcommit.

use std::collections::BTreeMap;

use crate::{amounts, Reservation, Reserve, StateError};

use super::RedisState;

/// For each record in turn, subtracts every amount if the record exists
/// and every counter fits it; one script, so the whole batch is one atomic
/// step for every replica.
///
/// KEYS are the records, one per reservation (a record may come twice).
/// ARGV holds, for each reservation in turn, its number of counters n, then
/// (counter, amount, -amount) n times, each counter once. The negation comes
/// from Rust so that HINCRBY gets an exact integer: Lua numbers are doubles,
/// which makes the comparison exact only up to 2^53 (far beyond any CPU or
/// memory count). Returns one array per reservation: {'1'} when taken, else
/// {'0'} followed by the record's fields and values as they were (none for a
/// missing record).
pub(super) const TRY_RESERVE_BATCH: &str = r"
local results = {}
local a = 1
for k = 1, #KEYS do
  local n = tonumber(ARGV[a])
  local first, last = a + 1, a + 3 * n
  local fits = redis.call('EXISTS', KEYS[k]) == 1
  if fits then
    for i = first, last, 3 do
      local have = tonumber(redis.call('HGET', KEYS[k], ARGV[i]) or '0')
      if have < tonumber(ARGV[i + 1]) then
        fits = false
        break
      end
    end
  end
  if fits then
    for i = first, last, 3 do
      redis.call('HINCRBY', KEYS[k], ARGV[i], ARGV[i + 2])
    end
    results[k] = {'1'}
  else
    local now = redis.call('HGETALL', KEYS[k])
    table.insert(now, 1, '0')
    results[k] = now
  end
  a = last + 1
end
return results
";

/// Adds every amount back, but only to a record that still exists: HINCRBY
/// alone would recreate the record of a worker deleted meanwhile.
///
/// KEYS[1] is the record; ARGV is (counter, amount) repeated.
pub(super) const RELEASE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
for i = 1, #ARGV, 2 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 1])
end
return 1
";

impl RedisState {
    pub(super) async fn capacity_set(
        &self,
        key: &str,
        amounts: &[(&str, i64)],
    ) -> Result<(), StateError> {
        // HSET needs at least one field, and a hash cannot exist empty.
        if amounts.is_empty() {
            return Ok(());
        }
        let mut hset = ::redis::cmd("HSET");
        hset.arg(self.name("capacity", key));
        for &(counter, amount) in amounts {
            hset.arg(counter).arg(amount);
        }
        let _: u64 = hset.query_async(&mut self.commands()).await?;
        Ok(())
    }

    pub(super) async fn capacity_try_reserve_batch(
        &self,
        reservations: &[Reserve<'_>],
    ) -> Result<Vec<Reservation>, StateError> {
        if reservations.is_empty() {
            return Ok(Vec::new());
        }
        // Every amount is checked before anything is sent: a negative one
        // fails the batch with nothing taken.
        let merged = reservations
            .iter()
            .map(|r| amounts::merged(r.amounts))
            .collect::<Result<Vec<_>, _>>()?;
        let mut invocation = self.try_reserve_batch.prepare_invoke();
        for (reservation, amounts) in reservations.iter().zip(merged) {
            invocation
                .key(self.name("capacity", reservation.key))
                .arg(amounts.len());
            for (counter, amount) in amounts {
                // Never overflows: merged amounts are not negative.
                invocation.arg(counter).arg(amount).arg(-amount);
            }
        }
        let replies: Vec<Vec<String>> = invocation.invoke_async(&mut self.commands()).await?;
        if replies.len() != reservations.len() {
            return Err(StateError::Unexpected(format!(
                "{} replies to {} reservations",
                replies.len(),
                reservations.len()
            )));
        }
        replies.into_iter().map(reservation).collect()
    }

    pub(super) async fn capacity_release(
        &self,
        key: &str,
        amounts: &[(&str, i64)],
    ) -> Result<(), StateError> {
        let amounts = amounts::merged(amounts)?;
        let mut invocation = self.release.key(self.name("capacity", key));
        for (counter, amount) in amounts {
            invocation.arg(counter).arg(amount);
        }
        let _: bool = invocation.invoke_async(&mut self.commands()).await?;
        Ok(())
    }

    pub(super) async fn capacity_get(
        &self,
        key: &str,
    ) -> Result<Option<Vec<(String, i64)>>, StateError> {
        let counters: BTreeMap<String, i64> = ::redis::cmd("HGETALL")
            .arg(self.name("capacity", key))
            .query_async(&mut self.commands())
            .await?;
        // A missing hash reads as an empty one, and an existing one is never empty.
        if counters.is_empty() {
            return Ok(None);
        }
        Ok(Some(counters.into_iter().collect()))
    }

    pub(super) async fn capacity_delete(&self, key: &str) -> Result<bool, StateError> {
        let deleted: u64 = ::redis::cmd("DEL")
            .arg(self.name("capacity", key))
            .query_async(&mut self.commands())
            .await?;
        Ok(deleted > 0)
    }
}

/// One reply of [`TRY_RESERVE_BATCH`].
fn reservation(reply: Vec<String>) -> Result<Reservation, StateError> {
    let mut fields = reply.into_iter();
    match fields.next().as_deref() {
        Some("1") => Ok(Reservation::Reserved),
        Some("0") => {
            let mut counters = BTreeMap::new();
            while let (Some(name), Some(value)) = (fields.next(), fields.next()) {
                let value = value.parse().map_err(|_| {
                    StateError::Unexpected(format!("capacity counter {name} holds {value:?}"))
                })?;
                counters.insert(name, value);
            }
            // A missing record reads as no fields, and an existing one is never empty.
            Ok(Reservation::Refused(
                (!counters.is_empty()).then(|| counters.into_iter().collect()),
            ))
        }
        other => Err(StateError::Unexpected(format!(
            "reservation reply starts with {other:?}"
        ))),
    }
}

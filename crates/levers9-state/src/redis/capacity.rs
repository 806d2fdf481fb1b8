//! Capacity records: one Redis hash of integer counters per record.
//!
//! Reserving is a Lua script so that the check and the decrement are one
//! atomic step for every controlplane replica at once; a check in Rust
//! followed by HINCRBY would let two replicas both see enough and overcommit.

use std::collections::BTreeMap;

use crate::{amounts, StateError};

use super::RedisState;

/// Subtracts every amount if the record exists and every counter fits it.
///
/// KEYS[1] is the record; ARGV is (counter, amount, -amount) repeated, each
/// counter once. The negation comes from Rust so that HINCRBY gets an exact
/// integer: Lua numbers are doubles, which makes the comparison exact only up
/// to 2^53 (far beyond any CPU or memory count).
pub(super) const TRY_RESERVE: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
for i = 1, #ARGV, 3 do
  local have = tonumber(redis.call('HGET', KEYS[1], ARGV[i]) or '0')
  if have < tonumber(ARGV[i + 1]) then
    return 0
  end
end
for i = 1, #ARGV, 3 do
  redis.call('HINCRBY', KEYS[1], ARGV[i], ARGV[i + 2])
end
return 1
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

    pub(super) async fn capacity_try_reserve(
        &self,
        key: &str,
        amounts: &[(&str, i64)],
    ) -> Result<bool, StateError> {
        let amounts = amounts::merged(amounts)?;
        let mut invocation = self.try_reserve.key(self.name("capacity", key));
        for (counter, amount) in amounts {
            // Never overflows: merged amounts are not negative.
            invocation.arg(counter).arg(amount).arg(-amount);
        }
        let reserved: bool = invocation.invoke_async(&mut self.commands()).await?;
        Ok(reserved)
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

//! Maps (Redis hashes) and capped pushes: the size limits are checked in
//! the same script that writes, so two writers can never both fit under a
//! limit that only one of them fits.

use std::collections::BTreeMap;
use std::sync::LazyLock;

use ::redis::Script;

use crate::{MapPut, StateError};

use super::RedisState;

/// Pushes ARGV[2..] to the tail of KEYS[1] unless the list would then hold
/// more than ARGV[1] items: -1 then, else the new length. One RPUSH per item,
/// since unpack() is limited to a few thousand arguments.
const PUSH_CAPPED: &str = r"
local len = redis.call('LLEN', KEYS[1])
if len + #ARGV - 1 > tonumber(ARGV[1]) then return -1 end
for i = 2, #ARGV do
  len = redis.call('RPUSH', KEYS[1], ARGV[i])
end
return len
";

/// Writes the field/value pairs ARGV[3..] into the hash KEYS[1] unless it
/// would then hold more than ARGV[1] fields; with ARGV[2] == '1' fields
/// already there keep their values. {1, added} or {0, current length}.
const MAP_PUT: &str = r"
local len = redis.call('HLEN', KEYS[1])
local seen = {}
local added = 0
for i = 3, #ARGV, 2 do
  local field = ARGV[i]
  if not seen[field] then
    seen[field] = true
    if redis.call('HEXISTS', KEYS[1], field) == 0 then added = added + 1 end
  end
end
if len + added > tonumber(ARGV[1]) then return {0, len} end
for i = 3, #ARGV, 2 do
  if ARGV[2] == '1' then
    redis.call('HSETNX', KEYS[1], ARGV[i], ARGV[i + 1])
  else
    redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1])
  end
end
return {1, added}
";

/// HGET then HDEL of ARGV[1] in KEYS[1], as one step (HGETDEL needs Redis 8).
const MAP_TAKE: &str = r"
local value = redis.call('HGET', KEYS[1], ARGV[1])
if value then redis.call('HDEL', KEYS[1], ARGV[1]) end
return value
";

static PUSH_CAPPED_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(PUSH_CAPPED));
static MAP_PUT_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(MAP_PUT));
static MAP_TAKE_SCRIPT: LazyLock<Script> = LazyLock::new(|| Script::new(MAP_TAKE));

impl RedisState {
    pub(super) async fn queue_push_capped(
        &self,
        queue: &str,
        values: &[Vec<u8>],
        max_len: u64,
    ) -> Result<Option<u64>, StateError> {
        let mut invocation = PUSH_CAPPED_SCRIPT.key(self.name("queue", queue));
        invocation.arg(max_len);
        for value in values {
            invocation.arg(value.as_slice());
        }
        let len: i64 = invocation.invoke_async(&mut self.commands()).await?;
        Ok(u64::try_from(len).ok())
    }

    pub(super) async fn queue_clear(&self, queue: &str) -> Result<u64, StateError> {
        let key = self.name("queue", queue);
        // MULTI/EXEC, so the count is of exactly the items deleted.
        let (len, _): (u64, u64) = ::redis::pipe()
            .atomic()
            .cmd("LLEN")
            .arg(&key)
            .cmd("DEL")
            .arg(&key)
            .query_async(&mut self.commands())
            .await?;
        Ok(len)
    }

    pub(super) async fn hash_put(
        &self,
        map: &str,
        entries: &[(Vec<u8>, Vec<u8>)],
        max_entries: u64,
        keep_existing: bool,
    ) -> Result<MapPut, StateError> {
        let mut invocation = MAP_PUT_SCRIPT.key(self.name("map", map));
        invocation
            .arg(max_entries)
            .arg(if keep_existing { "1" } else { "0" });
        for (field, value) in entries {
            invocation.arg(field.as_slice()).arg(value.as_slice());
        }
        let (stored, count): (i64, u64) = invocation.invoke_async(&mut self.commands()).await?;
        Ok(if stored == 1 {
            MapPut::Stored { added: count }
        } else {
            MapPut::Full { len: count }
        })
    }

    pub(super) async fn hash_get(
        &self,
        map: &str,
        field: &[u8],
    ) -> Result<Option<Vec<u8>>, StateError> {
        Ok(::redis::cmd("HGET")
            .arg(self.name("map", map))
            .arg(field)
            .query_async(&mut self.commands())
            .await?)
    }

    pub(super) async fn hash_take(
        &self,
        map: &str,
        field: &[u8],
    ) -> Result<Option<Vec<u8>>, StateError> {
        Ok(MAP_TAKE_SCRIPT
            .key(self.name("map", map))
            .arg(field)
            .invoke_async(&mut self.commands())
            .await?)
    }

    pub(super) async fn hash_len(&self, map: &str) -> Result<u64, StateError> {
        Ok(::redis::cmd("HLEN")
            .arg(self.name("map", map))
            .query_async(&mut self.commands())
            .await?)
    }

    pub(super) async fn hash_fields(&self, map: &str) -> Result<Vec<Vec<u8>>, StateError> {
        let mut fields: Vec<Vec<u8>> = ::redis::cmd("HKEYS")
            .arg(self.name("map", map))
            .query_async(&mut self.commands())
            .await?;
        // Redis returns a hash's fields in no particular order.
        fields.sort_unstable();
        Ok(fields)
    }

    pub(super) async fn hash_entries(
        &self,
        map: &str,
    ) -> Result<Vec<(Vec<u8>, Vec<u8>)>, StateError> {
        let entries: BTreeMap<Vec<u8>, Vec<u8>> = ::redis::cmd("HGETALL")
            .arg(self.name("map", map))
            .query_async(&mut self.commands())
            .await?;
        Ok(entries.into_iter().collect())
    }

    pub(super) async fn hash_delete(&self, map: &str) -> Result<bool, StateError> {
        let deleted: u64 = ::redis::cmd("DEL")
            .arg(self.name("map", map))
            .query_async(&mut self.commands())
            .await?;
        Ok(deleted > 0)
    }
}

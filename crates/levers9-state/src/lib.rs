//! Hot state of the levers9 controlplane: TTL keys, leases, FIFO queues,
//! pub/sub, capacity counters, sets, maps and bounded logs that are fast, shared
//! between controlplane replicas and may expire.
//!
//! One small trait per structure ([`Kv`], [`Leases`], [`Queues`], [`Claims`],
//! [`Maps`], [`PubSub`], [`Capacity`], [`Sets`], [`Logs`]) and [`HotState`],
//! which is all of them with a ping and batched writes. Two implementations
//! pass the same test suite: [`RedisState`] for production and
//! [`MemoryState`] for a single-machine install.
#![forbid(unsafe_code)]

mod amounts;
mod batch;
mod capacity;
mod claims;
mod error;
pub mod keys;
mod kv;
mod leases;
mod logs;
mod maps;
mod memory;
mod pubsub;
mod queues;
mod redis;
mod sets;

pub use crate::batch::{Reservation, Reserve, Write};
pub use crate::capacity::Capacity;
pub use crate::claims::Claims;
pub use crate::error::StateError;
pub use crate::kv::Kv;
pub use crate::leases::Leases;
pub use crate::logs::Logs;
pub use crate::maps::{MapPut, Maps};
pub use crate::memory::MemoryState;
pub use crate::pubsub::PubSub;
pub use crate::queues::Queues;
pub use crate::redis::RedisState;
pub use crate::sets::Sets;

/// Fast, shared, possibly expiring state: every structure at once, for a
/// caller that needs several; one that needs one structure takes just that
/// trait (e.g. `&dyn Capacity`). Keys, leases, queues, channels, capacity
/// records, sets, maps and logs are separate namespaces, so one name may be
/// used for each without collisions.
#[async_trait::async_trait]
pub trait HotState:
    Kv + Leases + Queues + Claims + Maps + PubSub + Capacity + Sets + Logs + Send + Sync + 'static
{
    /// "redis" or "memory", for the start-up log.
    fn backend(&self) -> &'static str;

    /// A cheap round trip, for readiness checks.
    async fn ping(&self) -> Result<(), StateError>;

    /// Applies the writes in their order, in one round trip. Not atomic as a
    /// whole: each write is, and after an error the writes before it may
    /// have been applied (as with the single calls one after another).
    async fn write_batch(&self, writes: &[Write]) -> Result<(), StateError>;
}

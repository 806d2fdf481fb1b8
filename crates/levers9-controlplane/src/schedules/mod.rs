//! Schedules: deployed functions the controlplane calls on its own, with no
//! arguments, at every tick of a cron expression or a period (UTC).
//!
//! A deploy names each function's schedule; the store keeps one row per
//! scheduled function with its spec, its last fired tick and its next one
//! (see `levers9-store`'s `0008_schedules.sql`). One loop, on the replica
//! that holds the `schedules` lease, fires the due rows ([`firer`]); the
//! tick logic itself is in [`ticks`].

pub mod firer;
pub mod spec;
pub mod ticks;

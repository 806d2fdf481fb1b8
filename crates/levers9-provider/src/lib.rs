//! Where a pool's workers come from. A [`WorkerProvider`] adds, removes and
//! lists one pool's workers (Kubernetes Jobs, local processes); [`reconcile`]
//! is the one round that brings any provider to the number of workers
//! wanted.
#![forbid(unsafe_code)]

mod reconcile;

pub use reconcile::{reconcile, Round};

use std::time::SystemTime;

/// Where one provided worker stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Phase {
    /// Being removed: counts for nothing, needs nothing.
    Terminating,
    /// Its worker exited: remove it, so what it holds goes too.
    Finished,
    /// Its worker is up.
    Running,
    /// Not up yet (scheduling, pulling, starting).
    Pending,
}

/// One worker as its provider lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvidedWorker {
    /// The provider's name for it, what [`WorkerProvider::remove_worker`] takes.
    pub name: String,
    /// Where it stands.
    pub phase: Phase,
    /// When it was added, where known: extra workers go newest first.
    pub started: Option<SystemTime>,
}

/// One pool's source of workers.
#[async_trait::async_trait]
pub trait WorkerProvider: Send + Sync {
    /// What a request to the provider can fail with.
    type Error: std::error::Error + Send + Sync + 'static;

    /// The pool, for log lines.
    fn pool(&self) -> &str;

    /// The pool's workers, in every phase.
    async fn list(&self) -> Result<Vec<ProvidedWorker>, Self::Error>;

    /// Starts one more worker; it shows in [`Self::list`] at once.
    async fn add_worker(&self) -> Result<(), Self::Error>;

    /// Removes worker `name`: a running one is asked to drain and stop; a
    /// finished one is cleaned up. One already gone is no error.
    async fn remove_worker(&self, name: &str) -> Result<(), Self::Error>;

    /// Called when this controlplane stops managing the pool: it stops, or
    /// another replica holds the pool now. Workers another replica can
    /// manage (a cluster's Jobs) stay: the default does nothing.
    async fn stop(&self) {}
}

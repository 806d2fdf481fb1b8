//! What the fleet tells whoever runs work in its containers (the function
//! dispatcher): a container ended, a worker started or stopped draining.

use levers9_state::StateError;

/// One thing the fleet tells.
#[derive(Debug, Clone, PartialEq)]
pub enum FleetNotice {
    /// A container reached a final state.
    ContainerEnded {
        /// The container.
        container_id: String,
    },
    /// A worker started draining (its containers take no new inputs and
    /// stop once idle), or stopped.
    Drain {
        /// The worker.
        worker_id: String,
        /// Whether it drains from now on.
        draining: bool,
    },
}

/// Who hears the fleet's notices.
#[async_trait::async_trait]
pub trait NoticeSink: Send + Sync {
    /// Delivers a notice (through the hot state when the one who hears it
    /// runs elsewhere).
    async fn tell(&self, notice: FleetNotice) -> Result<(), StateError>;
}

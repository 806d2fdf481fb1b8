//! Draining a worker: its warm containers take no new inputs, finish what
//! they hold and stop; their stubs' queues get containers elsewhere.

use super::Dispatcher;
use crate::functions::FunctionError;

impl Dispatcher {
    /// Starts or ends the drain of `worker_id`.
    pub(super) async fn drain(
        &mut self,
        worker_id: String,
        draining: bool,
    ) -> Result<(), FunctionError> {
        let mut touched = Vec::new();
        for (stub_id, stub) in &mut self.stubs {
            for warm in stub.warm.values_mut() {
                if warm.worker_id == worker_id && warm.draining != draining {
                    warm.draining = draining;
                    touched.push(stub_id.clone());
                }
            }
        }
        if draining {
            tracing::info!(%worker_id, "draining: its function containers take no new inputs");
            self.draining.insert(worker_id);
        } else {
            self.draining.remove(&worker_id);
        }
        self.stop_idle().await;
        touched.dedup();
        for stub_id in touched {
            self.pump(&stub_id).await?;
        }
        Ok(())
    }
}

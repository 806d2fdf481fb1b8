//! Stopping gracefully (SIGTERM, a spot reclaim notice, a node drain): the
//! worker asks the controlplane to drain it, so nothing new comes and its
//! function containers finish their inputs and stop; after `drain_grace`
//! what still runs is stopped while the stream is up, so its end reaches
//! the controlplane and the inputs it held are handed back to run elsewhere.

use std::time::{Duration, Instant};

use levers9_api::v1::DrainWorkerRequest;
use tokio::sync::watch;

use crate::supervisor::Supervisor;
use crate::WorkerOptions;

/// How long a container stopped at the end of the grace gets before SIGKILL.
const STOP_GRACE: Duration = Duration::from_secs(5);
/// Time for the last container events to leave on the stream.
const FLUSH: Duration = Duration::from_millis(500);
/// How often the running containers are counted while draining.
const POLL: Duration = Duration::from_millis(200);

/// Waits for `stopped`, drains, then tells the session to end.
pub async fn on_stop(
    options: WorkerOptions,
    supervisor: Supervisor,
    mut stopped: watch::Receiver<bool>,
    end_session: watch::Sender<bool>,
) {
    if stopped.wait_for(|s| *s).await.is_err() {
        return;
    }
    let grace = options.drain_grace;
    let running = supervisor.running().len();
    tracing::info!(
        running,
        grace_seconds = grace.as_secs(),
        "stopping: draining this worker"
    );
    if running > 0 && !grace.is_zero() {
        match ask_drain(&options).await {
            Ok(()) => {
                let deadline = Instant::now() + grace;
                while !supervisor.running().is_empty() && Instant::now() < deadline {
                    tokio::time::sleep(POLL).await;
                }
            }
            Err(error) => {
                tracing::warn!(%error, "the controlplane did not take the drain; stopping at once")
            }
        }
    }
    let left = supervisor.running().len();
    if left > 0 {
        tracing::info!(
            containers = left,
            "drain grace over: stopping what still runs"
        );
    }
    supervisor.stop_all(STOP_GRACE).await;
    tokio::time::sleep(FLUSH).await;
    let _ = end_session.send(true);
}

async fn ask_drain(options: &WorkerOptions) -> Result<(), String> {
    let mut client = crate::session::connect(options)
        .await
        .map_err(|e| e.to_string())?;
    client
        .drain_worker(DrainWorkerRequest {
            worker_id: options.worker_id.clone(),
        })
        .await
        .map_err(|s| s.message().to_owned())?;
    Ok(())
}

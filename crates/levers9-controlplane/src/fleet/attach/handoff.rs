//! What a run request gets just before it goes to its worker, and never
//! has stored: opened secrets, registry credentials for a build, the
//! workspace's volume storage credentials. A request that cannot get them
//! fails its container instead of being sent.

use levers9_api::v1::RunContainer;

use crate::fleet::{Fleet, FleetError};
use crate::sealing::SecretOpener;

/// Adds the opened secrets of a run request to its environment, just before
/// it goes to the worker: they are never stored opened. On failure the
/// container fails with the reason, its capacity is released, and false is
/// returned.
pub(super) async fn open_secrets(
    fleet: &Fleet,
    secrets: &SecretOpener,
    worker_id: &str,
    run: &mut RunContainer,
) -> bool {
    let names = std::mem::take(&mut run.secret_names);
    if names.is_empty() {
        return true;
    }
    match secrets.open(&run.workspace_id, &names).await {
        Ok(opened) => {
            run.env.extend(opened);
            true
        }
        Err(reason) => {
            fail_unsent(fleet, worker_id, run, reason).await;
            false
        }
    }
}

/// The builder's variable for its registry credentials (docker config JSON),
/// which it takes out of its environment before any build step runs.
const REGISTRY_AUTH_ENV: &str = "LEVERS9_REGISTRY_AUTH";

/// Adds the credentials of the registries a run request names (an image
/// build's) to its environment, just before it goes to the worker: they are
/// never stored with the container. On failure (an ECR token that cannot be
/// had) the container fails with the reason and false is returned.
pub(super) async fn open_registry_auth(
    fleet: &Fleet,
    worker_id: &str,
    run: &mut RunContainer,
) -> bool {
    let hosts = std::mem::take(&mut run.registry_auth_hosts);
    if hosts.is_empty() {
        return true;
    }
    match fleet.registry_keychain().docker_config_for(&hosts).await {
        Ok(auth) => {
            if let Some(auth) = auth {
                run.env.insert(REGISTRY_AUTH_ENV.to_owned(), auth);
            }
            true
        }
        Err(error) => {
            let reason = format!("cannot get the registry credentials for this build: {error}");
            fail_unsent(fleet, worker_id, run, reason).await;
            false
        }
    }
}

/// Adds the workspace's own storage credentials to a run request with
/// volumes, just before it goes to the worker, which mounts the
/// workspace's file system with them. A workspace without credentials
/// keeps the shared file system. On failure the container fails with the
/// reason and false is returned.
pub(super) async fn open_volume_storage(
    fleet: &Fleet,
    secrets: &SecretOpener,
    worker_id: &str,
    run: &mut RunContainer,
) -> bool {
    if run.volumes.is_empty() || !fleet.workspace_volume_storage() {
        return true;
    }
    match secrets.open_storage(&run.workspace_id).await {
        Ok(credentials) => {
            run.volume_storage = credentials;
            true
        }
        Err(error) => {
            let reason = format!("cannot mount the workspace's volumes: {error}");
            fail_unsent(fleet, worker_id, run, reason).await;
            false
        }
    }
}

/// Fails a container whose run request cannot be sent, and releases its
/// capacity.
async fn fail_unsent(fleet: &Fleet, worker_id: &str, run: &RunContainer, reason: String) {
    let result = async {
        if let Some(mut container) = fleet.container(&run.container_id).await? {
            fleet.release(worker_id, &container).await?;
            crate::scheduler::fail(fleet, &mut container, reason).await?;
        }
        Ok::<(), FleetError>(())
    }
    .await;
    if let Err(error) = result {
        tracing::error!(%error, container_id = %run.container_id, "cannot fail a container whose run request cannot be sent");
    }
}

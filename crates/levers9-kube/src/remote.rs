//! The client of a `provider: kubernetes` pool: another cluster's API
//! server, reached with a service-account token from a file, or, with no
//! `apiServer`, the controlplane's own cluster with its own service account
//! (the Helm chart's Role in the worker namespace). The token is handed to
//! kube-rs by path, which reads it again when it changes; it is never in a
//! log line or an error.

use std::time::Duration;

use kube::{Client, Config};
use levers9_config::PoolKubernetes;

use crate::KubeError;

/// How long a request to the cluster may take: a reconcile round is cheap,
/// and an unreachable cluster must not stall the next one.
const REQUEST_DEADLINE: Duration = Duration::from_secs(20);

/// A client for the cluster `keys` name, in their namespace.
pub fn client(pool: &str, keys: &PoolKubernetes) -> Result<Client, KubeError> {
    crate::install_tls_provider();
    let mut config = if keys.api_server.is_empty() {
        Config::incluster().map_err(|source| KubeError::InCluster {
            pool: pool.to_owned(),
            source: Box::new(source),
        })?
    } else {
        remote_config(pool, keys)?
    };
    config.default_namespace = keys.namespace.clone();
    config.connect_timeout = Some(REQUEST_DEADLINE);
    config.read_timeout = Some(REQUEST_DEADLINE);
    config.write_timeout = Some(REQUEST_DEADLINE);
    Client::try_from(config).map_err(|source| KubeError::Client {
        pool: pool.to_owned(),
        source: Box::new(source),
    })
}

fn remote_config(pool: &str, keys: &PoolKubernetes) -> Result<Config, KubeError> {
    let url = keys.api_server.parse().map_err(|_| KubeError::ApiServer {
        pool: pool.to_owned(),
        api_server: keys.api_server.clone(),
    })?;
    let mut config = Config::new(url);
    if !keys.ca_cert_file.is_empty() {
        config.root_cert_file = Some(keys.ca_cert_file.clone().into());
    }
    config.auth_info.token_file = Some(keys.token_file.clone());
    Ok(config)
}

/// The reconciler of `provider: kubernetes` pool `name`: its worker Jobs in
/// `kubernetes.namespace`, running `kubernetes.workerImage` against
/// `kubernetes.controlplaneAddress`, with the token from
/// `kubernetes.workerTokenSecret` and the worker-wide keys `wide`;
/// resources requested with `worker.jobResourcesEnforced`.
pub fn provider_reconciler(
    client: Client,
    name: &str,
    pool: &levers9_config::PoolConfig,
    job_resources_enforced: bool,
    wide: &crate::WorkerWide,
) -> crate::Reconciler {
    let worker = provider_worker(name, pool, job_resources_enforced);
    crate::Reconciler::with_worker_wide(client, &pool.kubernetes.namespace, &worker, wide)
}

/// The worker Job of `provider: kubernetes` pool `name`, from its
/// `kubernetes` keys: what [`provider_reconciler`] creates with
/// [`crate::WorkerJob::job_with`].
pub fn provider_worker<'a>(
    name: &'a str,
    pool: &'a levers9_config::PoolConfig,
    job_resources_enforced: bool,
) -> crate::WorkerJob<'a> {
    let keys = &pool.kubernetes;
    crate::WorkerJob {
        pool: name,
        config: pool,
        request_resources: job_resources_enforced,
        image: &keys.worker_image,
        controlplane: &keys.controlplane_address,
        token_secret: &keys.worker_token_secret,
        attached_cluster: false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_remote_cluster_needs_a_url() {
        let keys = PoolKubernetes {
            api_server: "https://exa mple".into(),
            token_file: "/var/run/secrets/gke/token".into(),
            ..PoolKubernetes::default()
        };
        let Err(error) = client("gke", &keys) else {
            panic!("a URL with a space was taken");
        };
        let error = error.to_string();
        assert!(error.contains("use https://HOST[:PORT]"), "{error}");
    }

    #[tokio::test]
    async fn a_remote_client_reads_its_token_file_and_never_shows_it() {
        let token = tempfile::NamedTempFile::new().expect("token file");
        std::fs::write(token.path(), "eyJhbGciOi-secret-token").expect("write");
        let mut keys = PoolKubernetes {
            api_server: "https://203.0.113.10".into(),
            token_file: token.path().display().to_string(),
            namespace: "gpu-workers".into(),
            ..PoolKubernetes::default()
        };
        let client = client("gke", &keys).expect("client");
        assert_eq!(client.default_namespace(), "gpu-workers");

        keys.token_file = "/nonexistent/token".into();
        let Err(error) = super::client("gke", &keys) else {
            panic!("a missing token file was taken");
        };
        let error = format!("{error} {error:?}");
        assert!(error.contains("/nonexistent/token"), "{error}");
        assert!(!error.contains("eyJhbGciOi"), "{error}");
    }
}

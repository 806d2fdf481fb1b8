//! levers9 on Kubernetes: the worker Job of a pool (with the worker-wide
//! keys it carries), the reconciler that keeps a pool's Jobs at the number
//! of workers wanted, the client of a `provider: kubernetes` pool and its
//! worker token Secret, and the manifests that attach a cluster.
#![forbid(unsafe_code)]

mod apply;
pub mod attach;
pub mod job;
pub mod reconcile;
pub mod remote;
pub mod worker_token;
pub mod worker_wide;

pub use attach::{AttachedCluster, AGENT_NAME};
pub use job::{pool_selector, WorkerJob};
pub use levers9_provider::Round;
pub use reconcile::Reconciler;
pub use worker_token::WorkerTokenSecret;
pub use worker_wide::WorkerWide;

/// A client from the user's kubeconfig, or in a pod its service account
/// (kube-rs's own order).
pub async fn default_client() -> Result<kube::Client, kube::Error> {
    install_tls_provider();
    kube::Client::try_default().await
}

/// Makes ring the process's rustls provider unless one is set. Every
/// kube client of this crate is made after it: with both ring and
/// aws-lc-rs compiled in (other dependencies bring the latter), rustls
/// panics rather than pick one.
pub(crate) fn install_tls_provider() {
    // An error only says a provider is installed already: that one serves.
    let _ = rustls::crypto::ring::default_provider().install_default();
}

/// What can go wrong talking to a cluster. kube's errors are boxed: they
/// are large, and every `Result` of this crate would carry their size.
#[derive(Debug, thiserror::Error)]
pub enum KubeError {
    /// The API server refused or did not answer a request on worker Jobs.
    #[error("cannot {verb} worker Jobs of pool {pool} in namespace {namespace}: {source}")]
    Jobs {
        /// list, create or delete.
        verb: &'static str,
        /// The pool's name (a key of `worker.pools`).
        pool: String,
        /// Where the pool's Jobs are (its `kubernetes.namespace`).
        namespace: String,
        /// The API's answer.
        #[source]
        source: Box<kube::Error>,
    },
    /// `worker.pools.<pool>.kubernetes.apiServer` is no URL.
    #[error(
        "worker.pools.{pool}.kubernetes.apiServer is {api_server:?}, which is not a URL: \
         use https://HOST[:PORT]"
    )]
    ApiServer {
        /// The pool's name (a key of `worker.pools`).
        pool: String,
        /// What was configured.
        api_server: String,
    },
    /// No `apiServer`, and the controlplane is not in a pod.
    #[error(
        "pool {pool} has provider: kubernetes and no kubernetes.apiServer, so it uses the \
         controlplane's own cluster, but the controlplane is not running in one ({source}): set \
         worker.pools.{pool}.kubernetes.apiServer and tokenFile (docs/gke.md)"
    )]
    InCluster {
        /// The pool's name (a key of `worker.pools`).
        pool: String,
        /// Why.
        #[source]
        source: Box<kube::config::InClusterError>,
    },
    /// The client could not be built (CA file, TLS setup).
    #[error("cannot make a Kubernetes client for pool {pool}: {source}")]
    Client {
        /// The pool's name (a key of `worker.pools`).
        pool: String,
        /// Why.
        #[source]
        source: Box<kube::Error>,
    },
    /// Applying one of an attached cluster's manifests failed.
    #[error("cannot apply {kind} {name}: {source}")]
    Apply {
        /// The manifest's Kubernetes kind, e.g. `Deployment` (`object` for a
        /// kind not known when compiling).
        kind: &'static str,
        /// The manifest's `metadata.name`; empty if it has none.
        name: String,
        /// The API's answer.
        #[source]
        source: Box<kube::Error>,
    },
    /// The worker token Secret of a pool could not be read or written.
    #[error(
        "cannot {verb} the worker token Secret {namespace}/{name}: {source}. The controlplane \
         keeps it: its service account needs get, create and patch on secrets named {name} \
         in {namespace} (the chart's worker Role has them)"
    )]
    TokenSecret {
        /// read or write.
        verb: &'static str,
        /// The Secret.
        name: String,
        /// The namespace of the Secret, the pool's `kubernetes.namespace`.
        namespace: String,
        /// The API's answer (never the token: it is only in the request).
        #[source]
        source: Box<kube::Error>,
    },
    /// A manifest could not be written as YAML.
    #[error("cannot write the manifests as YAML: {0}")]
    Yaml(#[from] serde_yaml::Error),
}

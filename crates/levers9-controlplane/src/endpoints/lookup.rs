//! Which stub serves an endpoint name, or a name pinned to a version of its
//! app, cached briefly: a request should cost no database round trip more
//! than a `.remote()` does.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use levers9_store::{EndpointRecord, FunctionStore};
use levers9_sync::Lock;

use crate::error::ApiError;
use crate::functions::spec::StubSpec;

/// How long a found endpoint is served from memory: a redeploy reaches the
/// replicas that did not take it within this time.
const TTL: Duration = Duration::from_secs(2);
/// Entries past this count trigger a sweep of expired ones.
const SWEEP_ABOVE: usize = 10_000;

/// An endpoint with what serving it needs from its stub.
#[derive(Debug, Clone)]
pub(super) struct Resolved {
    pub record: EndpointRecord,
    /// The stub's time per input.
    pub timeout: Duration,
}

/// What a name pinned to a version (`name@3`) finds, when the name is
/// served now.
#[derive(Debug, Clone)]
pub(super) enum Pinned {
    /// The endpoint as that version of its app set it.
    Found(Resolved),
    /// That version of the app serving the name now did not serve it.
    Missing {
        /// The endpoint as the app serving the name now set it: the caller is
        /// authorized against it before being told the version is missing.
        current: Resolved,
        /// The versions of its app that served it, ascending.
        versions: Vec<u32>,
    },
}

/// The key of a cached endpoint: workspace name, endpoint name, and the
/// version it is pinned to (None: the current one).
type Key = (String, String, Option<u32>);

/// Endpoints by [`Key`]. Unknown names and versions are never cached, so
/// guessing cannot fill it.
pub(super) struct Endpoints {
    functions: Arc<dyn FunctionStore>,
    entries: Lock<HashMap<Key, (Instant, Resolved)>>,
}

impl Endpoints {
    pub(super) fn new(functions: Arc<dyn FunctionStore>) -> Self {
        Self {
            functions,
            entries: Lock::new(HashMap::new()),
        }
    }

    /// The endpoint `name` of the workspace named `workspace`, if any.
    pub(super) async fn find(
        &self,
        workspace: &str,
        name: &str,
    ) -> Result<Option<Resolved>, ApiError> {
        let key = (workspace.to_owned(), name.to_owned(), None);
        if let Some(resolved) = self.cached(&key) {
            return Ok(Some(resolved));
        }
        let Some(record) = self.functions.find_endpoint(workspace, name).await? else {
            return Ok(None);
        };
        Ok(Some(self.resolve(key, record).await?))
    }

    /// The endpoint `name` of the workspace named `workspace` as `version`
    /// of the app that serves it now set it; None when no app serves the
    /// name now.
    pub(super) async fn find_pinned(
        &self,
        workspace: &str,
        name: &str,
        version: u32,
    ) -> Result<Option<Pinned>, ApiError> {
        let key = (workspace.to_owned(), name.to_owned(), Some(version));
        if let Some(resolved) = self.cached(&key) {
            return Ok(Some(Pinned::Found(resolved)));
        }
        let Some(current) = self.find(workspace, name).await? else {
            return Ok(None);
        };
        let (workspace_id, app_name) = (&current.record.workspace_id, &current.record.app_name);
        let pinned = if current.record.version == version {
            Some(current.record.clone())
        } else {
            self.functions
                .find_endpoint_version(workspace_id, app_name, name, version)
                .await?
        };
        match pinned {
            Some(record) => Ok(Some(Pinned::Found(self.resolve(key, record).await?))),
            None => {
                let versions = self
                    .functions
                    .endpoint_versions(workspace_id, app_name, name)
                    .await?;
                Ok(Some(Pinned::Missing { current, versions }))
            }
        }
    }

    /// The entry under `key` if it is fresh.
    fn cached(&self, key: &Key) -> Option<Resolved> {
        let entries = self.entries.lock();
        let (at, resolved) = entries.get(key)?;
        (at.elapsed() < TTL).then(|| resolved.clone())
    }

    /// `record` with its stub's timeout, cached under `key`.
    async fn resolve(&self, key: Key, record: EndpointRecord) -> Result<Resolved, ApiError> {
        let stub = self
            .functions
            .get_stub(&record.workspace_id, &record.stub_id)
            .await?
            .ok_or_else(|| {
                ApiError::Corrupt(format!(
                    "endpoint {:?} names stub {}, which is missing",
                    record.name, record.stub_id
                ))
            })?;
        let spec = StubSpec::from_json(&stub.id, &stub.config_json)?;
        let resolved = Resolved {
            record,
            timeout: Duration::from_secs(spec.timeout_seconds.into()),
        };
        let now = Instant::now();
        let mut entries = self.entries.lock();
        if entries.len() > SWEEP_ABOVE {
            entries.retain(|_, (at, _)| now.duration_since(*at) < TTL);
        }
        entries.insert(key, (now, resolved.clone()));
        Ok(resolved)
    }
}

//! Which stub serves an endpoint name, cached briefly: a request should cost
//! no database round trip more than a `.remote()` does.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use levers9_store::{EndpointRecord, FunctionStore};

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

/// Endpoints by (workspace name, endpoint name). Unknown names are never
/// cached, so guessing cannot fill it.
pub(super) struct Endpoints {
    functions: Arc<dyn FunctionStore>,
    entries: Mutex<HashMap<(String, String), (Instant, Resolved)>>,
}

impl Endpoints {
    pub(super) fn new(functions: Arc<dyn FunctionStore>) -> Self {
        Self {
            functions,
            entries: Mutex::new(HashMap::new()),
        }
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(String, String), (Instant, Resolved)>> {
        // Every write is a single insert or retain, so a panic elsewhere
        // cannot leave the map half-changed.
        self.entries.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The endpoint `name` of the workspace named `workspace`, if any.
    pub(super) async fn find(
        &self,
        workspace: &str,
        name: &str,
    ) -> Result<Option<Resolved>, ApiError> {
        let key = (workspace.to_owned(), name.to_owned());
        let now = Instant::now();
        if let Some((at, resolved)) = self.lock().get(&key) {
            if now.duration_since(*at) < TTL {
                return Ok(Some(resolved.clone()));
            }
        }
        let Some(record) = self.functions.find_endpoint(workspace, name).await? else {
            return Ok(None);
        };
        let stub = self
            .functions
            .get_stub(&record.workspace_id, &record.stub_id)
            .await?
            .ok_or_else(|| {
                ApiError::Corrupt(format!(
                    "endpoint {name:?} names stub {}, which is missing",
                    record.stub_id
                ))
            })?;
        let spec = StubSpec::from_json(&stub.id, &stub.config_json)?;
        let resolved = Resolved {
            record,
            timeout: Duration::from_secs(spec.timeout_seconds.into()),
        };
        let mut entries = self.lock();
        if entries.len() > SWEEP_ABOVE {
            entries.retain(|_, (at, _)| now.duration_since(*at) < TTL);
        }
        entries.insert(key, (now, resolved.clone()));
        Ok(Some(resolved))
    }
}

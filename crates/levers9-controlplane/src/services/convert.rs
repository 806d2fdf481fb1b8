//! Records to API messages.

use chrono::{DateTime, Utc};
use levers9_api::v1;
use levers9_store::{DeploymentRecord, StubRecord, TaskRecord, TokenRecord, Workspace};

use crate::error::ApiError;
use crate::functions::spec::StubSpec;
use crate::{rfc3339, wire_states};

fn rfc3339_or_empty(at: Option<DateTime<Utc>>) -> String {
    at.map(rfc3339).unwrap_or_default()
}

pub(super) fn token(record: TokenRecord) -> v1::Token {
    v1::Token {
        id: record.id,
        workspace_id: record.workspace_id,
        token_type: record.token_type.to_string(),
        description: record.description,
        created_at: rfc3339(record.created_at),
        last_used_at: rfc3339_or_empty(record.last_used_at),
        revoked_at: rfc3339_or_empty(record.revoked_at),
    }
}

pub(super) fn workspace(record: Workspace) -> v1::Workspace {
    v1::Workspace {
        id: record.id,
        name: record.name,
        created_at: rfc3339(record.created_at),
    }
}

pub(super) fn secret(
    name: &str,
    key_id: &str,
    created_at: DateTime<Utc>,
    updated_at: DateTime<Utc>,
) -> v1::Secret {
    v1::Secret {
        name: name.to_owned(),
        key_id: key_id.to_owned(),
        created_at: rfc3339(created_at),
        updated_at: rfc3339(updated_at),
    }
}

pub(super) fn attempt(a: &levers9_store::AttemptRecord) -> v1::TaskAttempt {
    v1::TaskAttempt {
        attempt: a.attempt,
        container_id: a.container_id.clone(),
        worker_id: a.worker_id.clone(),
        started_at: rfc3339(a.started_at),
        ended_at: rfc3339_or_empty(a.ended_at),
        outcome: wire_states::attempt_outcome(a.outcome).into(),
        message: a.message.clone(),
    }
}

/// Env values are shown: they are the caller's own settings, and secrets
/// travel by name (`secrets`), never in `env`.
pub(super) fn stub(s: &StubRecord) -> Result<v1::Stub, ApiError> {
    let spec = StubSpec::from_json(&s.id, &s.config_json)?;
    Ok(v1::Stub {
        stub_id: s.id.clone(),
        name: s.name.clone(),
        module_path: s.module_path.clone(),
        function_name: s.function_name.clone(),
        config: Some(spec.to_config()),
        created_at: rfc3339(s.created_at),
    })
}

pub(super) fn deployment(d: &DeploymentRecord) -> v1::Deployment {
    v1::Deployment {
        app_name: d.app_name.clone(),
        function_name: d.function_name.clone(),
        stub_id: d.stub_id.clone(),
        version: d.version,
        deployed_by: d.deployed_by.clone(),
        created_at: rfc3339(d.created_at),
    }
}

pub(super) fn task(t: &TaskRecord) -> v1::Task {
    v1::Task {
        task_id: t.id.clone(),
        stub_id: t.stub_id.clone(),
        function_name: t.function_name.clone(),
        state: wire_states::task_state(t.state).into(),
        attempts: t.attempts,
        container_id: t.container_id.clone(),
        worker_id: t.worker_id.clone(),
        message: t.message.clone(),
        created_at: rfc3339(t.created_at),
        started_at: rfc3339_or_empty(t.started_at),
        ended_at: rfc3339_or_empty(t.ended_at),
    }
}

//! What DictService and QueueService share: the registry of a workspace's
//! named dicts and queues, name rules and limits.
//!
//! Everything lives in the hot state. The registry of a kind is a map per
//! workspace (`objects:<workspace>:<kind>`, name to creation time), and an
//! object's contents sit beside it under `object:<workspace>:<name>` (a map
//! for a dict, a queue for a queue). Every key carries the workspace id, so
//! a name can only ever reach the caller's own workspace's object; a name
//! that is not in the caller's registry answers NOT_FOUND whoever owns it
//! elsewhere. The registry lives with the contents rather than in the record
//! store so that both are lost together (a flushed Redis, a restarted
//! embedded controlplane): a durable registry would outlive its contents and
//! list objects that silently came back empty.

use chrono::{DateTime, SecondsFormat, Utc};
use levers9_api::v1::NamedObject;
use levers9_api::CONTAINER_ID_METADATA;
use levers9_config::ObjectsConfig;
use levers9_state::{keys, HotState, MapPut};
use levers9_store::TokenType;

use crate::auth;
use crate::error::ApiError;
use crate::Shared;

const MAX_NAME_LEN: usize = 64;

/// A kind of named object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    Dict,
    Queue,
}

impl Kind {
    fn label(self) -> &'static str {
        match self {
            Kind::Dict => "dict",
            Kind::Queue => "queue",
        }
    }

    fn class(self) -> &'static str {
        match self {
            Kind::Dict => "Dict",
            Kind::Queue => "Queue",
        }
    }
}

/// The named objects of one kind in one workspace.
pub(crate) struct Objects<'a> {
    pub state: &'a dyn HotState,
    pub limits: &'a ObjectsConfig,
    pub workspace_id: &'a str,
    pub kind: Kind,
}

impl Objects<'_> {
    fn registry(&self) -> String {
        keys::object_registry(self.workspace_id, self.kind.label())
    }

    /// Where the contents of the object `name` are: a map key for a dict,
    /// a queue name for a queue.
    pub(crate) fn contents(&self, name: &str) -> String {
        keys::object(self.workspace_id, name)
    }

    /// The object by name, created first with `create`; whether this call
    /// created it.
    pub(crate) async fn look_up(
        &self,
        name: &str,
        create: bool,
    ) -> Result<(NamedObject, bool), ApiError> {
        validate_name(self.kind, name)?;
        let mut created = false;
        if create {
            let now = Utc::now().timestamp_millis().to_string();
            let entry = (name.as_bytes().to_vec(), now.into_bytes());
            match self
                .state
                .map_put(
                    &self.registry(),
                    &[entry],
                    self.limits.max_per_workspace,
                    true,
                )
                .await?
            {
                MapPut::Stored { added } => created = added > 0,
                MapPut::Full { len } => {
                    return Err(ApiError::ResourceExhausted(format!(
                        "this workspace has {len} {kind}s, its limit \
                         (controlplane.objects.maxPerWorkspace is {limit}): delete some with \
                         `levers9 {kind} delete NAME`",
                        kind = self.kind.label(),
                        limit = self.limits.max_per_workspace,
                    )))
                }
            }
        }
        let created_at = self
            .state
            .map_get(&self.registry(), name.as_bytes())
            .await?
            .ok_or_else(|| self.not_found(name))?;
        let len = self.len(name).await?;
        Ok((described(name, &created_at, len), created))
    }

    /// NOT_FOUND unless the workspace has the object.
    pub(crate) async fn require(&self, name: &str) -> Result<(), ApiError> {
        validate_name(self.kind, name)?;
        match self
            .state
            .map_get(&self.registry(), name.as_bytes())
            .await?
        {
            Some(_) => Ok(()),
            None => Err(self.not_found(name)),
        }
    }

    /// Every object of the kind, by name.
    pub(crate) async fn list(&self) -> Result<Vec<NamedObject>, ApiError> {
        let mut listed = Vec::new();
        for (name, created_at) in self.state.map_entries(&self.registry()).await? {
            let name = String::from_utf8_lossy(&name).into_owned();
            let len = self.len(&name).await?;
            listed.push(described(&name, &created_at, len));
        }
        Ok(listed)
    }

    /// Deletes the object and its contents.
    pub(crate) async fn delete(&self, name: &str) -> Result<(), ApiError> {
        validate_name(self.kind, name)?;
        // Out of the registry first: from here on calls naming it fail, so
        // nothing refills the contents deleted next.
        if self
            .state
            .map_take(&self.registry(), name.as_bytes())
            .await?
            .is_none()
        {
            return Err(self.not_found(name));
        }
        self.clear(name).await?;
        tracing::info!(workspace_id = %self.workspace_id, kind = self.kind.label(), %name, "named object deleted");
        Ok(())
    }

    /// Entries of a dict, items of a queue.
    pub(crate) async fn len(&self, name: &str) -> Result<u64, ApiError> {
        let contents = self.contents(name);
        Ok(match self.kind {
            Kind::Dict => self.state.map_len(&contents).await?,
            Kind::Queue => self.state.queue_len(&contents).await?,
        })
    }

    /// Empties the object; how many entries or items it held.
    pub(crate) async fn clear(&self, name: &str) -> Result<u64, ApiError> {
        let contents = self.contents(name);
        Ok(match self.kind {
            Kind::Dict => {
                let len = self.state.map_len(&contents).await?;
                self.state.map_delete(&contents).await?;
                len
            }
            Kind::Queue => self.state.queue_delete(&contents).await?,
        })
    }

    /// INVALID_ARGUMENT for a value over `maxValueBytes`; `what` names it.
    pub(crate) fn check_size(&self, what: &str, bytes: usize) -> Result<(), ApiError> {
        let limit = self.limits.max_value_bytes;
        if bytes as u64 > limit {
            return Err(ApiError::InvalidArgument(format!(
                "the {kind} {what} is {bytes} bytes pickled, over the {limit}-byte limit \
                 (controlplane.objects.maxValueBytes): put large data in a Volume and store \
                 its path instead",
                kind = self.kind.label(),
            )));
        }
        Ok(())
    }

    fn not_found(&self, name: &str) -> ApiError {
        ApiError::NotFound(format!(
            "no {kind} {name:?} in this workspace: create it with \
             {class}.from_name({name:?}, create_if_missing=True)",
            kind = self.kind.label(),
            class = self.kind.class(),
        ))
    }
}

/// The workspace a call acts in: the caller's for a workspace or admin
/// token; for a worker token, the workspace of the container it names in
/// `x-levers9-container-id`, which must be one of its own and not ended.
pub(crate) async fn workspace_of<T>(
    shared: &Shared,
    request: &tonic::Request<T>,
    kind: Kind,
) -> Result<String, ApiError> {
    let caller = auth::caller(request)?;
    if caller.token_type != TokenType::Worker {
        caller.require(
            &[TokenType::Admin, TokenType::Workspace],
            &format!("use {}s", kind.label()),
        )?;
        return Ok(caller.workspace.id);
    }
    let container_id = request
        .metadata()
        .get(CONTAINER_ID_METADATA)
        .and_then(|value| value.to_str().ok())
        .ok_or_else(|| {
            ApiError::PermissionDenied(format!(
                "a worker token uses {}s only for one of its containers, named in \
                 {CONTAINER_ID_METADATA}",
                kind.label()
            ))
        })?;
    let not_its_own = || {
        ApiError::PermissionDenied(format!(
            "container {container_id:?} is not a running container of this worker"
        ))
    };
    let container = shared
        .fleet
        .container(container_id)
        .await?
        .ok_or_else(not_its_own)?;
    if container.state.is_final() {
        return Err(not_its_own());
    }
    let worker = shared.fleet.worker(&container.worker_id).await?;
    // Workers that share a token are one principal: each is already trusted
    // with the secrets of every container placed on any of them.
    match worker {
        Some(worker) if worker.token_id == caller.token_id => Ok(container.workspace_id),
        _ => Err(not_its_own()),
    }
}

fn validate_name(kind: Kind, name: &str) -> Result<(), ApiError> {
    let valid = !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if valid {
        return Ok(());
    }
    Err(ApiError::InvalidArgument(format!(
        "invalid {} name {name:?}: use 1 to {MAX_NAME_LEN} letters, digits, '-', '_' or '.', \
         starting with a letter or digit",
        kind.label()
    )))
}

fn described(name: &str, created_at: &[u8], len: u64) -> NamedObject {
    let created_at = std::str::from_utf8(created_at)
        .ok()
        .and_then(|millis| millis.parse().ok())
        .and_then(DateTime::<Utc>::from_timestamp_millis)
        .map(|at| at.to_rfc3339_opts(SecondsFormat::Millis, true))
        .unwrap_or_default();
    NamedObject {
        name: name.to_owned(),
        created_at,
        len,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        for good in ["cache", "a", "jobs-2024.v1_x", &"n".repeat(64)] {
            assert!(validate_name(Kind::Dict, good).is_ok(), "{good}");
        }
        for bad in ["", "-x", ".x", "a b", "a:b", "a/b", &"n".repeat(65)] {
            let error = validate_name(Kind::Queue, bad).unwrap_err().to_string();
            assert!(error.starts_with("invalid queue name"), "{error}");
        }
    }
}

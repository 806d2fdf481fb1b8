//! MachineService: pools made at run time, machines, and the agent's join.

use std::sync::Arc;

use chrono::{DateTime, SecondsFormat, Utc};
use levers9_api::v1::{
    machine_service_server::MachineService, Capacity, CreateMachineRequest, CreateMachineResponse,
    CreatePoolRequest, CreatePoolResponse, DeleteMachineRequest, DeleteMachineResponse,
    DeletePoolRequest, DeletePoolResponse, DrainMachineRequest, DrainMachineResponse,
    JoinMachineRequest, JoinMachineResponse, ListMachinesRequest, ListMachinesResponse,
    ListPoolsRequest, ListPoolsResponse, Machine, Pool,
};
use levers9_store::{
    JoinOutcome, JoinRedemption, MachineRecord, MachineState, NewMachine, PoolRecord,
};
use tonic::{Request, Response, Status};

use crate::auth::bearer_token;
use crate::auth::token::{mint, mint_with_prefix};
use crate::auth::{authorized, ADMINS, USERS};
use crate::error::ApiError;
use crate::machines::{self, PoolView, JOIN_TOKEN_PREFIX};
use crate::{wire_states, Shared};

/// The MachineService implementation.
pub struct MachineApi {
    shared: Arc<Shared>,
}

impl MachineApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// Every pool, config and runtime, by name.
    async fn pools(&self) -> Result<Vec<PoolView>, ApiError> {
        let runtime = self.shared.machines.list_pools().await?;
        Ok(machines::merged_pools(
            self.shared.fleet.pools().configured(),
            runtime,
        ))
    }

    /// A pool by name, or NotFound saying how to make one.
    async fn pool(&self, name: &str) -> Result<PoolView, ApiError> {
        self.pools()
            .await?
            .into_iter()
            .find(|p| p.name == name)
            .ok_or_else(|| {
                ApiError::NotFound(format!(
                    "no pool {name:?}: make one with `levers9 pool create {name}` or add \
                     worker.pools.{name} to the config (levers9 pool list)"
                ))
            })
    }

    async fn machine(&self, id: &str) -> Result<MachineRecord, ApiError> {
        self.shared
            .machines
            .get_machine(id)
            .await?
            .ok_or_else(|| not_found_machine(id))
    }

    async fn view(&self, record: MachineRecord, now: DateTime<Utc>) -> Result<Machine, ApiError> {
        let pending = record.state == MachineState::Pending;
        let connected = !pending && self.shared.fleet.is_alive(&record.id).await?;
        let state = wire_states::machine_state(record.state, record.join_expires_at <= now);
        Ok(Machine {
            capacity: serde_json::from_str::<Capacity>(&record.capacity).ok(),
            machine_id: record.id,
            pool: record.pool,
            state: state.into(),
            hostname: record.hostname,
            created_at: rfc3339(record.created_at),
            join_expires_at: rfc3339(record.join_expires_at),
            joined_at: record.join_used_at.map(rfc3339).unwrap_or_default(),
            connected,
        })
    }

    /// Drains the machine's worker where it is registered.
    async fn drain_worker(&self, machine_id: &str) -> Result<u32, ApiError> {
        let fleet = &self.shared.fleet;
        if fleet.worker(machine_id).await?.is_none() {
            return Ok(0);
        }
        fleet.set_draining(machine_id, true).await?;
        let containers = fleet.worker_containers(machine_id).await?.len();
        Ok(u32::try_from(containers).unwrap_or(u32::MAX))
    }
}

fn rfc3339(at: DateTime<Utc>) -> String {
    at.to_rfc3339_opts(SecondsFormat::Secs, true)
}

fn not_found_machine(id: &str) -> ApiError {
    ApiError::NotFound(format!("no machine {id:?}: see `levers9 machine list`"))
}

fn pool_message(view: PoolView, machines: u32) -> Pool {
    Pool {
        name: view.name,
        source: view.source.to_owned(),
        runtime: view.runtime,
        gpu_type: view.gpu_type,
        created_at: view.created_at.map(rfc3339).unwrap_or_default(),
        machines,
    }
}

/// Why a join token does not work, with what to do.
fn join_refusal(outcome: &JoinOutcome) -> ApiError {
    match outcome {
        JoinOutcome::AlreadyUsed(m) => ApiError::FailedPrecondition(format!(
            "join token already used: run `levers9 machine create --pool {}` again for a new one",
            m.pool
        )),
        JoinOutcome::Expired(m) => ApiError::FailedPrecondition(format!(
            "join token expired at {}: run `levers9 machine create --pool {}` again for a new one",
            rfc3339(m.join_expires_at),
            m.pool
        )),
        JoinOutcome::Unknown | JoinOutcome::Joined(_) => ApiError::Unauthenticated(
            "unknown join token: it was never issued or its machine was deleted; run \
             `levers9 machine create --pool NAME` for a new one"
                .into(),
        ),
    }
}

#[tonic::async_trait]
impl MachineService for MachineApi {
    async fn create_pool(
        &self,
        request: Request<CreatePoolRequest>,
    ) -> Result<Response<CreatePoolResponse>, Status> {
        authorized(&request, ADMINS, "create pools")?;
        let body = request.into_inner();
        machines::validate_pool_name(&body.name)?;
        if self.shared.fleet.pools().contains(&body.name) {
            return Err(ApiError::FailedPrecondition(format!(
                "pool {0:?} is defined in the config (worker.pools.{0}), which stays \
                 authoritative for it: pick another name",
                body.name
            ))
            .into());
        }
        let runtime = match body.runtime.as_str() {
            "" | "runc" => "runc",
            "gvisor" => "gvisor",
            other => {
                return Err(ApiError::InvalidArgument(format!(
                    "unknown runtime {other:?}: use runc or gvisor"
                ))
                .into())
            }
        };
        let stored = self
            .shared
            .machines
            .insert_pool(PoolRecord {
                name: body.name,
                runtime: runtime.to_owned(),
                gpu_type: body.gpu_type,
                created_at: Utc::now(),
            })
            .await
            .map_err(ApiError::from)?;
        tracing::info!(pool = %stored.name, runtime = %stored.runtime, "pool created");
        let view = machines::merged_pools(std::iter::empty(), vec![stored]).remove(0);
        Ok(Response::new(CreatePoolResponse {
            pool: Some(pool_message(view, 0)),
        }))
    }

    async fn list_pools(
        &self,
        request: Request<ListPoolsRequest>,
    ) -> Result<Response<ListPoolsResponse>, Status> {
        authorized(&request, USERS, "list pools")?;
        let all = self
            .shared
            .machines
            .list_machines()
            .await
            .map_err(ApiError::from)?;
        let pools = self
            .pools()
            .await?
            .into_iter()
            .map(|view| {
                let count = all.iter().filter(|m| m.pool == view.name).count();
                pool_message(view, u32::try_from(count).unwrap_or(u32::MAX))
            })
            .collect();
        Ok(Response::new(ListPoolsResponse { pools }))
    }

    async fn delete_pool(
        &self,
        request: Request<DeletePoolRequest>,
    ) -> Result<Response<DeletePoolResponse>, Status> {
        authorized(&request, ADMINS, "delete pools")?;
        let name = request.into_inner().name;
        if self.shared.fleet.pools().contains(&name) {
            return Err(ApiError::FailedPrecondition(format!(
                "pool {name:?} is defined in the config (worker.pools.{name}): remove it there"
            ))
            .into());
        }
        let store = &self.shared.machines;
        let left = store
            .list_machines()
            .await
            .map_err(ApiError::from)?
            .into_iter()
            .filter(|m| m.pool == name)
            .count();
        if left > 0 {
            return Err(ApiError::FailedPrecondition(format!(
                "pool {name:?} still has {left} machine(s): delete them first \
                 (levers9 machine list, levers9 machine delete ID)"
            ))
            .into());
        }
        if !store.delete_pool(&name).await.map_err(ApiError::from)? {
            return Err(ApiError::NotFound(format!(
                "no pool {name:?} made with levers9 pool create: see `levers9 pool list`"
            ))
            .into());
        }
        tracing::info!(pool = %name, "pool deleted");
        Ok(Response::new(DeletePoolResponse {}))
    }

    async fn create_machine(
        &self,
        request: Request<CreateMachineRequest>,
    ) -> Result<Response<CreateMachineResponse>, Status> {
        let caller = authorized(&request, ADMINS, "create machines")?;
        let body = request.into_inner();
        let pool = self.pool(&body.pool).await?;
        let ttl = machines::join_ttl(body.ttl_seconds)?;
        let join = mint_with_prefix(JOIN_TOKEN_PREFIX);
        let now = Utc::now();
        let record = self
            .shared
            .machines
            .insert_machine(NewMachine {
                id: uuid::Uuid::now_v7().to_string(),
                workspace_id: caller.workspace.id.clone(),
                pool: pool.name,
                join_hash: join.hash,
                join_expires_at: now + ttl,
                created_at: now,
            })
            .await
            .map_err(ApiError::from)?;
        tracing::info!(machine_id = %record.id, pool = %record.pool, expires_at = %record.join_expires_at, "machine created");
        Ok(Response::new(CreateMachineResponse {
            machine: Some(self.view(record, now).await?),
            join_token: join.secret,
        }))
    }

    async fn list_machines(
        &self,
        request: Request<ListMachinesRequest>,
    ) -> Result<Response<ListMachinesResponse>, Status> {
        authorized(&request, USERS, "list machines")?;
        let now = Utc::now();
        let mut machines = Vec::new();
        for record in self
            .shared
            .machines
            .list_machines()
            .await
            .map_err(ApiError::from)?
        {
            machines.push(self.view(record, now).await?);
        }
        Ok(Response::new(ListMachinesResponse { machines }))
    }

    async fn drain_machine(
        &self,
        request: Request<DrainMachineRequest>,
    ) -> Result<Response<DrainMachineResponse>, Status> {
        authorized(&request, ADMINS, "drain machines")?;
        let id = request.into_inner().machine_id;
        let machine = self.machine(&id).await?;
        if machine.state == MachineState::Pending {
            return Err(ApiError::FailedPrecondition(format!(
                "machine {id} has not joined yet: nothing to drain (delete it with \
                 `levers9 machine delete {id}`)"
            ))
            .into());
        }
        self.shared
            .machines
            .set_machine_state(&id, MachineState::Draining)
            .await
            .map_err(ApiError::from)?;
        let containers = self.drain_worker(&id).await?;
        tracing::info!(machine_id = %id, containers, "machine draining");
        Ok(Response::new(DrainMachineResponse { containers }))
    }

    async fn delete_machine(
        &self,
        request: Request<DeleteMachineRequest>,
    ) -> Result<Response<DeleteMachineResponse>, Status> {
        authorized(&request, ADMINS, "delete machines")?;
        let id = request.into_inner().machine_id;
        let gone = self
            .shared
            .machines
            .delete_machine(&id, Utc::now())
            .await
            .map_err(ApiError::from)?
            .ok_or_else(|| not_found_machine(&id))?;
        if let Some(token_id) = &gone.token_id {
            self.shared.auth.forget(token_id);
        }
        self.drain_worker(&id).await?;
        tracing::info!(machine_id = %id, pool = %gone.pool, "machine deleted, its credential revoked");
        Ok(Response::new(DeleteMachineResponse {}))
    }

    async fn join_machine(
        &self,
        request: Request<JoinMachineRequest>,
    ) -> Result<Response<JoinMachineResponse>, Status> {
        let Some(secret) = bearer_token(request.metadata().as_ref())? else {
            return Err(ApiError::Unauthenticated(
                "missing join token: the agent sends it as `authorization: Bearer <join token>` \
                 (levers9 agent reads it from --join-token-file or LEVERS9_JOIN_TOKEN)"
                    .into(),
            )
            .into());
        };
        if !secret.starts_with(JOIN_TOKEN_PREFIX) {
            return Err(ApiError::Unauthenticated(format!(
                "this is not a join token (those start with {JOIN_TOKEN_PREFIX}): get one with \
                 `levers9 machine create --pool NAME`"
            ))
            .into());
        }
        let join_hash = crate::auth::token::hash(secret);
        let body = request.into_inner();
        let credential = mint();
        let outcome = self
            .shared
            .machines
            .redeem_join(JoinRedemption {
                join_hash,
                at: Utc::now(),
                hostname: body.hostname,
                capacity: serde_json::to_string(&body.capacity.unwrap_or_default())
                    .unwrap_or_default(),
                credential_id: uuid::Uuid::now_v7().to_string(),
                credential_hash: credential.hash,
            })
            .await
            .map_err(ApiError::from)?;
        let JoinOutcome::Joined(machine) = outcome else {
            let refusal = join_refusal(&outcome);
            tracing::warn!(error = %refusal, "join refused");
            return Err(refusal.into());
        };
        let runtime = self
            .pool(&machine.pool)
            .await
            .map(|p| p.runtime)
            .unwrap_or_else(|_| "runc".to_owned());
        tracing::info!(machine_id = %machine.id, pool = %machine.pool, hostname = %machine.hostname, "machine joined");
        Ok(Response::new(JoinMachineResponse {
            machine_id: machine.id,
            pool: machine.pool,
            runtime,
            worker_token: credential.secret,
        }))
    }
}

//! DictService: named key-value maps of the caller's workspace, in the hot
//! state (the registry and limits are in `objects.rs`).

use std::sync::Arc;

use levers9_api::v1::{
    dict_service_server::DictService, DeleteDictRequest, DeleteDictResponse, DictClearRequest,
    DictClearResponse, DictEntriesRequest, DictEntriesResponse, DictEntry, DictGetRequest,
    DictGetResponse, DictLenRequest, DictLenResponse, DictPopRequest, DictPopResponse,
    DictPutRequest, DictPutResponse, GetDictRequest, GetDictResponse, ListDictsRequest,
    ListDictsResponse,
};
use levers9_state::MapPut;
use tonic::{Request, Response, Status};

use super::objects::{workspace_of, Kind, Objects};
use crate::error::ApiError;
use crate::Shared;

/// The DictService implementation.
pub struct DictApi {
    shared: Arc<Shared>,
}

impl DictApi {
    pub(crate) fn new(shared: Arc<Shared>) -> Self {
        Self { shared }
    }

    /// The workspace the call acts in (see [`workspace_of`]).
    async fn workspace<T>(&self, request: &tonic::Request<T>) -> Result<String, ApiError> {
        workspace_of(&self.shared, request, Kind::Dict).await
    }

    fn dicts<'a>(&'a self, workspace_id: &'a str) -> Objects<'a> {
        Objects {
            state: self.shared.state.as_ref(),
            limits: &self.shared.object_limits,
            workspace_id,
            kind: Kind::Dict,
        }
    }
}

/// Writes entries into an existing dict, all or none.
async fn put(
    dicts: &Objects<'_>,
    name: &str,
    entries: Vec<DictEntry>,
    skip_existing: bool,
) -> Result<u64, ApiError> {
    for entry in &entries {
        dicts.check_size("key and value", entry.key.len() + entry.value.len())?;
    }
    dicts.require(name).await?;
    let entries: Vec<(Vec<u8>, Vec<u8>)> = entries.into_iter().map(|e| (e.key, e.value)).collect();
    let limit = dicts.limits.max_dict_entries;
    match dicts
        .state
        .map_put(&dicts.contents(name), &entries, limit, skip_existing)
        .await?
    {
        MapPut::Stored { added } => Ok(added),
        MapPut::Full { len } => Err(ApiError::ResourceExhausted(format!(
            "the dict {name:?} holds {len} entries and this put would pass its limit of \
             {limit} (controlplane.objects.maxDictEntries): pop or clear entries first"
        ))),
    }
}

#[tonic::async_trait]
impl DictService for DictApi {
    async fn get_dict(
        &self,
        request: Request<GetDictRequest>,
    ) -> Result<Response<GetDictResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let body = request.into_inner();
        let (dict, created) = self
            .dicts(&workspace_id)
            .look_up(&body.name, body.create_if_missing)
            .await?;
        Ok(Response::new(GetDictResponse {
            dict: Some(dict),
            created,
        }))
    }

    async fn list_dicts(
        &self,
        request: Request<ListDictsRequest>,
    ) -> Result<Response<ListDictsResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let dicts = self.dicts(&workspace_id).list().await?;
        Ok(Response::new(ListDictsResponse { dicts }))
    }

    async fn delete_dict(
        &self,
        request: Request<DeleteDictRequest>,
    ) -> Result<Response<DeleteDictResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        self.dicts(&workspace_id)
            .delete(&request.into_inner().name)
            .await?;
        Ok(Response::new(DeleteDictResponse {}))
    }

    async fn dict_put(
        &self,
        request: Request<DictPutRequest>,
    ) -> Result<Response<DictPutResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let body = request.into_inner();
        let added = put(
            &self.dicts(&workspace_id),
            &body.name,
            body.entries,
            body.skip_existing,
        )
        .await?;
        Ok(Response::new(DictPutResponse { added }))
    }

    async fn dict_get(
        &self,
        request: Request<DictGetRequest>,
    ) -> Result<Response<DictGetResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let body = request.into_inner();
        let dicts = self.dicts(&workspace_id);
        dicts.require(&body.name).await?;
        let value = dicts
            .state
            .map_get(&dicts.contents(&body.name), &body.key)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(DictGetResponse {
            found: value.is_some(),
            value: value.unwrap_or_default(),
        }))
    }

    async fn dict_pop(
        &self,
        request: Request<DictPopRequest>,
    ) -> Result<Response<DictPopResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let body = request.into_inner();
        let dicts = self.dicts(&workspace_id);
        dicts.require(&body.name).await?;
        let value = dicts
            .state
            .map_take(&dicts.contents(&body.name), &body.key)
            .await
            .map_err(ApiError::from)?;
        Ok(Response::new(DictPopResponse {
            found: value.is_some(),
            value: value.unwrap_or_default(),
        }))
    }

    async fn dict_len(
        &self,
        request: Request<DictLenRequest>,
    ) -> Result<Response<DictLenResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let name = request.into_inner().name;
        let dicts = self.dicts(&workspace_id);
        dicts.require(&name).await?;
        let len = dicts.len(&name).await?;
        Ok(Response::new(DictLenResponse { len }))
    }

    async fn dict_entries(
        &self,
        request: Request<DictEntriesRequest>,
    ) -> Result<Response<DictEntriesResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let body = request.into_inner();
        let dicts = self.dicts(&workspace_id);
        dicts.require(&body.name).await?;
        let contents = dicts.contents(&body.name);
        let entries = if body.keys_only {
            dicts
                .state
                .map_fields(&contents)
                .await
                .map_err(ApiError::from)?
                .into_iter()
                .map(|key| DictEntry {
                    key,
                    value: Vec::new(),
                })
                .collect()
        } else {
            dicts
                .state
                .map_entries(&contents)
                .await
                .map_err(ApiError::from)?
                .into_iter()
                .map(|(key, value)| DictEntry { key, value })
                .collect()
        };
        Ok(Response::new(DictEntriesResponse { entries }))
    }

    async fn dict_clear(
        &self,
        request: Request<DictClearRequest>,
    ) -> Result<Response<DictClearResponse>, Status> {
        let workspace_id = self.workspace(&request).await?;
        let name = request.into_inner().name;
        let dicts = self.dicts(&workspace_id);
        dicts.require(&name).await?;
        dicts.clear(&name).await?;
        Ok(Response::new(DictClearResponse {}))
    }
}

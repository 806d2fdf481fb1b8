//! Stubs and workspaces made over gRPC, without the SDK: for tests of
//! what lists and shows them.

use levers9_api::v1::function_service_client::FunctionServiceClient;
use levers9_api::v1::{
    CreateTokenRequest, CreateWorkspaceRequest, GetOrCreateStubRequest, PutObjectRequest,
    StubConfig,
};
use sha2::{Digest, Sha256};
use tonic::transport::Channel;

use super::{with_token, Controlplane};

/// A new workspace token of `admin`'s workspace.
pub async fn workspace_token(cp: &Controlplane, admin: &str, description: &str) -> String {
    cp.tokens()
        .await
        .create_token(with_token(
            CreateTokenRequest {
                token_type: "workspace".into(),
                description: description.into(),
            },
            admin,
        ))
        .await
        .expect("workspace token")
        .into_inner()
        .secret
}

/// A new workspace; its admin token.
pub async fn other_workspace(cp: &Controlplane, admin: &str, name: &str) -> String {
    cp.workspaces()
        .await
        .create_workspace(with_token(
            CreateWorkspaceRequest { name: name.into() },
            admin,
        ))
        .await
        .expect("create workspace")
        .into_inner()
        .admin_token
}

async fn put(functions: &mut FunctionServiceClient<Channel>, token: &str, data: &[u8]) -> String {
    let digest = format!("sha256:{}", hex::encode(Sha256::digest(data)));
    functions
        .put_object(with_token(
            PutObjectRequest {
                digest: digest.clone(),
                data: data.to_vec(),
            },
            token,
        ))
        .await
        .expect("put object");
    digest
}

/// A stub of `function` in `module_path`, made the way the SDK makes one
/// (250 millicores, 2 retries, an image no one pulls); its id.
pub async fn stub(cp: &Controlplane, token: &str, module_path: &str, function: &str) -> String {
    let config = StubConfig {
        image: "registry.example.com/team/app:1".into(),
        cpu_millicores: 250,
        retries: 2,
        ..Default::default()
    };
    stub_with(cp, token, module_path, function, config).await
}

/// A stub as [`stub`] makes one, with `config`; its id.
pub async fn stub_with(
    cp: &Controlplane,
    token: &str,
    module_path: &str,
    function: &str,
    config: StubConfig,
) -> String {
    let mut functions = cp.functions().await;
    let code = put(
        &mut functions,
        token,
        format!("code of {module_path}").as_bytes(),
    )
    .await;
    let sdk = put(&mut functions, token, b"the sdk").await;
    let module = module_path.trim_end_matches(".py").replace('/', ".");
    functions
        .get_or_create_stub(with_token(
            GetOrCreateStubRequest {
                name: format!("{module}.{function}"),
                code_digest: code,
                sdk_digest: sdk,
                module_path: module_path.into(),
                function_name: function.into(),
                config: Some(config),
            },
            token,
        ))
        .await
        .expect("create stub")
        .into_inner()
        .stub_id
}

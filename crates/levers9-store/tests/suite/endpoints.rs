//! The behaviour every backend must show for web endpoints.

use levers9_store::{
    EndpointKind, FunctionStore, NewDeployment, NewEndpoint, RecordStore, StoreError,
};

use super::at;
use super::functions::{stub, workspace};

/// Each workspace's one stub (ids are unique across workspaces).
fn stub_of(ws: &str) -> String {
    format!("stub-{ws}")
}

fn deployment(ws: &str, app: &str, function: &str, endpoints: &[(&str, bool)]) -> NewDeployment {
    NewDeployment {
        workspace_id: ws.to_owned(),
        app_name: app.to_owned(),
        functions: vec![(function.to_owned(), stub_of(ws))],
        schedules: Vec::new(),
        endpoints: endpoints
            .iter()
            .map(|(name, public)| NewEndpoint {
                function_name: function.to_owned(),
                name: (*name).to_owned(),
                public: *public,
                kind: EndpointKind::Json,
            })
            .collect(),
        deployed_by: "token-1".to_owned(),
        at: at(20),
    }
}

pub async fn an_endpoint_is_found_by_workspace_name_and_goes_with_a_redeploy<
    S: RecordStore + FunctionStore,
>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    store
        .get_or_create_stub(stub(&ws, &stub_of(&ws)))
        .await
        .unwrap();
    store
        .deploy(deployment(&ws, "web", "hello", &[("greet", true)]))
        .await
        .unwrap();

    let found = store.find_endpoint("team", "greet").await.unwrap().unwrap();
    assert_eq!(
        (
            found.workspace_id.as_str(),
            found.app_name.as_str(),
            found.function_name.as_str(),
            found.stub_id.as_str(),
            found.public,
            found.version
        ),
        (ws.as_str(), "web", "hello", stub_of(&ws).as_str(), true, 1)
    );
    assert_eq!(store.find_endpoint("other", "greet").await.unwrap(), None);
    assert_eq!(store.find_endpoint("team", "nope").await.unwrap(), None);

    assert_eq!(found.kind, EndpointKind::Json);

    // The same name, private and an ASGI app now; then gone with a deploy
    // without it.
    let mut redeploy = deployment(&ws, "web", "hello", &[("greet", false)]);
    redeploy.endpoints[0].kind = EndpointKind::Asgi;
    store.deploy(redeploy).await.unwrap();
    let found = store.find_endpoint("team", "greet").await.unwrap().unwrap();
    assert_eq!(
        (found.public, found.kind, found.version),
        (false, EndpointKind::Asgi, 2)
    );
    store
        .deploy(deployment(&ws, "web", "hello", &[]))
        .await
        .unwrap();
    assert_eq!(store.find_endpoint("team", "greet").await.unwrap(), None);

    // Every version's endpoint stays, for paths pinned to a version.
    let pinned = |version| store.find_endpoint_version(&ws, "web", "greet", version);
    let v1 = pinned(1).await.unwrap().unwrap();
    assert_eq!(
        (v1.public, v1.kind, v1.version, v1.stub_id.as_str()),
        (true, EndpointKind::Json, 1, stub_of(&ws).as_str())
    );
    let v2 = pinned(2).await.unwrap().unwrap();
    assert_eq!(
        (v2.public, v2.kind, v2.version),
        (false, EndpointKind::Asgi, 2)
    );
    assert_eq!(pinned(3).await.unwrap(), None);
    assert_eq!(pinned(9).await.unwrap(), None);
    assert_eq!(
        store.endpoint_versions(&ws, "web", "greet").await.unwrap(),
        [1, 2]
    );
    assert!(store
        .endpoint_versions(&ws, "other-app", "greet")
        .await
        .unwrap()
        .is_empty());
}

pub async fn an_endpoint_name_belongs_to_one_app_of_a_workspace<S: RecordStore + FunctionStore>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    let other = workspace(store, "elsewhere").await;
    store
        .get_or_create_stub(stub(&ws, &stub_of(&ws)))
        .await
        .unwrap();
    store
        .get_or_create_stub(stub(&other, &stub_of(&other)))
        .await
        .unwrap();
    store
        .deploy(deployment(&ws, "first", "hello", &[("greet", false)]))
        .await
        .unwrap();

    let err = store
        .deploy(deployment(&ws, "second", "hello", &[("greet", false)]))
        .await
        .unwrap_err();
    assert!(
        matches!(&err, StoreError::AlreadyExists(m) if m.contains("\"greet\"")),
        "{err:?}"
    );
    // Nothing of the refused deploy is stored.
    assert!(store
        .get_deployment(&ws, "second", "hello")
        .await
        .unwrap()
        .is_none());
    let found = store.find_endpoint("team", "greet").await.unwrap().unwrap();
    assert_eq!(found.app_name, "first");

    // Another workspace has names of its own.
    store
        .deploy(deployment(&other, "second", "hello", &[("greet", true)]))
        .await
        .unwrap();
    let theirs = store
        .find_endpoint("elsewhere", "greet")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((theirs.workspace_id, theirs.public), (other, true));
}

//! The behaviour every backend must show for deployed apps.

use levers9_store::{FunctionStore, NewDeployment, RecordStore, StoreError};

use super::at;
use super::functions::{stub, workspace};

fn deployment(workspace_id: &str, app: &str, functions: &[(&str, &str)]) -> NewDeployment {
    NewDeployment {
        workspace_id: workspace_id.to_owned(),
        app_name: app.to_owned(),
        functions: functions
            .iter()
            .map(|(f, s)| ((*f).to_owned(), (*s).to_owned()))
            .collect(),
        schedules: Vec::new(),
        endpoints: Vec::new(),
        deployed_by: "token-1".to_owned(),
        at: at(20),
    }
}

/// (app, function, stub, version) of each current function.
async fn current<S: FunctionStore>(store: &S, ws: &str) -> Vec<(String, String, String, u32)> {
    store
        .list_deployments(ws)
        .await
        .unwrap()
        .into_iter()
        .map(|d| (d.app_name, d.function_name, d.stub_id, d.version))
        .collect()
}

fn row(app: &str, function: &str, stub: &str, version: u32) -> (String, String, String, u32) {
    (
        app.to_owned(),
        function.to_owned(),
        stub.to_owned(),
        version,
    )
}

pub async fn a_redeploy_is_the_next_version_and_replaces_the_functions<
    S: RecordStore + FunctionStore,
>(
    store: &S,
) {
    let ws = workspace(store, "team").await;
    for id in ["stub-1", "stub-2", "stub-3"] {
        store.get_or_create_stub(stub(&ws, id)).await.unwrap();
    }

    let first = store
        .deploy(deployment(
            &ws,
            "images",
            &[("resize", "stub-1"), ("crop", "stub-2")],
        ))
        .await
        .unwrap();
    let other_app = store
        .deploy(deployment(&ws, "other", &[("resize", "stub-1")]))
        .await
        .unwrap();
    let before = current(store, &ws).await;
    let second = store
        .deploy(deployment(&ws, "images", &[("resize", "stub-3")]))
        .await
        .unwrap();

    assert_eq!((first, other_app, second), (1, 1, 2));
    assert_eq!(
        before,
        [
            row("images", "crop", "stub-2", 1),
            row("images", "resize", "stub-1", 1),
            row("other", "resize", "stub-1", 1),
        ]
    );
    // crop is not in version 2, so it is gone with version 1.
    assert_eq!(
        current(store, &ws).await,
        [
            row("images", "resize", "stub-3", 2),
            row("other", "resize", "stub-1", 1),
        ]
    );
    let got = store
        .get_deployment(&ws, "images", "resize")
        .await
        .unwrap()
        .unwrap();
    assert_eq!((got.stub_id.as_str(), got.version), ("stub-3", 2));
    assert_eq!(got.deployed_by, "token-1");
    assert_eq!(got.created_at, at(20));
    assert_eq!(
        store.get_deployment(&ws, "images", "crop").await.unwrap(),
        None
    );
}

pub async fn a_deployment_names_only_stubs_of_its_workspace<S: RecordStore + FunctionStore>(
    store: &S,
) {
    let mine = workspace(store, "mine").await;
    let theirs = workspace(store, "theirs").await;
    store
        .get_or_create_stub(stub(&theirs, "stub-theirs"))
        .await
        .unwrap();
    store
        .get_or_create_stub(stub(&mine, "stub-mine"))
        .await
        .unwrap();
    store
        .deploy(deployment(&theirs, "images", &[("resize", "stub-theirs")]))
        .await
        .unwrap();

    let foreign = store
        .deploy(deployment(&mine, "images", &[("resize", "stub-theirs")]))
        .await;
    let twice = store
        .deploy(deployment(
            &mine,
            "images",
            &[("resize", "stub-mine"), ("resize", "stub-mine")],
        ))
        .await
        .unwrap_err();

    assert!(
        matches!(foreign, Err(StoreError::Database(_))),
        "{foreign:?}"
    );
    assert!(matches!(twice, StoreError::AlreadyExists(_)), "{twice:?}");
    // Neither failed deploy left a version behind.
    assert!(current(store, &mine).await.is_empty());
    assert_eq!(
        store
            .get_deployment(&mine, "images", "resize")
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        store
            .deploy(deployment(&mine, "images", &[("resize", "stub-mine")]))
            .await
            .unwrap(),
        1
    );
    assert_eq!(
        current(store, &theirs).await,
        [row("images", "resize", "stub-theirs", 1)]
    );
}

pub async fn deployed_stubs_are_those_of_every_current_version_once<
    S: RecordStore + FunctionStore,
>(
    store: &S,
) {
    let team = workspace(store, "team").await;
    let other = workspace(store, "other").await;
    for id in ["stub-1", "stub-2", "stub-3"] {
        store.get_or_create_stub(stub(&team, id)).await.unwrap();
    }
    store
        .get_or_create_stub(stub(&other, "stub-other"))
        .await
        .unwrap();
    assert!(store.deployed_stubs().await.unwrap().is_empty());

    store
        .deploy(deployment(
            &team,
            "images",
            &[("resize", "stub-1"), ("crop", "stub-2")],
        ))
        .await
        .unwrap();
    store
        .deploy(deployment(&team, "again", &[("resize", "stub-1")]))
        .await
        .unwrap();
    store
        .deploy(deployment(&other, "images", &[("resize", "stub-other")]))
        .await
        .unwrap();
    // Version 2 drops stub-2: it is no longer deployed.
    store
        .deploy(deployment(&team, "images", &[("resize", "stub-3")]))
        .await
        .unwrap();

    let mut expected = vec![
        (team.clone(), "stub-1".to_owned()),
        (team.clone(), "stub-3".to_owned()),
        (other.clone(), "stub-other".to_owned()),
    ];
    expected.sort();
    let mut got = store.deployed_stubs().await.unwrap();
    got.sort();
    assert_eq!(got, expected);
}

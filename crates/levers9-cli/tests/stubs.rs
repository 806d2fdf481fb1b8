//! Stubs as the controlplane lists them: ListStubs and GetStub answer
//! the caller's workspace only (an admin token its own workspace's, like
//! every list), and `levers9 stub list` shows each with its app.

mod common;

use common::stubs::{other_workspace, stub, workspace_token};
use common::{text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{GetStubRequest, ListStubsRequest, VolumeMount};

fn controlplane() -> Controlplane {
    let mut env = common::backend_env(Backend::Embedded);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    Controlplane::start_with(env)
}

async fn listed(cp: &Controlplane, token: &str) -> Vec<(String, String, String)> {
    cp.functions()
        .await
        .list_stubs(with_token(ListStubsRequest { limit: 0 }, token))
        .await
        .expect("list stubs")
        .into_inner()
        .stubs
        .into_iter()
        .map(|s| (s.stub_id, s.module_path, s.function_name))
        .collect()
}

#[tokio::test]
async fn stubs_are_listed_and_shown_only_in_their_own_workspace() {
    let cp = controlplane();
    let admin = cp.admin_token().await;
    let user = workspace_token(&cp, &admin, "user").await;
    let other = other_workspace(&cp, &admin, "other").await;

    let ours = stub(&cp, &user, "app/handlers.py", "resize").await;
    // Apart in time, so "newest first" has one answer.
    tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    let newer = stub(&cp, &user, "jobs.py", "nightly").await;
    let theirs = stub(&cp, &other, "theirs.py", "secret_plan").await;

    // Newest first; the workspace's admin token sees the same, not more.
    let mine = listed(&cp, &user).await;
    assert_eq!(
        mine,
        vec![
            (newer.clone(), "jobs.py".into(), "nightly".into()),
            (ours.clone(), "app/handlers.py".into(), "resize".into()),
        ]
    );
    assert_eq!(listed(&cp, &admin).await, mine, "admin sees its workspace");
    assert_eq!(
        listed(&cp, &other).await,
        vec![(theirs.clone(), "theirs.py".into(), "secret_plan".into())]
    );

    // GetStub: the stored configuration, defaults filled in.
    let shown = cp
        .functions()
        .await
        .get_stub(with_token(
            GetStubRequest {
                stub_id: ours.clone(),
            },
            &user,
        ))
        .await
        .expect("get stub")
        .into_inner()
        .stub
        .expect("a stub");
    assert_eq!(shown.name, "app.handlers.resize");
    let config = shown.config.expect("config");
    assert_eq!(config.image, "registry.example.com/team/app:1");
    assert_eq!((config.cpu_millicores, config.retries), (250, 2));
    assert!(
        config.memory_mib > 0 && config.timeout_seconds > 0,
        "{config:?}"
    );
    assert_eq!(config.volumes, Vec::<VolumeMount>::new());

    // Another workspace's stub is not found, with either kind of token.
    for token in [&user, &admin] {
        let refused = cp
            .functions()
            .await
            .get_stub(with_token(
                GetStubRequest {
                    stub_id: theirs.clone(),
                },
                token,
            ))
            .await
            .expect_err("another workspace's stub");
        assert_eq!(refused.code(), tonic::Code::NotFound, "{refused:?}");
    }

    let out = cp.cli_as(&user, &["stub", "list"], None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let line = stdout
        .lines()
        .find(|l| l.contains(&ours))
        .unwrap_or_else(|| panic!("{stdout}"));
    for part in [
        "app/handlers.py",
        "resize",
        "registry.example.com/team/app:1",
        "250m",
    ] {
        assert!(line.contains(part), "{part} not in {line}");
    }
    assert!(!stdout.contains(&theirs), "{stdout}");
}

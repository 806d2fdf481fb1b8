//! Deployments as the controlplane keeps them: Deploy names stubs of the
//! caller's workspace only, a redeploy is the next version and replaces the
//! app's functions, lookups and lists answer the caller's workspace only, and
//! `levers9 deployment list` shows the current versions. (Deploying real code
//! and calling it by name: sdk/python/tests/test_deploy.py, in functions.rs.)

mod common;

use common::stubs::{other_workspace, stub, workspace_token};
use common::{text, with_token, Backend, Controlplane, SECRET};
use levers9_api::v1::{DeployRequest, DeployedFunction, GetDeploymentRequest};

fn controlplane() -> Controlplane {
    let mut env = common::backend_env(Backend::Embedded);
    env.push(("LEVERS9_BOOTSTRAP_SECRET".into(), SECRET.into()));
    Controlplane::start_with(env)
}

async fn deploy(
    cp: &Controlplane,
    token: &str,
    app: &str,
    functions: &[(&str, &str)],
) -> Result<u32, tonic::Status> {
    let request = DeployRequest {
        app_name: app.into(),
        functions: functions
            .iter()
            .map(|(name, stub_id)| DeployedFunction {
                function_name: (*name).into(),
                stub_id: (*stub_id).into(),
                schedule: None,
                endpoint: None,
            })
            .collect(),
    };
    Ok(cp
        .functions()
        .await
        .deploy(with_token(request, token))
        .await?
        .into_inner()
        .version)
}

async fn lookup(
    cp: &Controlplane,
    token: &str,
    app: &str,
    function: &str,
) -> Result<(String, u32), tonic::Status> {
    let deployment = cp
        .functions()
        .await
        .get_deployment(with_token(
            GetDeploymentRequest {
                app_name: app.into(),
                function_name: function.into(),
            },
            token,
        ))
        .await?
        .into_inner()
        .deployment
        .expect("a deployment");
    Ok((deployment.stub_id, deployment.version))
}

#[tokio::test]
async fn deployments_are_versioned_and_seen_only_in_their_own_workspace() {
    let cp = controlplane();
    let admin = cp.admin_token().await;
    let user = workspace_token(&cp, &admin, "user").await;
    let other = other_workspace(&cp, &admin, "other").await;
    let resize = stub(&cp, &user, "images.py", "resize").await;
    let crop = stub(&cp, &user, "images.py", "crop").await;
    let theirs = stub(&cp, &other, "theirs.py", "plan").await;

    let v1 = deploy(
        &cp,
        &user,
        "images",
        &[("resize", &resize), ("crop", &crop)],
    )
    .await;
    let v2 = deploy(&cp, &user, "images", &[("resize", &crop)]).await;
    assert_eq!((v1.unwrap(), v2.unwrap()), (1, 2));
    assert_eq!(
        lookup(&cp, &user, "images", "resize").await.unwrap(),
        (crop.clone(), 2)
    );
    let gone = lookup(&cp, &user, "images", "crop").await.unwrap_err();
    assert_eq!(gone.code(), tonic::Code::NotFound, "{gone:?}");
    let hidden = lookup(&cp, &other, "images", "resize").await.unwrap_err();
    assert_eq!(hidden.code(), tonic::Code::NotFound, "{hidden:?}");
    assert!(
        hidden.message().contains("levers9 deploy"),
        "{}",
        hidden.message()
    );

    let foreign = deploy(&cp, &user, "images", &[("plan", &theirs)])
        .await
        .unwrap_err();
    assert_eq!(foreign.code(), tonic::Code::NotFound, "{foreign:?}");
    for (app, functions) in [
        ("bad/name", vec![("resize", resize.as_str())]),
        ("images", vec![]),
        (
            "images",
            vec![("resize", resize.as_str()), ("resize", crop.as_str())],
        ),
    ] {
        let refused = deploy(&cp, &user, app, &functions).await.unwrap_err();
        assert_eq!(refused.code(), tonic::Code::InvalidArgument, "{refused:?}");
    }
    // No refused deploy took a version.
    assert_eq!(lookup(&cp, &user, "images", "resize").await.unwrap().1, 2);

    let out = cp.cli_as(&user, &["deployment", "list"], None);
    let stdout = text(&out.stdout);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .skip(1)
        .map(|l| l.split_whitespace().take(4).collect())
        .collect();
    assert_eq!(
        rows,
        [vec!["images", "resize", "2", crop.as_str()]],
        "{stdout}"
    );
}

/// `levers9 deploy` hands over to the SDK, which makes the stubs and deploys
/// them (no worker needed: nothing runs); the default app name is the file's
/// stem, and a second deploy is version 2.
#[tokio::test]
async fn levers9_deploy_deploys_a_files_functions_under_its_stem() {
    let python = std::env::var("LEVERS9_TEST_PYTHON").unwrap_or_else(|_| {
        panic!("LEVERS9_TEST_PYTHON is not set: run the tests with scripts/test.sh (make test)")
    });
    let cp = controlplane();
    let admin = cp.admin_token().await;
    let user = workspace_token(&cp, &admin, "user").await;
    let code = tempfile::tempdir().expect("code dir");
    let file = code.path().join("billing.py");
    std::fs::write(
        &file,
        // An image no one pulls: nothing runs, and this controlplane has no base image.
        "from levers9 import function, Image\n\n\
         @function(image=Image.from_registry(\"registry.example.com/team/app:1\"))\n\
         def invoice(n):\n    return n\n",
    )
    .expect("write app");
    let home = tempfile::tempdir().expect("home");
    let port = cp.grpc_port.to_string();
    let sdk = concat!(env!("CARGO_MANIFEST_DIR"), "/../../sdk/python");
    let env = [
        ("LEVERS9_TOKEN", user.as_str()),
        ("LEVERS9_CONTROLPLANE_HOST", "127.0.0.1"),
        ("LEVERS9_CONTROLPLANE_PORT", port.as_str()),
        ("LEVERS9_PYTHON", python.as_str()),
        ("PYTHONPATH", sdk),
    ];
    let file = file.to_str().expect("utf-8 path");

    for version in [1, 2] {
        let out = cp.cli(home.path(), &["deploy", file], &env, None);
        assert!(out.status.success(), "{}", text(&out.stderr));
        let stdout = text(&out.stdout);
        assert!(
            stdout.starts_with(&format!("deployed app billing version {version}\n")),
            "{stdout}"
        );
        assert!(stdout.contains("  invoice  "), "{stdout}");
    }
    let (stub_id, version) = lookup(&cp, &user, "billing", "invoice").await.unwrap();
    assert_eq!(version, 2);
    let out = cp.cli(
        home.path(),
        &["deploy", file, "--name", "bad/name"],
        &env,
        None,
    );
    assert!(!out.status.success());
    assert!(
        text(&out.stderr).contains("is not valid"),
        "{}",
        text(&out.stderr)
    );
    assert!(stub_id.starts_with("st-"), "{stub_id}");
}

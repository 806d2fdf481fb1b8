//! The manifests of an attached cluster, and how `cluster join` applies
//! them (server-side apply), against a scripted API server.

mod mock_api;

use http::Method;
use levers9_kube::AttachedCluster;
use mock_api::{serve, Expect};
use serde_json::{json, Value};

const TOKEN: &str = "l9w_secret-token-value";

fn cluster() -> AttachedCluster {
    AttachedCluster {
        pool: "gke-l4".into(),
        namespace: "levers9-workers".into(),
        image: "registry.example.com/levers9/worker:9".into(),
        agent_args: vec![
            "--controlplane".into(),
            "levers9-grpc.example.com:443".into(),
        ],
        image_pull_secrets: vec!["regcred".into()],
        token: TOKEN.into(),
    }
}

#[test]
fn the_role_is_namespaced_and_least_privilege() {
    let role = serde_json::to_value(cluster().role()).expect("role");
    assert_eq!(role["kind"], "Role");
    assert_eq!(role["metadata"]["namespace"], "levers9-workers");
    assert_eq!(
        role["rules"],
        json!([
            {"apiGroups": ["batch"], "resources": ["jobs"],
             "verbs": ["get", "list", "watch", "create", "delete"]},
            {"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list", "watch"]},
            {"apiGroups": [""], "resources": ["pods/log"], "verbs": ["get"]},
        ])
    );
    let yaml = cluster().yaml().expect("yaml");
    assert!(!yaml.contains("ClusterRole"), "{yaml}");
}

#[test]
fn the_token_is_only_in_the_secret() {
    let yaml = cluster().yaml().expect("yaml");
    assert_eq!(yaml.matches(TOKEN).count(), 1, "{yaml}");
    let secret = serde_json::to_value(cluster().secret()).expect("secret");
    assert_eq!(secret["stringData"]["token"], TOKEN);
    let deployment = serde_json::to_value(cluster().deployment()).expect("deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "levers9-cluster-agent");
    let agent = &pod["containers"][0];
    assert_eq!(
        agent["args"],
        json!([
            "cluster",
            "agent",
            "--pool",
            "gke-l4",
            "--namespace",
            "levers9-workers",
            "--worker-image",
            "registry.example.com/levers9/worker:9",
            "--controlplane",
            "levers9-grpc.example.com:443"
        ])
    );
    assert_eq!(
        agent["env"][0]["valueFrom"]["secretKeyRef"]["name"],
        "levers9-worker-token"
    );
    assert_eq!(agent["securityContext"]["allowPrivilegeEscalation"], false);
}

#[test]
fn the_agents_image_is_pulled_with_the_pull_secrets() {
    let deployment = serde_json::to_value(cluster().deployment()).expect("deployment");
    assert_eq!(
        deployment["spec"]["template"]["spec"]["imagePullSecrets"],
        json!([{"name": "regcred"}])
    );
    let without = AttachedCluster {
        image_pull_secrets: Vec::new(),
        ..cluster()
    };
    let deployment = serde_json::to_value(without.deployment()).expect("deployment");
    assert!(deployment["spec"]["template"]["spec"]
        .get("imagePullSecrets")
        .is_none());
}

fn apply(path: &str, kind: &'static str) -> Expect {
    let api_version = match kind {
        "Role" | "RoleBinding" => "rbac.authorization.k8s.io/v1",
        "Deployment" => "apps/v1",
        _ => "v1",
    };
    Expect {
        method: Method::PATCH,
        path_and_query: format!("{path}?&force=true&fieldManager=levers9-cluster-join"),
        check_body: Box::new(move |body: &Value| assert_eq!(body["kind"], kind, "{body}")),
        status: 200,
        answer: json!({"apiVersion": api_version, "kind": kind, "metadata": {"name": "x"},
                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "x"},
                       "spec": {"selector": {}, "template": {}}}),
    }
}

#[tokio::test]
async fn join_applies_every_manifest_in_order() {
    let ns = "/api/v1/namespaces/levers9-workers";
    let rbac = "/apis/rbac.authorization.k8s.io/v1/namespaces/levers9-workers";
    let script = vec![
        apply(ns, "Namespace"),
        apply(
            &format!("{ns}/serviceaccounts/levers9-cluster-agent"),
            "ServiceAccount",
        ),
        apply(&format!("{rbac}/roles/levers9-cluster-agent"), "Role"),
        apply(
            &format!("{rbac}/rolebindings/levers9-cluster-agent"),
            "RoleBinding",
        ),
        apply(&format!("{ns}/secrets/levers9-worker-token"), "Secret"),
        apply(
            "/apis/apps/v1/namespaces/levers9-workers/deployments/levers9-cluster-agent",
            "Deployment",
        ),
    ];
    let (client, server) = serve("default", script);
    cluster().apply(&client).await.expect("applied");
    server.await.expect("every request as scripted");
}

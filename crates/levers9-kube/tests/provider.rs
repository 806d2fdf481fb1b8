//! The requests of a `provider: kubernetes` pool's reconciler (what the
//! controlplane sends to the pool's cluster), checked against a scripted
//! API server.

mod mock_api;

use http::Method;
use levers9_config::{PoolConfig, PoolKubernetes, PoolProvider, PoolResources};
use levers9_kube::remote::provider_reconciler;
use levers9_kube::worker_wide::JuiceFsKeys;
use levers9_kube::WorkerWide;
use mock_api::{any_body, deleted, job_list, listed_job, serve, Expect};
use serde_json::{json, Value};

fn gke_pool() -> PoolConfig {
    PoolConfig {
        provider: PoolProvider::Kubernetes,
        gpu_type: "L4".into(),
        resources: PoolResources {
            gpu_count: 1,
            ..PoolResources::default()
        },
        node_selector: [(
            "cloud.google.com/gke-accelerator".to_owned(),
            "nvidia-l4".to_owned(),
        )]
        .into(),
        kubernetes: PoolKubernetes {
            api_server: "https://203.0.113.10".into(),
            token_file: "/var/run/secrets/gke/token".into(),
            namespace: "levers9-gke".into(),
            worker_image: "registry.example.com/levers9/worker:9".into(),
            controlplane_address: "levers9-grpc.example.com:443".into(),
            worker_token_secret: "gke-worker-token".into(),
            ..PoolKubernetes::default()
        },
        ..PoolConfig::default()
    }
}

fn created(enforced: bool) -> Box<dyn Fn(&Value) + Send> {
    Box::new(move |body| {
        assert_eq!(body["metadata"]["labels"]["levers9.dev/pool"], "gke-l4");
        let pod = &body["spec"]["template"]["spec"];
        assert_eq!(
            pod["nodeSelector"],
            json!({"cloud.google.com/gke-accelerator": "nvidia-l4"})
        );
        let container = &pod["containers"][0];
        assert_eq!(container["image"], "registry.example.com/levers9/worker:9");
        assert_eq!(
            container["env"][0]["valueFrom"]["secretKeyRef"]["name"],
            "gke-worker-token"
        );
        assert_eq!(
            container["args"],
            json!([
                "--pool",
                "gke-l4",
                "--runtime",
                "runc",
                "--controlplane",
                "levers9-grpc.example.com:443",
                "--state-dir",
                "/var/lib/levers9/worker"
            ]),
            "a configured pool takes its own hardening, not --attached-cluster"
        );
        if enforced {
            assert_eq!(container["resources"]["limits"]["nvidia.com/gpu"], "1");
        } else {
            assert!(container.get("resources").is_none(), "{container}");
        }
    })
}

const JOBS: &str = "/apis/batch/v1/namespaces/levers9-gke/jobs";

fn list(items: Vec<Value>) -> Expect {
    Expect {
        method: Method::GET,
        path_and_query: format!(
            "{JOBS}?&labelSelector=app.kubernetes.io%2Fname%3Dlevers9-worker%2Clevers9.dev%2Fpool%3Dgke-l4"
        ),
        check_body: any_body(),
        status: 200,
        answer: job_list(items),
    }
}

#[tokio::test]
async fn the_pools_jobs_go_to_its_namespace_with_its_image_and_secret() {
    for enforced in [true, false] {
        let create = Expect {
            method: Method::POST,
            path_and_query: format!("{JOBS}?"),
            check_body: created(enforced),
            status: 201,
            answer: listed_job("levers9-worker-gke-l4-x", "2026-12-03T08:00:00Z", json!({})),
        };
        let (client, server) = serve("default", vec![list(vec![]), create]);
        let round = provider_reconciler(
            client,
            "gke-l4",
            &gke_pool(),
            enforced,
            &WorkerWide::default(),
        )
        .reconcile(1)
        .await
        .expect("reconciled");
        assert_eq!(round.created, 1);
        server.await.expect("every request as scripted");
    }
}

#[tokio::test]
async fn an_idle_pool_at_zero_deletes_its_last_worker() {
    let jobs = vec![listed_job(
        "levers9-worker-gke-l4-a",
        "2026-12-03T07:00:00Z",
        json!({"active": 1, "ready": 1}),
    )];
    let delete = Expect {
        method: Method::DELETE,
        path_and_query: format!("{JOBS}/levers9-worker-gke-l4-a?"),
        check_body: Box::new(|body| assert_eq!(body["propagationPolicy"], "Background")),
        status: 200,
        answer: deleted(),
    };
    let (client, server) = serve("default", vec![list(jobs), delete]);
    let round = provider_reconciler(client, "gke-l4", &gke_pool(), true, &WorkerWide::default())
        .reconcile(0)
        .await
        .expect("reconciled");
    assert_eq!((round.running, round.deleted_extra), (1, 1));
    server.await.expect("every request as scripted");
}

/// What the controlplane sends for a pool whose workers pull from a plain
/// HTTP registry with a credential and mount volumes from JuiceFS: the
/// registry flags, the credential's read-only mount, the pull secret, and
/// the JuiceFS keys by reference, with no secret value anywhere in the body.
#[tokio::test]
async fn a_pools_jobs_carry_registry_access_and_the_juicefs_keys_by_reference() {
    let mut pool = gke_pool();
    pool.kubernetes.image_pull_secrets = vec!["gke-pull".into()];
    pool.kubernetes.registry_credentials_secret = "gke-registry".into();
    pool.kubernetes.juicefs_secret = "gke-juicefs".into();
    let wide = WorkerWide {
        insecure_registries: vec!["registry.internal:5000".into()],
        juicefs: Some(JuiceFsKeys {
            storage: "s3".into(),
            bucket: "https://volumes.s3.us-east-2.amazonaws.com".into(),
            name: "levers9".into(),
            cache_size_mib: 10240,
        }),
    };
    let create = Expect {
        method: Method::POST,
        path_and_query: format!("{JOBS}?"),
        check_body: Box::new(|body: &Value| {
            let pod = &body["spec"]["template"]["spec"];
            assert_eq!(pod["imagePullSecrets"], json!([{"name": "gke-pull"}]));
            let container = &pod["containers"][0];
            let args = container["args"].to_string();
            assert!(
                args.contains(r#""--insecure-registry","registry.internal:5000""#)
                    && args.contains(
                        r#""--registry-credentials","/etc/levers9/registry/.dockerconfigjson""#
                    ),
                "{args}"
            );
            let volumes = pod["volumes"].to_string();
            assert!(
                volumes.contains(r#""secretName":"gke-registry""#),
                "{volumes}"
            );
            let env = container["env"].as_array().expect("env");
            let refs: Vec<(&str, &str)> = env
                .iter()
                .filter_map(|e| {
                    let from = &e["valueFrom"]["secretKeyRef"];
                    Some((from["name"].as_str()?, from["key"].as_str()?))
                })
                .collect();
            assert_eq!(
                refs,
                [
                    ("gke-worker-token", "token"),
                    ("gke-juicefs", "meta-url"),
                    ("gke-juicefs", "workspace-meta-url"),
                    ("gke-juicefs", "access-key"),
                    ("gke-juicefs", "secret-key"),
                ]
            );
            let bucket = env
                .iter()
                .find(|e| e["name"] == "LEVERS9_JUICEFS_BUCKET")
                .expect("the bucket");
            assert_eq!(
                bucket["value"],
                "https://volumes.s3.us-east-2.amazonaws.com"
            );
        }),
        status: 201,
        answer: listed_job("levers9-worker-gke-l4-y", "2026-12-03T08:00:00Z", json!({})),
    };
    let (client, server) = serve("default", vec![list(vec![]), create]);
    let round = provider_reconciler(client, "gke-l4", &pool, true, &wide)
        .reconcile(1)
        .await
        .expect("reconciled");
    assert_eq!(round.created, 1);
    server.await.expect("every request as scripted");
}

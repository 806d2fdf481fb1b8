//! The requests of a `provider: kubernetes` pool's reconciler (what the
//! controlplane sends to the pool's cluster), checked against a scripted
//! API server.

mod mock_api;

use http::Method;
use levers9_config::{PoolConfig, PoolKubernetes, PoolProvider, PoolResources};
use levers9_kube::remote::provider_reconciler;
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
                "worker",
                "--pool",
                "gke-l4",
                "--runtime",
                "runc",
                "--controlplane",
                "levers9-grpc.example.com:443"
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
        let round = provider_reconciler(client, "gke-l4", &gke_pool(), enforced)
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
    let round = provider_reconciler(client, "gke-l4", &gke_pool(), true)
        .reconcile(0)
        .await
        .expect("reconciled");
    assert_eq!((round.running, round.deleted_extra), (1, 1));
    server.await.expect("every request as scripted");
}

//! The reconciler's requests, checked against a scripted API server.

mod mock_api;

use http::Method;
use levers9_config::{PoolConfig, PoolResources, Toleration};
use levers9_kube::{Reconciler, Round, WorkerJob};
use mock_api::{any_body, deleted, job_list, listed_job, serve, Expect};
use serde_json::{json, Value};

const LIST: &str = "/apis/batch/v1/namespaces/gpu-workers/jobs?&labelSelector=app.kubernetes.io%2Fname%3Dlevers9-worker%2Clevers9.dev%2Fpool%3Dl40s";
const JOBS: &str = "/apis/batch/v1/namespaces/gpu-workers/jobs?";

fn l40s() -> PoolConfig {
    PoolConfig {
        gpu_type: "L40S".into(),
        resources: PoolResources {
            gpu_count: 1,
            memory_mib: 16384,
            cpu_millicores: 4000,
        },
        node_selector: [(
            "cloud.google.com/gke-accelerator".to_owned(),
            "nvidia-l4".to_owned(),
        )]
        .into(),
        tolerations: vec![Toleration {
            key: "nvidia.com/gpu".into(),
            operator: "Exists".into(),
            effect: "NoSchedule".into(),
            ..Default::default()
        }],
        ..PoolConfig::default()
    }
}

fn reconciler(client: kube::Client, pool: &PoolConfig) -> Reconciler {
    let worker = WorkerJob {
        pool: "l40s",
        config: pool,
        request_resources: true,
        image: "registry.example.com/levers9/worker:7",
        controlplane: "levers9-grpc.example.com:443",
        token_secret: "levers9-worker-token",
        attached_cluster: true,
    };
    Reconciler::new(client, "gpu-workers", &worker)
}

fn check_created_job(body: &Value) {
    assert_eq!(body["kind"], "Job");
    assert_eq!(body["metadata"]["generateName"], "levers9-worker-l40s-");
    assert_eq!(body["metadata"]["labels"]["levers9.dev/pool"], "l40s");
    assert_eq!(body["spec"]["backoffLimit"], 0);
    let pod = &body["spec"]["template"]["spec"];
    assert_eq!(pod["template"], Value::Null);
    assert_eq!(pod["restartPolicy"], "Never");
    assert_eq!(
        pod["nodeSelector"],
        json!({"cloud.google.com/gke-accelerator": "nvidia-l4"})
    );
    assert_eq!(
        pod["tolerations"],
        json!([{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    );
    let container = &pod["containers"][0];
    assert_eq!(container["image"], "registry.example.com/levers9/worker:7");
    assert_eq!(
        container["resources"],
        json!({
            "requests": {"cpu": "4000m", "memory": "16384Mi", "nvidia.com/gpu": "1"},
            "limits": {"memory": "16384Mi", "nvidia.com/gpu": "1"},
        })
    );
    assert_eq!(
        container["env"],
        json!([{"name": "LEVERS9_TOKEN", "valueFrom": {"secretKeyRef": {
            "name": "levers9-worker-token", "key": "token", "optional": false}}}])
    );
    assert_eq!(
        container["args"],
        json!([
            "--pool",
            "l40s",
            "--runtime",
            "runc",
            "--controlplane",
            "levers9-grpc.example.com:443",
            "--state-dir",
            "/var/lib/levers9/worker",
            "--cpu-millicores",
            "4000",
            "--memory-mib",
            "16384",
            "--attached-cluster"
        ])
    );
}

fn create() -> Expect {
    Expect {
        method: Method::POST,
        path_and_query: JOBS.into(),
        check_body: Box::new(check_created_job),
        status: 201,
        answer: listed_job("levers9-worker-l40s-new", "2026-12-03T08:00:00Z", json!({})),
    }
}

fn delete(name: &str) -> Expect {
    Expect {
        method: Method::DELETE,
        path_and_query: format!("/apis/batch/v1/namespaces/gpu-workers/jobs/{name}?"),
        check_body: Box::new(|body| {
            assert_eq!(body["propagationPolicy"], "Background", "{body}");
        }),
        status: 200,
        answer: deleted(),
    }
}

fn list(items: Vec<Value>) -> Expect {
    Expect {
        method: Method::GET,
        path_and_query: LIST.into(),
        check_body: any_body(),
        status: 200,
        answer: job_list(items),
    }
}

#[tokio::test]
async fn a_pool_with_no_jobs_gets_the_workers_wanted() {
    let (client, server) = serve("default", vec![list(vec![]), create(), create()]);
    let round = reconciler(client, &l40s())
        .reconcile(2)
        .await
        .expect("reconciled");
    assert_eq!(
        round,
        Round {
            created: 2,
            ..Round::default()
        }
    );
    server.await.expect("every request as scripted");
}

#[tokio::test]
async fn finished_jobs_are_deleted_and_replaced() {
    let jobs = vec![
        listed_job(
            "w-ready",
            "2026-12-03T07:00:00Z",
            json!({"active": 1, "ready": 1}),
        ),
        listed_job("w-exited", "2026-12-03T07:01:00Z", json!({"failed": 1})),
        listed_job(
            "w-done",
            "2026-12-03T07:02:00Z",
            json!({"succeeded": 1, "conditions": [{"type": "Complete", "status": "True"}]}),
        ),
    ];
    let (client, server) = serve(
        "default",
        vec![list(jobs), delete("w-exited"), delete("w-done"), create()],
    );
    let round = reconciler(client, &l40s())
        .reconcile(2)
        .await
        .expect("reconciled");
    assert_eq!(
        round,
        Round {
            running: 1,
            pending: 0,
            created: 1,
            deleted_finished: 2,
            deleted_extra: 0,
        }
    );
    server.await.expect("every request as scripted");
}

#[tokio::test]
async fn extra_jobs_go_pending_first_then_the_newest() {
    let jobs = vec![
        listed_job(
            "w-old",
            "2026-12-03T07:00:00Z",
            json!({"active": 1, "ready": 1}),
        ),
        listed_job(
            "w-new",
            "2026-12-03T07:05:00Z",
            json!({"active": 1, "ready": 1}),
        ),
        listed_job("w-starting", "2026-12-03T07:01:00Z", json!({"active": 1})),
    ];
    let (client, server) = serve(
        "default",
        vec![list(jobs), delete("w-starting"), delete("w-new")],
    );
    let round = reconciler(client, &l40s())
        .reconcile(1)
        .await
        .expect("reconciled");
    assert_eq!(
        (round.running, round.pending, round.deleted_extra),
        (2, 1, 2)
    );
    server.await.expect("every request as scripted");
}

#[tokio::test]
async fn terminating_jobs_count_for_nothing() {
    let mut leaving = listed_job(
        "w-leaving",
        "2026-12-03T07:00:00Z",
        json!({"active": 1, "ready": 1}),
    );
    leaving["metadata"]["deletionTimestamp"] = json!("2026-12-03T07:59:00Z");
    let (client, server) = serve("default", vec![list(vec![leaving]), create()]);
    let round = reconciler(client, &l40s())
        .reconcile(1)
        .await
        .expect("reconciled");
    assert_eq!((round.running, round.created), (0, 1));
    server.await.expect("every request as scripted");
}

#[tokio::test]
async fn a_refused_create_names_the_pool_and_namespace() {
    let refused = Expect {
        method: Method::POST,
        path_and_query: JOBS.into(),
        check_body: any_body(),
        status: 403,
        answer: json!({"apiVersion": "v1", "kind": "Status", "status": "Failure",
            "message": "jobs.batch is forbidden", "reason": "Forbidden", "code": 403,
            "metadata": {}}),
    };
    let (client, server) = serve("default", vec![list(vec![]), refused]);
    let error = reconciler(client, &l40s())
        .reconcile(1)
        .await
        .expect_err("refused")
        .to_string();
    assert!(
        error.starts_with("cannot create worker Jobs of pool l40s in namespace gpu-workers"),
        "{error}"
    );
    server.await.expect("every request as scripted");
}

//! A scripted Kubernetes API server: kube-rs's client over tower-test's mock
//! service. Each expected request is checked (method, path and query, body)
//! and answered in order; no API server can run on the test machines.
// Each test binary uses its own part of these helpers.
#![allow(dead_code)]

use http::{Method, Request, Response};
use kube::client::Body;
use kube::Client;
use serde_json::Value;
use tower_test::mock::{self, Handle};

/// One request the client must send, and the answer it gets.
pub struct Expect {
    /// GET, POST, DELETE, PATCH.
    pub method: Method,
    /// The path and query, exactly.
    pub path_and_query: String,
    /// Checks the JSON body (Null when there is none).
    pub check_body: Box<dyn Fn(&Value) + Send>,
    /// The HTTP status of the answer.
    pub status: u16,
    /// The answer's JSON body.
    pub answer: Value,
}

/// A client in `namespace` and the task that serves `script` to it; the
/// task returns the bodies it saw, and fails if a request differs from the
/// script or the script is not used up within the test.
pub fn serve(
    namespace: &str,
    script: Vec<Expect>,
) -> (Client, tokio::task::JoinHandle<Vec<Value>>) {
    let (service, handle): (_, Handle<Request<Body>, Response<Body>>) = mock::pair();
    let server = tokio::spawn(async move {
        let mut handle = handle;
        let mut seen = Vec::new();
        for (index, expect) in script.into_iter().enumerate() {
            let (request, respond) = handle
                .next_request()
                .await
                .unwrap_or_else(|| panic!("request {index} never came"));
            assert_eq!(request.method(), expect.method, "request {index}");
            assert_eq!(
                request.uri().path_and_query().map(|p| p.as_str()),
                Some(expect.path_and_query.as_str()),
                "request {index}"
            );
            let bytes = request
                .into_body()
                .collect_bytes()
                .await
                .expect("request body");
            let body: Value = if bytes.is_empty() {
                Value::Null
            } else {
                serde_json::from_slice(&bytes).expect("JSON body")
            };
            (expect.check_body)(&body);
            seen.push(body);
            let answer = serde_json::to_vec(&expect.answer).expect("answer");
            respond.send_response(
                Response::builder()
                    .status(expect.status)
                    .header("content-type", "application/json")
                    .body(Body::from(answer))
                    .expect("response"),
            );
        }
        seen
    });
    (Client::new(service, namespace), server)
}

/// Expects a body of no interest.
pub fn any_body() -> Box<dyn Fn(&Value) + Send> {
    Box::new(|_| {})
}

/// A Job as the API server lists it.
pub fn listed_job(name: &str, created: &str, status: Value) -> Value {
    serde_json::json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": name, "creationTimestamp": created},
        "spec": {"template": {"spec": {"containers": []}}},
        "status": status,
    })
}

/// A JobList of `items`.
pub fn job_list(items: Vec<Value>) -> Value {
    serde_json::json!({
        "apiVersion": "batch/v1",
        "kind": "JobList",
        "metadata": {"resourceVersion": "1"},
        "items": items,
    })
}

/// The answer to a delete with background propagation.
pub fn deleted() -> Value {
    serde_json::json!({"apiVersion": "v1", "kind": "Status", "status": "Success", "metadata": {}})
}

//! The function traffic of a worker's stream, which the stream hands on
//! without reading it: inputs get their payload as they go out; runner
//! ready, output, items and results go to whoever runs functions
//! (`functions::worker_stream`).

use std::fmt::Display;
use std::future::Future;

use levers9_api::v1::{TaskInput, TaskItem, TaskOutput, TaskResult};

/// What one worker's stream does with its function messages.
pub trait TaskTraffic: Send + Sync + 'static {
    /// Why a message could not be handled; the stream logs it and goes on.
    type Error: Display + Send;

    /// Completes an input just before it goes to the worker; false when it
    /// must not be sent.
    fn attach_input(&self, input: &mut TaskInput) -> impl Future<Output = bool> + Send;

    /// A container's runner is ready for inputs.
    fn runner_ready(
        &self,
        container_id: String,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// What a task printed.
    fn output(&self, output: TaskOutput) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// How an attempt ended.
    fn result(&self, result: TaskResult) -> impl Future<Output = Result<(), Self::Error>> + Send;

    /// An item a generator yielded on worker `worker_id`.
    fn item(
        &self,
        worker_id: &str,
        item: TaskItem,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send;
}

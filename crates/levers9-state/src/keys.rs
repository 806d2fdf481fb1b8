//! The names of the hot-state records that the controlplane's modules share,
//! in one place, so whoever writes a record and whoever reads it cannot drift
//! apart. Each is `<kind>:<id>`; the backend puts `<keyPrefix><namespace>:`
//! in front (see the crate's docs), so the same name may be a key, a set and
//! a channel at once.

/// A container's record (a key), and the channel its changes are published
/// on.
pub fn container(container_id: &str) -> String {
    format!("container:{container_id}")
}

/// A worker's record (a key), and its capacity counters.
pub fn worker(worker_id: &str) -> String {
    format!("worker:{worker_id}")
}

/// A key that lives while the worker's heartbeats arrive.
pub fn worker_alive(worker_id: &str) -> String {
    format!("worker-alive:{worker_id}")
}

/// The queue of messages for a worker's stream, whichever replica holds it.
pub fn inbox(worker_id: &str) -> String {
    format!("worker-inbox:{worker_id}")
}

/// The set of a pool's workers.
pub fn pool_workers(pool: &str) -> String {
    format!("pool:{pool}")
}

/// The set of the containers placed on a worker.
pub fn worker_containers(worker_id: &str) -> String {
    format!("worker-containers:{worker_id}")
}

/// The set of a workspace's containers.
pub fn workspace_containers(workspace_id: &str) -> String {
    format!("workspace-containers:{workspace_id}")
}

/// A task's input (a key), kept until the task ends.
pub fn task_input(task_id: &str) -> String {
    format!("task-input:{task_id}")
}

/// A task's outcome (a key), kept for `taskResultTtlSeconds`.
pub fn task_result(task_id: &str) -> String {
    format!("task-result:{task_id}")
}

/// The channel a reply's events are published on.
pub fn reply(reply: &str) -> String {
    format!("reply:{reply}")
}

/// The channel of a spawned task's events: its own reply.
pub fn task_reply(task_id: &str) -> String {
    format!("task:{task_id}")
}

/// A generator's item too large for its caller's channel (a key), until
/// the caller's replica takes it.
pub fn task_item(task_id: &str, item_index: u64) -> String {
    format!("task-item:{task_id}:{item_index}")
}

/// The channel that says a workspace has new log lines.
pub fn task_logs(workspace_id: &str) -> String {
    format!("task-logs:{workspace_id}")
}

/// The channel of the routed replies a replica's callers wait for.
pub fn replica(replica: &str) -> String {
    format!("replica:{replica}")
}

/// A replica's list of claimed backlog requests.
pub fn backlog_claims(replica: &str) -> String {
    format!("backlog-claims:{replica}")
}

/// A key that lives while a replica's scheduler runs.
pub fn scheduler_alive(replica: &str) -> String {
    format!("scheduler-alive:{replica}")
}

/// A key that lives while an attached cluster's agent asks for its pool.
pub fn cluster_agent(pool: &str) -> String {
    format!("cluster-agent:{pool}")
}

/// The set of a pool's waiting requests.
pub fn pool_waiting(pool: &str) -> String {
    format!("pool-waiting:{pool}")
}

/// The lease of the replica that starts and stops a pool's workers.
pub fn pool_provider(pool: &str) -> String {
    format!("pool-provider:{pool}")
}

/// The mark of a container withdrawn from its worker (a key).
pub fn withdrawn(container_id: &str) -> String {
    format!("withdrawn:{container_id}")
}

/// The channel of an exec's output and exit.
pub fn exec_output(exec_id: &str) -> String {
    format!("exec:{exec_id}")
}

/// The lease of the replica that builds an image, and the channel of its
/// build's events.
pub fn image_build(image_id: &str) -> String {
    format!("image-build:{image_id}")
}

/// The contents of a workspace's dict or queue (a map or a list).
pub fn object(workspace_id: &str, name: &str) -> String {
    format!("object:{workspace_id}:{name}")
}

/// A workspace's registry of the objects of one kind (`dict`, `queue`): a
/// map from name to creation time.
pub fn object_registry(workspace_id: &str, kind: &str) -> String {
    format!("objects:{workspace_id}:{kind}")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The names are what is stored: changing one loses what a running
    /// install (or another replica of the old version) keeps under it.
    #[test]
    fn names_stay_as_stored() {
        assert_eq!(container("c-1"), "container:c-1");
        assert_eq!(worker("w"), "worker:w");
        assert_eq!(worker_alive("w"), "worker-alive:w");
        assert_eq!(inbox("w"), "worker-inbox:w");
        assert_eq!(pool_workers("p"), "pool:p");
        assert_eq!(worker_containers("w"), "worker-containers:w");
        assert_eq!(workspace_containers("ws"), "workspace-containers:ws");
        assert_eq!(task_input("t"), "task-input:t");
        assert_eq!(task_result("t"), "task-result:t");
        assert_eq!(reply("r"), "reply:r");
        assert_eq!(task_reply("t"), "task:t");
        assert_eq!(task_item("t", 3), "task-item:t:3");
        assert_eq!(task_logs("ws"), "task-logs:ws");
        assert_eq!(replica("r"), "replica:r");
        assert_eq!(backlog_claims("r"), "backlog-claims:r");
        assert_eq!(scheduler_alive("r"), "scheduler-alive:r");
        assert_eq!(cluster_agent("p"), "cluster-agent:p");
        assert_eq!(pool_waiting("p"), "pool-waiting:p");
        assert_eq!(pool_provider("p"), "pool-provider:p");
        assert_eq!(withdrawn("c-1"), "withdrawn:c-1");
        assert_eq!(exec_output("e"), "exec:e");
        assert_eq!(image_build("i"), "image-build:i");
        assert_eq!(object("ws", "d"), "object:ws:d");
        assert_eq!(object_registry("ws", "queue"), "objects:ws:queue");
    }
}

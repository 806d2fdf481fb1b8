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
    }
}

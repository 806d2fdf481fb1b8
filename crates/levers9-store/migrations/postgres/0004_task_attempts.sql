-- Each attempt of a task: where it ran and how it ended, for `levers9 task
-- show`. An attempt handed back (its worker drained or was lost before the
-- input ran) runs again under the same number in another container, hence
-- the container in the key.
CREATE TABLE task_attempts (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    attempt BIGINT NOT NULL CHECK (attempt >= 1),
    container_id TEXT NOT NULL,
    worker_id TEXT NOT NULL,
    started_at TIMESTAMPTZ NOT NULL,
    ended_at TIMESTAMPTZ,
    -- empty while it runs; retried, requeued, or the task's final state.
    outcome TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (task_id, attempt, container_id)
);

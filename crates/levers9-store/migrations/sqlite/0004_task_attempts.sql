-- See migrations/postgres/0004_task_attempts.sql.
CREATE TABLE task_attempts (
    task_id TEXT NOT NULL REFERENCES tasks (id),
    attempt INTEGER NOT NULL CHECK (attempt >= 1),
    container_id TEXT NOT NULL,
    worker_id TEXT NOT NULL,
    started_at TEXT NOT NULL,
    ended_at TEXT,
    outcome TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT '',
    PRIMARY KEY (task_id, attempt, container_id)
) STRICT;

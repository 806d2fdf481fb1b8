-- What tasks printed: every chunk of stdout and stderr a worker sent for a
-- task, in arrival order (id), under the task's workspace and stub so that
-- a workspace reads only its own and a function's lines need no join. No
-- foreign key: the controlplane writes these in batches off the call's path
-- and a row must never hold up, or be held up by, the task's own writes.
-- Bounded per task by the writer (the first MiB, then one marker row on
-- stream 'levers9'); rows older than the retention age are swept.
CREATE TABLE task_logs (
    id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    task_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    stub_id TEXT NOT NULL,
    -- stdout, stderr, or levers9 for the controlplane's own marker.
    stream TEXT NOT NULL,
    data BYTEA NOT NULL,
    created_at TIMESTAMPTZ NOT NULL
);

-- One task's lines, in order.
CREATE INDEX task_logs_task_id ON task_logs (task_id, id);
-- A function's lines (its stubs), in order.
CREATE INDEX task_logs_workspace_stub ON task_logs (workspace_id, stub_id, id);
-- The sweep of old rows.
CREATE INDEX task_logs_created_at ON task_logs (created_at);

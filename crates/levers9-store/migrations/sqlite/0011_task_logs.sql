-- See migrations/postgres/0011_task_logs.sql. AUTOINCREMENT: ids are never
-- reused after a sweep, so a follower's cursor (the last id it read) holds.
CREATE TABLE task_logs (
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    task_id TEXT NOT NULL,
    workspace_id TEXT NOT NULL,
    stub_id TEXT NOT NULL,
    stream TEXT NOT NULL,
    data BLOB NOT NULL,
    created_at TEXT NOT NULL
) STRICT;

CREATE INDEX task_logs_task_id ON task_logs (task_id, id);
CREATE INDEX task_logs_workspace_stub ON task_logs (workspace_id, stub_id, id);
CREATE INDEX task_logs_created_at ON task_logs (created_at);

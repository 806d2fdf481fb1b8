-- See migrations/postgres/0008_schedules.sql.
CREATE TABLE schedules (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    app_name TEXT NOT NULL,
    function_name TEXT NOT NULL,
    stub_id TEXT NOT NULL,
    spec TEXT NOT NULL,
    version INTEGER NOT NULL CHECK (version >= 1),
    last_tick INTEGER,
    last_task_id TEXT,
    next_tick INTEGER NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (workspace_id, app_name, function_name),
    FOREIGN KEY (workspace_id, stub_id) REFERENCES stubs (workspace_id, id)
) STRICT;

CREATE INDEX schedules_next_tick ON schedules (next_tick);

-- Uploaded objects, stubs and tasks, mirroring the Postgres schema.
CREATE TABLE objects (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    digest TEXT NOT NULL,
    size INTEGER NOT NULL CHECK (size >= 0),
    created_at TEXT NOT NULL,
    PRIMARY KEY (workspace_id, digest)
) STRICT;

CREATE TABLE stubs (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    name TEXT NOT NULL,
    code_digest TEXT NOT NULL,
    sdk_digest TEXT NOT NULL,
    module_path TEXT NOT NULL,
    function_name TEXT NOT NULL,
    config_json TEXT NOT NULL,
    created_at TEXT NOT NULL,
    UNIQUE (workspace_id, id)
) STRICT;

CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    stub_id TEXT NOT NULL,
    function_name TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN
        ('pending', 'running', 'retry', 'complete', 'error', 'timeout', 'cancelled')),
    attempts INTEGER NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    container_id TEXT NOT NULL DEFAULT '',
    worker_id TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT '',
    created_at TEXT NOT NULL,
    started_at TEXT,
    ended_at TEXT,
    FOREIGN KEY (workspace_id, stub_id) REFERENCES stubs (workspace_id, id)
) STRICT;

CREATE INDEX tasks_workspace_id_created_at ON tasks (workspace_id, created_at DESC, id DESC);

CREATE INDEX tasks_unfinished_created_at ON tasks (created_at, id)
    WHERE state NOT IN ('complete', 'error', 'timeout', 'cancelled');

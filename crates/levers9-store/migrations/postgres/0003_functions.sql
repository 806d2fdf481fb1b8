-- Content-addressed blobs (code and SDK archives) a workspace has uploaded. The
-- bytes live in object storage; this row is what lets a workspace use a digest,
-- so one workspace cannot reference another's upload by guessing its digest.
CREATE TABLE objects (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    digest TEXT NOT NULL,
    size BIGINT NOT NULL CHECK (size >= 0),
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workspace_id, digest)
);

-- Deployable functions. The id is derived from the content, so rows are never
-- updated: a changed function is a new stub.
CREATE TABLE stubs (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    name TEXT NOT NULL,
    code_digest TEXT NOT NULL,
    sdk_digest TEXT NOT NULL,
    module_path TEXT NOT NULL,
    function_name TEXT NOT NULL,
    config_json TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    -- The target of the tasks' foreign key below.
    UNIQUE (workspace_id, id)
);

-- Invocations. The foreign key names the workspace too, so a task can only run
-- a stub of its own workspace. attempts is BIGINT so both backends decode it
-- the same way.
CREATE TABLE tasks (
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    stub_id TEXT NOT NULL,
    function_name TEXT NOT NULL,
    state TEXT NOT NULL DEFAULT 'pending' CHECK (state IN
        ('pending', 'running', 'retry', 'complete', 'error', 'timeout', 'cancelled')),
    attempts BIGINT NOT NULL DEFAULT 0 CHECK (attempts >= 0),
    container_id TEXT NOT NULL DEFAULT '',
    worker_id TEXT NOT NULL DEFAULT '',
    message TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMPTZ NOT NULL,
    started_at TIMESTAMPTZ,
    ended_at TIMESTAMPTZ,
    FOREIGN KEY (workspace_id, stub_id) REFERENCES stubs (workspace_id, id)
);

-- A workspace's tasks, newest first.
CREATE INDEX tasks_workspace_id_created_at ON tasks (workspace_id, created_at DESC, id DESC);

-- The unfinished tasks, oldest first: partial, so it stays as small as the
-- backlog however many finished tasks pile up. Queries must repeat this
-- predicate word for word for the planner to use it (see function_sql.rs).
CREATE INDEX tasks_unfinished_created_at ON tasks (created_at, id)
    WHERE state NOT IN ('complete', 'error', 'timeout', 'cancelled');

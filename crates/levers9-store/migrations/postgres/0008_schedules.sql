-- Schedules of deployed functions: the current deploy of an app names them;
-- a redeploy replaces the app's rows (a function deployed again with the same
-- spec keeps its ticks). Ticks are whole seconds since the Unix epoch, UTC.
-- The controlplane replica that holds the schedules lease fires a due row by
-- moving next_tick forward only if it is still the value it read, in the
-- same transaction that inserts the run's task under an id derived from
-- (schedule, tick): a tick is fired once, whichever replica fires it.
CREATE TABLE schedules (
    -- Derived from (workspace, app, function).
    id TEXT PRIMARY KEY,
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    app_name TEXT NOT NULL,
    function_name TEXT NOT NULL,
    stub_id TEXT NOT NULL,
    -- "cron:<five fields>" or "period:<seconds>".
    spec TEXT NOT NULL,
    -- The deploy that set this row.
    version BIGINT NOT NULL CHECK (version >= 1),
    last_tick BIGINT,
    last_task_id TEXT,
    next_tick BIGINT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    UNIQUE (workspace_id, app_name, function_name),
    FOREIGN KEY (workspace_id, stub_id) REFERENCES stubs (workspace_id, id)
);

-- The due schedules, soonest first.
CREATE INDEX schedules_next_tick ON schedules (next_tick);

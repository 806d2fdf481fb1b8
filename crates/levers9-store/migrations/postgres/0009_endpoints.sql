-- Web endpoints: a function of the current deploy of an app served over
-- HTTP at /endpoint/<workspace name>/<name>. A deploy replaces its app's
-- rows in its transaction; the key makes a name belong to one app of the
-- workspace at a time, so two apps cannot both claim it, even when deployed
-- at once.
CREATE TABLE endpoints (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    name TEXT NOT NULL,
    app_name TEXT NOT NULL,
    function_name TEXT NOT NULL,
    stub_id TEXT NOT NULL,
    -- Served without a token when true.
    public BOOLEAN NOT NULL,
    -- The deploy that set this row.
    version BIGINT NOT NULL CHECK (version >= 1),
    PRIMARY KEY (workspace_id, name),
    FOREIGN KEY (workspace_id, stub_id) REFERENCES stubs (workspace_id, id)
);

-- A redeploy deletes its app's rows.
CREATE INDEX endpoints_app ON endpoints (workspace_id, app_name);

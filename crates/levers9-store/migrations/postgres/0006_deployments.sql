-- Deployed apps: each deploy of an app is a new version that names the stub
-- of every function of the app. Older versions stay, so what ran when can be
-- told; lookups read the highest version. The version row is inserted first:
-- its key makes two concurrent deploys of one app take different versions or
-- fail, never mix their functions in one version.
CREATE TABLE deployments (
    workspace_id TEXT NOT NULL REFERENCES workspaces (id),
    app_name TEXT NOT NULL,
    version BIGINT NOT NULL CHECK (version >= 1),
    -- The token that deployed it.
    deployed_by TEXT NOT NULL,
    created_at TIMESTAMPTZ NOT NULL,
    PRIMARY KEY (workspace_id, app_name, version)
);

-- The functions of one version. The stub's key names the workspace too, so a
-- deployment can only name a stub of its own workspace.
CREATE TABLE deployment_functions (
    workspace_id TEXT NOT NULL,
    app_name TEXT NOT NULL,
    version BIGINT NOT NULL,
    function_name TEXT NOT NULL,
    stub_id TEXT NOT NULL,
    PRIMARY KEY (workspace_id, app_name, version, function_name),
    FOREIGN KEY (workspace_id, app_name, version)
        REFERENCES deployments (workspace_id, app_name, version),
    FOREIGN KEY (workspace_id, stub_id) REFERENCES stubs (workspace_id, id)
);

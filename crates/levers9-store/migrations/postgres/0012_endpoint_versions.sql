-- The endpoints of every version of an app, as each deploy set them, so
-- that /endpoint/<workspace name>/<name>@<version> can call the endpoint
-- as it was in that version (its stub then; stubs are never deleted).
-- `endpoints` keeps only the current version's rows and the rule that a
-- name belongs to one app of the workspace at a time; this table is only
-- added to, by the deploy's transaction.
CREATE TABLE endpoint_versions (
    workspace_id TEXT NOT NULL,
    app_name TEXT NOT NULL,
    version BIGINT NOT NULL,
    name TEXT NOT NULL,
    function_name TEXT NOT NULL,
    stub_id TEXT NOT NULL,
    public BOOLEAN NOT NULL,
    kind TEXT NOT NULL,
    PRIMARY KEY (workspace_id, app_name, name, version),
    FOREIGN KEY (workspace_id, app_name, version)
        REFERENCES deployments (workspace_id, app_name, version),
    FOREIGN KEY (workspace_id, stub_id) REFERENCES stubs (workspace_id, id)
);

-- Versions deployed before this table existed are known only as far as
-- the current ones go.
INSERT INTO endpoint_versions
    (workspace_id, app_name, version, name, function_name, stub_id, public, kind)
SELECT workspace_id, app_name, version, name, function_name, stub_id, public, kind
FROM endpoints;

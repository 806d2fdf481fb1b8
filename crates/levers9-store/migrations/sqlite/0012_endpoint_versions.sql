-- See migrations/postgres/0012_endpoint_versions.sql.
CREATE TABLE endpoint_versions (
    workspace_id TEXT NOT NULL,
    app_name TEXT NOT NULL,
    version INTEGER NOT NULL,
    name TEXT NOT NULL,
    function_name TEXT NOT NULL,
    stub_id TEXT NOT NULL,
    public INTEGER NOT NULL CHECK (public IN (0, 1)),
    kind TEXT NOT NULL,
    PRIMARY KEY (workspace_id, app_name, name, version),
    FOREIGN KEY (workspace_id, app_name, version)
        REFERENCES deployments (workspace_id, app_name, version),
    FOREIGN KEY (workspace_id, stub_id) REFERENCES stubs (workspace_id, id)
) STRICT;

INSERT INTO endpoint_versions
    (workspace_id, app_name, version, name, function_name, stub_id, public, kind)
SELECT workspace_id, app_name, version, name, function_name, stub_id, public, kind
FROM endpoints;

//! The `LEVERS9_*` environment layer: each variable sets one key and beats the
//! file. A table rather than a naming rule, because camelCase keys do not
//! survive the trip through upper-case variable names.

use serde_yaml::Value;

use crate::error::ConfigError;
use crate::schema::Config;

/// Every environment variable that sets a config key, with that key.
pub const ENV_OVERRIDES: &[(&str, &str)] = &[
    (
        "LEVERS9_BOOTSTRAP_SECRET",
        "controlplane.auth.bootstrapSecret",
    ),
    (
        "LEVERS9_TOKEN_CACHE_SECONDS",
        "controlplane.auth.tokenCacheSeconds",
    ),
    ("LEVERS9_BIND_ADDRESS", "controlplane.bindAddress"),
    ("LEVERS9_GRPC_PORT", "controlplane.grpc.port"),
    ("LEVERS9_HTTP_PORT", "controlplane.http.port"),
    ("LEVERS9_TLS_CERT_FILE", "controlplane.tls.certFile"),
    ("LEVERS9_TLS_KEY_FILE", "controlplane.tls.keyFile"),
    ("LEVERS9_DATA_DIR", "controlplane.dataDir"),
    (
        "LEVERS9_AGENT_BINARIES_DIR",
        "controlplane.agentBinariesDir",
    ),
    ("LEVERS9_AGENT_DEV_BUILDS", "controlplane.agentDevBuilds"),
    (
        "LEVERS9_KEY_ROTATION_BATCH_SIZE",
        "controlplane.keyRotation.batchSize",
    ),
    ("LEVERS9_POSTGRES_HOST", "database.postgres.host"),
    ("LEVERS9_POSTGRES_PORT", "database.postgres.port"),
    ("LEVERS9_POSTGRES_NAME", "database.postgres.name"),
    ("LEVERS9_POSTGRES_USER", "database.postgres.user"),
    ("LEVERS9_POSTGRES_PASSWORD", "database.postgres.password"),
    ("LEVERS9_POSTGRES_SSL_MODE", "database.postgres.sslMode"),
    ("LEVERS9_ENCRYPTION_KEY", "database.postgres.encryptionKey"),
    (
        "LEVERS9_PREVIOUS_ENCRYPTION_KEYS",
        "database.postgres.previousEncryptionKeys",
    ),
    ("LEVERS9_REDIS_ADDRS", "database.redis.addrs"),
    ("LEVERS9_REDIS_PASSWORD", "database.redis.password"),
    ("LEVERS9_REDIS_DB", "database.redis.db"),
    ("LEVERS9_REDIS_KEY_PREFIX", "database.redis.keyPrefix"),
    ("LEVERS9_SQLITE_PATH", "database.sqlite.path"),
    ("LEVERS9_WORKER_IMAGE_REGISTRY", "worker.imageRegistry"),
    (
        "LEVERS9_WORKER_INSECURE_REGISTRIES",
        "worker.insecureRegistries",
    ),
    (
        "LEVERS9_WORKER_HEARTBEAT_TTL_SECONDS",
        "worker.heartbeatTtlSeconds",
    ),
    (
        "LEVERS9_BASE_IMAGE_REGISTRY",
        "imageService.runner.baseImageRegistry",
    ),
    ("LEVERS9_BASE_IMAGE", "imageService.runner.baseImage"),
    ("LEVERS9_LOCAL_IMAGES", "imageService.localImages"),
    (
        "LEVERS9_IMAGE_BUILD_TIMEOUT_SECONDS",
        "imageService.buildTimeoutSeconds",
    ),
    (
        "LEVERS9_REGISTRY_CREDENTIALS_FILE",
        "imageService.registryCredentialsFile",
    ),
    (
        "LEVERS9_WORKER_SECURITY_PROFILE",
        "worker.containerSecurity.profile",
    ),
    ("LEVERS9_WORKER_SECCOMP", "worker.containerSecurity.seccomp"),
    (
        "LEVERS9_WORKER_CONTAINER_SERVER_AUTH",
        "worker.containerServerAuth",
    ),
    ("LEVERS9_WORKER_CDI_SPEC_DIRS", "worker.cdiSpecDirs"),
    ("LEVERS9_WORKER_SPARES", "worker.spares"),
    (
        "LEVERS9_WORKER_VOLUME_MOUNT_VALIDATION",
        "worker.volumeMountValidation",
    ),
    (
        "LEVERS9_TASK_RESULT_TTL_SECONDS",
        "controlplane.taskResultTtlSeconds",
    ),
    (
        "LEVERS9_WORKSPACE_S3_ENDPOINT",
        "storage.workspace.endpoint",
    ),
    ("LEVERS9_WORKSPACE_S3_REGION", "storage.workspace.region"),
    ("LEVERS9_WORKSPACE_BUCKET", "storage.workspace.bucket"),
    ("LEVERS9_WORKSPACE_PREFIX", "storage.workspace.prefix"),
    (
        "LEVERS9_WORKSPACE_S3_PATH_STYLE",
        "storage.workspace.pathStyle",
    ),
    (
        "LEVERS9_WORKSPACE_ACCESS_KEY_ID",
        "storage.workspace.accessKeyId",
    ),
    (
        "LEVERS9_WORKSPACE_SECRET_ACCESS_KEY",
        "storage.workspace.secretAccessKey",
    ),
    ("LEVERS9_JUICEFS_META_URL", "storage.juicefs.metaUrl"),
    (
        "LEVERS9_JUICEFS_WORKSPACE_META_URL",
        "storage.juicefs.workspaceMetaUrl",
    ),
    ("LEVERS9_JUICEFS_BUCKET", "storage.juicefs.bucket"),
    ("LEVERS9_JUICEFS_STORAGE", "storage.juicefs.storage"),
    (
        "LEVERS9_JUICEFS_CACHE_SIZE_MIB",
        "storage.juicefs.cacheSizeMib",
    ),
    ("LEVERS9_JUICEFS_ACCESS_KEY", "storage.juicefs.accessKey"),
    ("LEVERS9_JUICEFS_SECRET_KEY", "storage.juicefs.secretKey"),
    ("LEVERS9_JUICEFS_BINARY", "storage.juicefs.binary"),
    ("LEVERS9_JUICEFS_NAME", "storage.juicefs.name"),
    ("LEVERS9_VOLUMES_LOCAL_DIR", "storage.volumes.localDir"),
];

/// Applies every variable of [`ENV_OVERRIDES`] that `env` has.
pub(crate) fn apply(
    config: Config,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let mut config = config;
    for &(variable, key) in ENV_OVERRIDES {
        let Some(raw) = env(variable) else { continue };
        let fail = |message: String| ConfigError::Env {
            variable,
            key,
            message,
        };
        let mut tree = serde_yaml::to_value(&config).map_err(|e| fail(e.to_string()))?;
        let slot = lookup(&mut tree, key)
            .ok_or_else(|| fail("the key is missing from the schema".into()))?;
        *slot = typed_like(slot, &raw).map_err(fail)?;
        config = serde_path_to_error::deserialize(tree).map_err(|e| fail(e.inner().to_string()))?;
    }
    Ok(config)
}

fn lookup<'a>(tree: &'a mut Value, dotted: &str) -> Option<&'a mut Value> {
    dotted
        .split('.')
        .try_fold(tree, |node, part| node.get_mut(part))
}

/// Reads `raw` as the type the key already has: lists are comma-separated,
/// numbers and booleans are parsed, everything else stays a string (so a
/// password of digits is not turned into a number).
fn typed_like(current: &Value, raw: &str) -> Result<Value, String> {
    match current {
        Value::Sequence(_) => Ok(Value::Sequence(
            raw.split(',')
                .map(str::trim)
                .filter(|item| !item.is_empty())
                .map(|item| Value::String(item.to_owned()))
                .collect(),
        )),
        Value::Number(_) => serde_yaml::from_str::<Value>(raw)
            .ok()
            .filter(Value::is_number)
            .ok_or_else(|| format!("expected a number, got {raw:?}")),
        Value::Bool(_) => raw
            .parse::<bool>()
            .map(Value::Bool)
            .map_err(|_| format!("expected true or false, got {raw:?}")),
        _ => Ok(Value::String(raw.to_owned())),
    }
}

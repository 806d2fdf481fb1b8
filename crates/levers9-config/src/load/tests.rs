use std::collections::HashMap;
use std::io::Write;

use super::*;
use crate::{ShippedDefault, SHIPPED_ENCRYPTION_KEY};

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let map: HashMap<String, String> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |name| map.get(name).cloned()
}

fn no_env(_: &str) -> Option<String> {
    None
}

fn file_with(text: &str) -> tempfile::NamedTempFile {
    let mut file = tempfile::NamedTempFile::new().expect("temp file");
    file.write_all(text.as_bytes()).expect("write");
    file
}

#[test]
fn defaults_use_the_documented_ports_and_the_embedded_backends() {
    let (config, source) = load(None, &no_env).expect("defaults load");
    assert_eq!(source, ConfigSource::Defaults);
    assert_eq!(config.controlplane.grpc.port, 1993);
    assert_eq!(config.controlplane.http.port, 1994);
    assert!(!config.database.postgres.is_configured());
    assert!(!config.database.redis.is_configured());
}

#[test]
fn file_overrides_defaults_and_keeps_what_it_leaves_out() {
    let file = file_with(
        "database:\n  postgres:\n    host: db.internal\n    password: s3cret\n    previousEncryptionKeys: [old1]\n",
    );
    let (config, _) = load(Some(file.path()), &no_env).expect("loads");
    assert_eq!(config.database.postgres.host, "db.internal");
    assert_eq!(config.database.postgres.password.expose(), "s3cret");
    assert_eq!(config.database.postgres.port, 5432);
    assert_eq!(config.database.postgres.previous_encryption_keys.len(), 1);
}

#[test]
fn environment_beats_the_file() {
    let file = file_with("controlplane:\n  grpc:\n    port: 2000\n");
    let env = env_of(&[
        ("LEVERS9_GRPC_PORT", "3000"),
        ("LEVERS9_BOOTSTRAP_SECRET", "12345"),
        ("LEVERS9_REDIS_ADDRS", "a:6379, b:6379"),
    ]);
    let (config, _) = load(Some(file.path()), &env).expect("loads");
    assert_eq!(config.controlplane.grpc.port, 3000);
    // Digits stay a string: a secret is never turned into a number.
    assert_eq!(config.controlplane.auth.bootstrap_secret.expose(), "12345");
    assert_eq!(config.database.redis.addrs, vec!["a:6379", "b:6379"]);
}

#[test]
fn unknown_key_names_the_key_and_the_file() {
    let file = file_with("database:\n  postgres:\n    hots: db\n");
    let error = load(Some(file.path()), &no_env).expect_err("unknown key");
    let text = error.to_string();
    assert!(text.contains(&file.path().display().to_string()), "{text}");
    assert!(text.contains("database.postgres"), "{text}");
    assert!(text.contains("unknown field `hots`"), "{text}");
}

#[test]
fn wrong_type_names_the_key_and_the_file() {
    let file = file_with("controlplane:\n  http:\n    port: eighty\n");
    let text = load(Some(file.path()), &no_env)
        .expect_err("wrong type")
        .to_string();
    assert!(text.contains("controlplane.http.port"), "{text}");
    assert!(text.contains(&file.path().display().to_string()), "{text}");
}

#[test]
fn wrong_type_in_the_environment_names_the_variable() {
    let env = env_of(&[("LEVERS9_HTTP_PORT", "http")]);
    let text = load(None, &env).expect_err("wrong type").to_string();
    assert!(text.contains("LEVERS9_HTTP_PORT"), "{text}");
    assert!(text.contains("controlplane.http.port"), "{text}");
}

#[test]
fn same_port_for_both_listeners_is_refused() {
    let env = env_of(&[("LEVERS9_GRPC_PORT", "7000"), ("LEVERS9_HTTP_PORT", "7000")]);
    let text = load(None, &env).expect_err("clash").to_string();
    assert!(text.contains("different ports"), "{text}");
}

#[test]
fn missing_file_is_a_clear_error() {
    let text = load(Some(Path::new("/nonexistent/levers9.yaml")), &no_env)
        .expect_err("missing")
        .to_string();
    assert!(
        text.contains("cannot read config file /nonexistent/levers9.yaml"),
        "{text}"
    );
}

#[test]
fn shipped_defaults_are_found_only_for_servers_in_use() {
    let (embedded, _) = load(None, &no_env).expect("loads");
    assert_eq!(
        embedded.shipped_defaults_in_use(),
        vec![ShippedDefault::EncryptionKey]
    );
    let env = env_of(&[
        ("LEVERS9_POSTGRES_HOST", "db"),
        ("LEVERS9_REDIS_ADDRS", "redis:6379"),
    ]);
    let (servers, _) = load(None, &env).expect("loads");
    assert_eq!(
        servers.shipped_defaults_in_use(),
        vec![
            ShippedDefault::EncryptionKey,
            ShippedDefault::PostgresPassword,
            ShippedDefault::RedisWithoutPassword
        ]
    );
}

#[test]
fn redacted_config_prints_no_secret() {
    let env = env_of(&[
        ("LEVERS9_BOOTSTRAP_SECRET", "bootstrap-value"),
        ("LEVERS9_POSTGRES_PASSWORD", "pg-value"),
        ("LEVERS9_ENCRYPTION_KEY", "key-value"),
        ("LEVERS9_PREVIOUS_ENCRYPTION_KEYS", "old-value"),
        ("LEVERS9_REDIS_PASSWORD", "redis-value"),
    ]);
    let (config, _) = load(None, &env).expect("loads");
    let printed = serde_yaml::to_string(&config.redacted()).expect("yaml");
    for secret in [
        "bootstrap-value",
        "pg-value",
        "key-value",
        "old-value",
        "redis-value",
    ] {
        assert!(!printed.contains(secret), "{secret} leaked:\n{printed}");
    }
    assert!(printed.contains("<redacted>"));
    let debug = format!("{config:?}");
    assert!(!debug.contains("pg-value"), "Debug leaks secrets: {debug}");
}

#[test]
fn redacted_config_says_which_secrets_are_shipped_defaults() {
    let (config, _) = load(None, &no_env).expect("loads");
    let printed = serde_yaml::to_string(&config.redacted()).expect("yaml");
    assert!(printed.contains("<redacted: shipped default>"), "{printed}");
    assert!(!printed.contains(SHIPPED_ENCRYPTION_KEY));
}

#[test]
fn pools_name_their_runtime_and_refuse_unknown_ones() {
    let file = file_with("worker:\n  pools:\n    l40s:\n      runtime: gvisor\n    default: {}\n");
    let (config, _) = load(Some(file.path()), &no_env).expect("loads");
    assert_eq!(
        config.worker.pools["l40s"].runtime,
        crate::PoolRuntime::Gvisor
    );
    assert_eq!(
        config.worker.pools["default"].runtime,
        crate::PoolRuntime::Runc
    );
    let bad = file_with("worker:\n  pools:\n    l40s:\n      runtime: kata\n");
    let text = load(Some(bad.path()), &no_env)
        .expect_err("kata")
        .to_string();
    assert!(text.contains("worker.pools.l40s.runtime"), "{text}");
}

#[test]
fn hardening_ships_as_todays_behaviour_or_an_observe_mode() {
    let (config, _) = load(None, &no_env).expect("loads");
    let worker = &config.worker;
    let security = &worker.container_security;
    assert_eq!(security.profile, Some(crate::SecurityProfileName::Default));
    assert_eq!(security.seccomp, Some(crate::SeccompSetting::Observe));
    assert_eq!(security.capabilities, None, "the profile's: today's");
    assert_eq!(
        worker.container_server_auth,
        crate::ContainerServerAuthMode::Observe
    );
    assert_eq!(
        worker.volume_mount_validation,
        crate::VolumeMountValidationMode::Log
    );
}

#[test]
fn hardening_keys_load_per_pool_and_from_the_environment() {
    let file = file_with(
        "worker:\n  containerSecurity:\n    readOnlyRootfs: true\n  pools:\n    eks-gpu:\n      \
         security:\n        profile: hardened\n      containerServerAuth: enforce\n",
    );
    let env = env_of(&[
        ("LEVERS9_WORKER_SECCOMP", "enforce"),
        ("LEVERS9_WORKER_VOLUME_MOUNT_VALIDATION", "enforce"),
    ]);
    let (config, _) = load(Some(file.path()), &env).expect("loads");
    let worker = &config.worker;
    assert_eq!(worker.container_security.read_only_rootfs, Some(true));
    assert_eq!(
        worker.container_security.seccomp,
        Some(crate::SeccompSetting::Enforce)
    );
    assert_eq!(
        worker.volume_mount_validation,
        crate::VolumeMountValidationMode::Enforce
    );
    let pool = &worker.pools["eks-gpu"];
    assert_eq!(
        pool.security.profile,
        Some(crate::SecurityProfileName::Hardened)
    );
    assert_eq!(
        pool.container_server_auth,
        Some(crate::ContainerServerAuthMode::Enforce)
    );
    let bad =
        file_with("worker:\n  pools:\n    a:\n      security:\n        maskedPaths: [proc/x]\n");
    let text = load(Some(bad.path()), &no_env)
        .expect_err("relative path")
        .to_string();
    assert!(
        text.contains("worker.pools.a.security.maskedPaths"),
        "{text}"
    );
}

/// The EKS values' `worker` block (pools per hardware class, each pinned
/// to a node group, GPU requests enforced) is a valid `worker` config.
#[test]
fn the_eks_worker_values_are_a_valid_worker_config() {
    let values = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../deploy/eks/values.yaml"
    ))
    .expect("deploy/eks/values.yaml");
    let values: serde_yaml::Value = serde_yaml::from_str(&values).expect("values parse");
    let mut worker = values["worker"].clone();
    // The chart fills in the keys of worker Jobs in its own cluster.
    for (_, pool) in worker["pools"].as_mapping_mut().expect("pools").iter_mut() {
        let jobs: serde_yaml::Value = serde_yaml::from_str(
            "{workerImage: r.test/levers9/worker:1, controlplaneAddress: levers9-controlplane:1993}",
        )
        .expect("yaml");
        pool.as_mapping_mut()
            .expect("a pool")
            .insert("kubernetes".into(), jobs);
    }
    let pools = worker["pools"].as_mapping().expect("pools").clone();
    let file = file_with(
        &serde_yaml::to_string(&serde_yaml::Mapping::from_iter([(
            "worker".into(),
            std::mem::take(&mut worker),
        )]))
        .expect("yaml"),
    );
    let (config, _) = load(Some(file.path()), &no_env).expect("the EKS worker block loads");
    assert!(config.worker.job_resources_enforced);
    assert_eq!(config.worker.pools.len(), pools.len());
    let l40s = &config.worker.pools["l40s"];
    assert_eq!(l40s.node_selector["levers9.dev/pool"], "gpu-l40s");
    assert_eq!(l40s.tolerations[0].key, "nvidia.com/gpu");
    assert_eq!(l40s.gpu_type, "L40S");
    assert!(config.worker.pools["build"].requires_pool_selector);
}

#[test]
fn a_pool_gpu_count_without_a_gpu_type_is_refused() {
    let file = file_with("worker:\n  pools:\n    gpu:\n      resources: {gpuCount: 2}\n");
    let error = load(Some(file.path()), &no_env)
        .expect_err("refused")
        .to_string();
    assert!(error.contains("worker.pools.gpu.gpuType"), "{error}");
}

#[test]
fn worker_jobs_registry_and_volume_keys_load_from_the_file_and_the_environment() {
    let file = file_with(
        "worker:\n  pools:\n    default:\n      provider: kubernetes\n      kubernetes:\n        \
         workerImage: r.test/levers9/worker:1\n        controlplaneAddress: levers9-controlplane:1993\n        \
         imagePullSecrets: [regcred]\n        registryCredentialsSecret: levers9-registry\n        \
         juicefsSecret: levers9-worker-juicefs\nstorage:\n  juicefs:\n    bucket: http://s3.test/volumes\n",
    );
    let env = env_of(&[
        (
            "LEVERS9_WORKER_INSECURE_REGISTRIES",
            "k3d-r.localhost:5111, r2:80",
        ),
        ("LEVERS9_JUICEFS_META_URL", "redis://:pw@redis:6379/1"),
        ("LEVERS9_JUICEFS_STORAGE", "minio"),
        ("LEVERS9_JUICEFS_CACHE_SIZE_MIB", "2048"),
    ]);
    let (config, _) = load(Some(file.path()), &env).expect("loads");
    assert_eq!(
        config.worker.insecure_registries,
        ["k3d-r.localhost:5111", "r2:80"]
    );
    let keys = &config.worker.pools["default"].kubernetes;
    assert_eq!(keys.image_pull_secrets, ["regcred"]);
    assert_eq!(keys.registry_credentials_secret, "levers9-registry");
    assert_eq!(keys.juicefs_secret, "levers9-worker-juicefs");
    assert_eq!(config.storage.juicefs.storage, "minio");
    assert_eq!(config.storage.juicefs.cache_size_mib, 2048);

    let env = env_of(&[("LEVERS9_WORKER_INSECURE_REGISTRIES", "http://r:5000")]);
    let error = load(None, &env).expect_err("a scheme").to_string();
    assert!(
        error.contains("worker.insecureRegistries") && error.contains("is not HOST[:PORT]"),
        "{error}"
    );
}

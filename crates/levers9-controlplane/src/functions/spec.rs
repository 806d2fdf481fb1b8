//! A stub's configuration as the controlplane keeps it: defaults filled in,
//! limits checked, and the container it runs in.

use std::collections::BTreeMap;

use base64::engine::general_purpose::STANDARD as BASE64;
use base64::Engine;
use levers9_api::v1::StubConfig;
use levers9_store::StubRecord;
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::fleet::records::ContainerRecord;
use crate::functions::FunctionError;

/// CPU reserved for each container of a function that names none: 0.125
/// core (docs/functions.md), its guaranteed share, so many warm containers
/// pack on a worker; it may use more while the worker has CPU idle. A
/// container run directly gets a whole core instead
/// (`services::container::CONTAINER_DEFAULT_CPU_MILLICORES`).
const FUNCTION_DEFAULT_CPU_MILLICORES: u64 = 125;
const FUNCTION_DEFAULT_MEMORY_MIB: u64 = 512;
const DEFAULT_TIMEOUT_SECONDS: u32 = 300;
const DEFAULT_KEEP_WARM_SECONDS: u32 = 60;
const DEFAULT_MAX_CONTAINERS: u32 = 100;

/// Where the function's code is unpacked inside its container.
pub const CODE_DIR: &str = "/levers9/code";
/// Where the SDK (the runner and cloudpickle) is unpacked.
pub const SDK_DIR: &str = "/levers9/sdk";

/// A stub's resources and policy, defaults filled in.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct StubSpec {
    /// A full image reference.
    pub image: String,
    /// CPU reserved per container.
    pub cpu_millicores: u64,
    /// Memory reserved per container.
    pub memory_mib: u64,
    /// GPU types in order of preference.
    pub gpu_types: Vec<String>,
    /// GPUs per container.
    pub gpu_count: u32,
    /// Further attempts after a failed one.
    pub retries: u32,
    /// Per input.
    pub timeout_seconds: u32,
    /// How long an idle container waits for more inputs.
    pub keep_warm_seconds: u32,
    /// Inputs one container runs at once.
    pub concurrency: u32,
    /// Environment of its containers.
    pub env: BTreeMap<String, String>,
    /// Workspace secrets its containers get as environment variables.
    pub secrets: Vec<String>,
    /// The pool its containers run in.
    pub pool: String,
    /// Containers at once, at most.
    pub max_containers: u32,
    /// Volumes of the workspace and where they are mounted: name, path.
    #[serde(default)]
    pub volumes: Vec<(String, String)>,
    /// A generator: called only by a Run that says so, and streams items.
    /// Left out of the stored form when false, so the stubs of plain
    /// functions keep the ids they had before generators came.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub generator: bool,
    /// Containers kept running while the stub is deployed, even idle. Left
    /// out of the stored form when 0, like `generator`.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub min_containers: u32,
    /// A `@cls` class's instance parameters (cloudpickled, base64), given
    /// to its runner; part of the stub, so each parameter set is its own.
    /// Left out of the stored form when empty (a function), like `generator`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub class_parameters: String,
}

/// The largest pickled class parameters: they travel in an environment
/// variable (base64), and Linux caps one at 128 KiB.
pub(crate) const MAX_CLASS_PARAMETERS_BYTES: usize = 32 * 1024;

fn is_zero(value: &u32) -> bool {
    *value == 0
}

fn or(value: u32, default: u32) -> u32 {
    if value == 0 {
        default
    } else {
        value
    }
}

fn at_most(
    what: &'static str,
    value: u32,
    max: u32,
    hint: &'static str,
) -> Result<(), FunctionError> {
    if value > max {
        return Err(FunctionError::OverLimit {
            what,
            value,
            max,
            hint,
        });
    }
    Ok(())
}

impl StubSpec {
    /// The spec of a request; `image` is the request's image, already
    /// qualified (the base image when it named none).
    pub fn from_config(config: StubConfig, image: String) -> Result<StubSpec, FunctionError> {
        at_most("retries", config.retries, 10, "lower retries")?;
        at_most(
            "timeout",
            config.timeout_seconds,
            24 * 3600,
            "a call may run a day at most",
        )?;
        at_most(
            "keep_warm_seconds",
            config.keep_warm_seconds,
            3600,
            "keep containers warm an hour at most",
        )?;
        at_most("concurrency", config.concurrency, 1000, "lower concurrency")?;
        at_most(
            "max_containers",
            config.max_containers,
            10_000,
            "lower max_containers",
        )?;
        let max_containers = or(config.max_containers, DEFAULT_MAX_CONTAINERS);
        at_most(
            "min_containers",
            config.min_containers,
            max_containers,
            "min_containers cannot be more than max_containers",
        )?;
        let gpu_count = crate::fleet::gpu_count(&config.gpu_types, config.gpu_count)?;
        let volumes = volume_mounts(&config.volumes)?;
        check_env(&config.env)?;
        if config.class_parameters.len() > MAX_CLASS_PARAMETERS_BYTES {
            return Err(FunctionError::ClassParametersTooLarge(
                config.class_parameters.len(),
            ));
        }
        Ok(StubSpec {
            image,
            cpu_millicores: if config.cpu_millicores == 0 {
                FUNCTION_DEFAULT_CPU_MILLICORES
            } else {
                config.cpu_millicores
            },
            memory_mib: if config.memory_mib == 0 {
                FUNCTION_DEFAULT_MEMORY_MIB
            } else {
                config.memory_mib
            },
            gpu_count,
            gpu_types: config.gpu_types,
            retries: config.retries,
            timeout_seconds: or(config.timeout_seconds, DEFAULT_TIMEOUT_SECONDS),
            keep_warm_seconds: or(config.keep_warm_seconds, DEFAULT_KEEP_WARM_SECONDS),
            concurrency: or(config.concurrency, 1),
            env: config.env.into_iter().collect(),
            secrets: config.secrets,
            // Empty: any pool that takes requests naming none.
            pool: config.pool,
            max_containers,
            volumes,
            generator: config.generator,
            min_containers: config.min_containers,
            class_parameters: BASE64.encode(&config.class_parameters),
        })
    }

    /// The spec as JSON, as the stub row's `config_json` keeps it.
    pub fn to_json(&self) -> String {
        // A plain struct of strings and numbers: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The configuration as the API shows a stored stub: the request's
    /// fields with the defaults filled in.
    pub fn to_config(&self) -> StubConfig {
        StubConfig {
            image: self.image.clone(),
            cpu_millicores: self.cpu_millicores,
            memory_mib: self.memory_mib,
            gpu_types: self.gpu_types.clone(),
            gpu_count: self.gpu_count,
            retries: self.retries,
            timeout_seconds: self.timeout_seconds,
            keep_warm_seconds: self.keep_warm_seconds,
            concurrency: self.concurrency,
            env: self.env.clone().into_iter().collect(),
            secrets: self.secrets.clone(),
            pool: self.pool.clone(),
            max_containers: self.max_containers,
            volumes: self
                .volumes
                .iter()
                .map(|(name, mount_path)| levers9_api::v1::VolumeMount {
                    name: name.clone(),
                    mount_path: mount_path.clone(),
                })
                .collect(),
            generator: self.generator,
            min_containers: self.min_containers,
            // Written by from_config; a corrupt value shows as none.
            class_parameters: BASE64.decode(&self.class_parameters).unwrap_or_default(),
        }
    }

    /// Reads the stored form.
    pub fn from_json(stub_id: &str, json: &str) -> Result<StubSpec, FunctionError> {
        serde_json::from_str(json).map_err(|source| FunctionError::CorruptStubConfig {
            stub_id: stub_id.to_owned(),
            source,
        })
    }
}

/// The `LEVERS9_*` names a stub may set, and the values that can tighten
/// its pool's container security (the worker reads them as
/// `levers9_worker::security::{PROFILE_VARIABLE, SECCOMP_VARIABLE}` and
/// refuses to start a container that asks for less than its pool).
const SECURITY_ENV: &[(&str, &[&str])] = &[
    ("LEVERS9_SECURITY_PROFILE", &["hardened"]),
    ("LEVERS9_SECCOMP", &["observe", "enforce"]),
];

/// Checks a stub's environment: names a container can have, and no
/// `LEVERS9_*` name but the security requests of [`SECURITY_ENV`], with a
/// value that can tighten (the others are the worker's, which wires the
/// runner up with them).
fn check_env(env: &std::collections::HashMap<String, String>) -> Result<(), FunctionError> {
    let mut names: Vec<&String> = env.keys().collect();
    // The first bad name in order, whatever the map's order.
    names.sort();
    for name in names {
        if name.is_empty() || name.contains(['=', '\0']) {
            return Err(FunctionError::InvalidEnvName(name.clone()));
        }
        let value = &env[name];
        match SECURITY_ENV.iter().find(|(known, _)| known == name) {
            Some((_, allowed)) if !allowed.contains(&value.as_str()) => {
                return Err(FunctionError::SecurityEnvCannotTighten {
                    name: name.clone(),
                    value: value.clone(),
                    allowed: allowed.join(" or "),
                });
            }
            Some(_) => {}
            None if name.starts_with("LEVERS9_") => {
                return Err(FunctionError::ReservedEnvName(name.clone()));
            }
            None => {}
        }
    }
    Ok(())
}

/// Checks a stub's volumes: known names, absolute mount paths, none twice.
fn volume_mounts(
    volumes: &[levers9_api::v1::VolumeMount],
) -> Result<Vec<(String, String)>, FunctionError> {
    let mut seen = std::collections::BTreeSet::new();
    volumes
        .iter()
        .map(|v| {
            levers9_volumes::validate_name(&v.name)?;
            let path = &v.mount_path;
            if !path.starts_with('/') || path.split('/').any(|p| p == "..") || path == "/" {
                return Err(FunctionError::InvalidMountPath {
                    volume: v.name.clone(),
                    path: path.clone(),
                });
            }
            if !seen.insert(path.trim_end_matches('/')) {
                return Err(FunctionError::MountPathTwice(path.clone()));
            }
            Ok((v.name.clone(), path.clone()))
        })
        .collect()
}

/// The id of a stub: the same workspace, function, code and configuration
/// give the same stub, so a repeated deploy reuses it (and its warm
/// containers).
pub fn stub_id(workspace_id: &str, parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    hash.update(workspace_id.as_bytes());
    for part in parts {
        // Length-prefixed, so no two part lists hash alike.
        hash.update((part.len() as u64).to_be_bytes());
        hash.update(part.as_bytes());
    }
    format!("st-{}", &hex::encode(hash.finalize())[..32])
}

/// A new container for a stub's inputs.
pub fn container(stub: &StubRecord, spec: &StubSpec) -> ContainerRecord {
    let mut env = spec.env.clone();
    for (key, value) in [
        ("LEVERS9_STUB_ID", stub.id.as_str()),
        ("LEVERS9_MODULE_PATH", stub.module_path.as_str()),
        ("LEVERS9_FUNCTION", stub.function_name.as_str()),
        ("LEVERS9_CODE_DIR", CODE_DIR),
        ("PYTHONUNBUFFERED", "1"),
    ] {
        env.insert(key.to_owned(), value.to_owned());
    }
    env.insert(
        "LEVERS9_CONCURRENCY".to_owned(),
        spec.concurrency.to_string(),
    );
    env.insert("PYTHONPATH".to_owned(), format!("{SDK_DIR}:{CODE_DIR}"));
    if !spec.class_parameters.is_empty() {
        env.insert(
            "LEVERS9_CLASS_PARAMETERS".to_owned(),
            spec.class_parameters.clone(),
        );
    }
    ContainerRecord {
        args: ["python3", "-m", "levers9.runner"]
            .map(str::to_owned)
            .to_vec(),
        env,
        pool: spec.pool.clone(),
        cpu_millicores: spec.cpu_millicores,
        memory_mib: spec.memory_mib,
        secrets: spec.secrets.clone(),
        gpu_types: spec.gpu_types.clone(),
        gpu_count: spec.gpu_count,
        stub_id: stub.id.clone(),
        objects: vec![
            (stub.code_digest.clone(), CODE_DIR.to_owned(), true),
            (stub.sdk_digest.clone(), SDK_DIR.to_owned(), true),
        ],
        compiled_objects: vec![stub.sdk_digest.clone()],
        container_server: true,
        working_dir: CODE_DIR.to_owned(),
        volumes: spec.volumes.clone(),
        ..ContainerRecord::pending(stub.workspace_id.clone(), spec.image.clone())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_fill_zeroes_and_limits_are_checked() {
        let spec = StubSpec::from_config(StubConfig::default(), "img".into()).unwrap();
        assert_eq!(spec.concurrency, 1);
        assert_eq!(spec.timeout_seconds, DEFAULT_TIMEOUT_SECONDS);
        assert_eq!(spec.pool, "", "any pool");
        assert_eq!(spec.gpu_count, 0);
        let too_many = StubConfig {
            retries: 11,
            ..StubConfig::default()
        };
        let error = StubSpec::from_config(too_many, "img".into()).unwrap_err();
        assert!(error.to_string().contains("lower retries"), "{error}");
        let gpu = StubConfig {
            gpu_types: vec!["L40S".into()],
            ..StubConfig::default()
        };
        assert_eq!(
            StubSpec::from_config(gpu, "img".into()).unwrap().gpu_count,
            1
        );
    }

    fn with_env(pairs: &[(&str, &str)]) -> Result<StubSpec, FunctionError> {
        let config = StubConfig {
            env: pairs
                .iter()
                .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
                .collect(),
            ..StubConfig::default()
        };
        StubSpec::from_config(config, "img".into())
    }

    #[test]
    fn a_stub_may_ask_for_stricter_security_and_its_containers_get_the_request() {
        let spec = with_env(&[
            ("LEVERS9_SECURITY_PROFILE", "hardened"),
            ("LEVERS9_SECCOMP", "enforce"),
            ("OTHER", "x"),
        ])
        .expect("accepted");
        assert!(with_env(&[("LEVERS9_SECCOMP", "observe")]).is_ok());
        let stub = StubRecord {
            id: "st-1".into(),
            workspace_id: "ws".into(),
            name: "f".into(),
            code_digest: "sha256:1".into(),
            sdk_digest: "sha256:2".into(),
            module_path: "app".into(),
            function_name: "f".into(),
            config_json: spec.to_json(),
            created_at: chrono::Utc::now(),
        };
        let env = container(&stub, &spec).env;
        assert_eq!(env["LEVERS9_SECURITY_PROFILE"], "hardened");
        assert_eq!(env["LEVERS9_SECCOMP"], "enforce");
        assert_eq!(env["LEVERS9_STUB_ID"], "st-1");
    }

    #[test]
    fn other_levers9_names_and_values_that_cannot_tighten_are_refused() {
        let message = |pairs: &[(&str, &str)]| match with_env(pairs) {
            Err(
                error @ (FunctionError::InvalidEnvName(_)
                | FunctionError::SecurityEnvCannotTighten { .. }
                | FunctionError::ReservedEnvName(_)),
            ) => error.to_string(),
            other => panic!("{pairs:?}: {other:?}"),
        };
        assert_eq!(
            message(&[("LEVERS9_SECCOMP", "off")]),
            "env LEVERS9_SECCOMP=\"off\" cannot tighten the pool's container security, and a \
             stub can never loosen it: use LEVERS9_SECCOMP=observe or enforce, or leave \
             LEVERS9_SECCOMP out"
        );
        assert!(message(&[("LEVERS9_SECURITY_PROFILE", "default")])
            .contains("use LEVERS9_SECURITY_PROFILE=hardened"),);
        assert_eq!(
            message(&[("LEVERS9_STUB_ID", "st-other")]),
            "env name LEVERS9_STUB_ID is reserved: names starting with LEVERS9_ are set by the \
             worker (a stub may only set LEVERS9_SECURITY_PROFILE and LEVERS9_SECCOMP, to \
             tighten its pool's security)"
        );
        assert!(message(&[("A=B", "x")]).contains("not a valid environment variable name"));
        assert!(message(&[("", "x")]).contains("not a valid environment variable name"));
    }

    #[test]
    fn only_a_generator_says_so_in_the_stored_form() {
        let plain = StubSpec::from_config(StubConfig::default(), "img".into()).unwrap();
        // A plain function's stub keeps the id it had before generators.
        assert!(
            !plain.to_json().contains("generator"),
            "{}",
            plain.to_json()
        );
        let generator = StubConfig {
            generator: true,
            ..StubConfig::default()
        };
        let spec = StubSpec::from_config(generator, "img".into()).unwrap();
        let stored = StubSpec::from_json("st-1", &spec.to_json()).unwrap();
        assert!(stored.generator);
        assert!(stored.to_config().generator);
        assert!(
            !StubSpec::from_json("st-1", &plain.to_json())
                .unwrap()
                .generator
        );
    }

    #[test]
    fn min_containers_is_at_most_max_containers_and_stored_only_when_set() {
        let plain = StubSpec::from_config(StubConfig::default(), "img".into()).unwrap();
        assert!(!plain.to_json().contains("minContainers"));
        let floor = StubConfig {
            min_containers: 2,
            max_containers: 3,
            ..StubConfig::default()
        };
        let spec = StubSpec::from_config(floor, "img".into()).unwrap();
        assert_eq!(
            StubSpec::from_json("st-1", &spec.to_json())
                .unwrap()
                .min_containers,
            2
        );
        let above = StubConfig {
            min_containers: 4,
            max_containers: 3,
            ..StubConfig::default()
        };
        let error = StubSpec::from_config(above, "img".into()).unwrap_err();
        assert_eq!(
            error.to_string(),
            "min_containers is 4, more than the limit of 3: min_containers cannot be more than \
             max_containers"
        );
    }

    #[test]
    fn class_parameters_are_stored_only_for_a_class_and_reach_its_runner() {
        let plain = StubSpec::from_config(StubConfig::default(), "img".into()).unwrap();
        assert!(!plain.to_json().contains("classParameters"));
        let stub = StubRecord {
            id: "st-1".into(),
            workspace_id: "w".into(),
            name: "app.Model".into(),
            code_digest: "sha256:c".into(),
            sdk_digest: "sha256:s".into(),
            module_path: "app.py".into(),
            function_name: "Model".into(),
            config_json: String::new(),
            created_at: chrono::Utc::now(),
        };
        assert!(!container(&stub, &plain)
            .env
            .contains_key("LEVERS9_CLASS_PARAMETERS"));
        let class = |parameters: &[u8]| {
            StubSpec::from_config(
                StubConfig {
                    class_parameters: parameters.to_vec(),
                    ..StubConfig::default()
                },
                "img".into(),
            )
        };
        let large = class(b"large").unwrap();
        assert_ne!(large.to_json(), class(b"small").unwrap().to_json());
        let stored = StubSpec::from_json("st-1", &large.to_json()).unwrap();
        assert_eq!(stored.to_config().class_parameters, b"large");
        assert_eq!(
            container(&stub, &stored).env["LEVERS9_CLASS_PARAMETERS"],
            BASE64.encode(b"large")
        );
        let too_big = class(&vec![0; MAX_CLASS_PARAMETERS_BYTES + 1]).unwrap_err();
        assert!(
            too_big
                .to_string()
                .contains("load the data in an @enter method"),
            "{too_big}"
        );
    }

    #[test]
    fn stub_ids_follow_content() {
        let a = stub_id("w", &["f", "sha256:1"]);
        assert_eq!(a, stub_id("w", &["f", "sha256:1"]));
        assert_ne!(a, stub_id("w", &["f", "sha256:2"]));
        assert_ne!(a, stub_id("other", &["f", "sha256:1"]));
        assert_ne!(stub_id("w", &["ab", "c"]), stub_id("w", &["a", "bc"]));
    }
}

//! Precedence: worker-wide < pool < a stub's tightening; loosening refused
//! (the container does not start); attached-cluster pools take the
//! worker-wide value.

use levers9_config::{
    ContainerSecurityConfig, ContainerServerAuthMode, PoolConfig, SeccompSetting,
    SecurityProfileName, WorkerConfig,
};
use levers9_runtime::{CapabilitySet, SeccompMode, SecurityProfile};

use super::*;
use crate::fake_runtime::id;

fn env(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

/// Worker-wide seccomp enforce and a read-only root; pool `gpu` hardened
/// with capabilities back to default, and its own server auth.
fn config() -> WorkerConfig {
    let mut config = WorkerConfig::default();
    config.container_security.seccomp = Some(SeccompSetting::Enforce);
    config.container_security.read_only_rootfs = Some(true);
    config.pools.insert(
        "gpu".into(),
        PoolConfig {
            security: ContainerSecurityConfig {
                profile: Some(SecurityProfileName::Hardened),
                capabilities: Some(levers9_config::CapabilitiesSetting::Default),
                ..Default::default()
            },
            container_server_auth: Some(ContainerServerAuthMode::Enforce),
            ..Default::default()
        },
    );
    config.pools.insert(
        "cpu".into(),
        PoolConfig {
            security: ContainerSecurityConfig {
                seccomp: Some(SeccompSetting::Observe),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    config
}

#[test]
fn the_shipped_config_resolves_to_todays_profile_observing() {
    let policy = SecurityPolicy::default();
    assert_eq!(
        policy.profile,
        SecurityProfile {
            seccomp: SeccompMode::Observe,
            ..SecurityProfile::default()
        }
    );
    assert_eq!(policy.server_auth, ContainerServerAuthMode::Observe);
    assert_eq!(
        policy.mounts,
        levers9_config::VolumeMountValidationMode::Log
    );
    assert_eq!(policy.for_stub(&[]), Ok(policy.profile.clone()));
}

#[test]
fn a_pool_beats_the_worker_wide_value_key_by_key() {
    let config = config();
    let global = SecurityPolicy::resolve(&config, "other", PoolOrigin::Configured);
    assert_eq!(global.profile.seccomp, SeccompMode::Enforce);
    assert!(global.profile.read_only_rootfs);
    assert_eq!(global.profile.capabilities, CapabilitySet::Default);
    assert_eq!(global.server_auth, ContainerServerAuthMode::Observe);

    let gpu = SecurityPolicy::resolve(&config, "gpu", PoolOrigin::Configured);
    let expected = SecurityProfile {
        capabilities: CapabilitySet::Default,
        ..SecurityProfile::hardened()
    };
    assert_eq!(gpu.profile, expected, "its profile, then its own keys");
    assert_eq!(gpu.server_auth, ContainerServerAuthMode::Enforce);

    let cpu = SecurityPolicy::resolve(&config, "cpu", PoolOrigin::Configured);
    assert_eq!(cpu.profile.seccomp, SeccompMode::Observe, "the pool's key");
    assert!(
        cpu.profile.read_only_rootfs,
        "the worker-wide key it left out"
    );
}

#[test]
fn an_attached_cluster_pool_takes_the_worker_wide_value() {
    let config = config();
    let attached = SecurityPolicy::resolve(&config, "gpu", PoolOrigin::AttachedCluster);
    let global = SecurityPolicy::resolve(&config, "other", PoolOrigin::Configured);
    assert_eq!(attached.profile, global.profile);
    assert_eq!(attached.server_auth, global.server_auth);
    assert_eq!(attached.pool, "gpu");
}

#[test]
fn a_stub_tightens_its_pool() {
    let cpu = SecurityPolicy::resolve(&config(), "cpu", PoolOrigin::Configured);
    let hardened = cpu
        .for_stub(&env(&[(PROFILE_VARIABLE, "hardened")]))
        .expect("granted");
    assert_eq!(hardened, SecurityProfile::hardened());

    let enforce = cpu
        .for_stub(&env(&[(SECCOMP_VARIABLE, "enforce")]))
        .expect("granted");
    assert_eq!(enforce.seccomp, SeccompMode::Enforce);
    assert_eq!(
        enforce.capabilities,
        CapabilitySet::Default,
        "only what it asked for"
    );

    let mut off = config();
    off.container_security.seccomp = Some(SeccompSetting::Off);
    let off = SecurityPolicy::resolve(&off, "other", PoolOrigin::Configured);
    let observe = off
        .for_stub(&env(&[(SECCOMP_VARIABLE, "observe")]))
        .expect("granted");
    assert_eq!(observe.seccomp, SeccompMode::Observe);
}

#[test]
fn hardened_asks_for_less_than_no_pool() {
    // A pool stricter than `hardened` where the profile says nothing (a
    // user namespace, more masked and read-only paths) keeps its values.
    let mut config = config();
    config.pools.insert(
        "strictest".into(),
        PoolConfig {
            security: ContainerSecurityConfig {
                profile: Some(SecurityProfileName::Hardened),
                user_namespace: Some(true),
                masked_paths: Some(vec!["/proc/keys".into()]),
                readonly_paths: Some(vec!["/proc/sys".into()]),
                ..Default::default()
            },
            ..Default::default()
        },
    );
    let pool = SecurityPolicy::resolve(&config, "strictest", PoolOrigin::Configured);
    let granted = pool
        .for_stub(&env(&[
            (PROFILE_VARIABLE, "hardened"),
            (SECCOMP_VARIABLE, "enforce"),
        ]))
        .expect("granted");
    assert!(granted.user_namespace);
    assert!(granted.masked_paths.contains(&"/proc/keys".to_owned()));
    assert!(granted
        .masked_paths
        .contains(&"/sys/devices/virtual/powercap".to_owned()));
    assert_eq!(granted.readonly_paths, ["/proc/sys"]);
    assert_eq!(
        granted,
        pool.profile.tightened_by(&SecurityProfile::hardened())
    );
}

#[test]
fn a_stub_cannot_loosen_its_pool() {
    let gpu = SecurityPolicy::resolve(&config(), "gpu", PoolOrigin::Configured);
    let refused = gpu
        .for_stub(&env(&[
            (PROFILE_VARIABLE, "default"),
            (SECCOMP_VARIABLE, "observe"),
        ]))
        .expect_err("refused");
    assert_eq!(refused.pool, "gpu");
    assert_eq!(
        refused.reasons,
        [
            "LEVERS9_SECURITY_PROFILE=default is looser than pool gpu's security in seccomp, \
             readOnlyRootfs: a stub can only tighten its pool's security; remove \
             LEVERS9_SECURITY_PROFILE or set it to hardened",
            "LEVERS9_SECCOMP=observe asks for less than pool gpu's seccomp (enforce): a stub \
             can only tighten its pool's security; remove LEVERS9_SECCOMP or set it to enforce",
        ]
    );
    assert_eq!(
        refused.to_string(),
        refused.reasons.join("; "),
        "what the caller reads"
    );

    let unknown = gpu
        .for_stub(&env(&[
            (SECCOMP_VARIABLE, "lax"),
            (PROFILE_VARIABLE, "strict"),
        ]))
        .expect_err("refused");
    assert_eq!(
        unknown.reasons,
        [
            "LEVERS9_SECURITY_PROFILE=\"strict\" is not a security profile: the one a stub can \
             ask for is hardened",
            "LEVERS9_SECCOMP=\"lax\" is not a seccomp mode: a stub can ask for observe or enforce",
        ]
    );
}

#[test]
fn harden_sets_the_profile_refuses_loosening_and_checks_mounts() {
    let metrics = SecurityMetrics::default();
    let subject = Subject {
        container_id: Some(id("c1")),
        stub_id: "s1".into(),
        pool: "gpu".into(),
    };
    let rootfs = tempfile::tempdir().expect("tempdir");
    let mut config = config();
    config.volume_mount_validation = levers9_config::VolumeMountValidationMode::Enforce;
    let gpu = SecurityPolicy::resolve(&config, "gpu", PoolOrigin::Configured);
    let mut spec = ContainerSpec::new(id("c1"), rootfs.path(), vec!["true".into()]);
    spec.env = env(&[(SECCOMP_VARIABLE, "enforce")]);
    gpu.harden(&mut spec, rootfs.path(), &subject, &metrics)
        .expect("nothing to refuse");
    assert_eq!(spec.security, gpu.profile);

    spec.env = env(&[(SECCOMP_VARIABLE, "observe")]);
    let error = gpu
        .harden(&mut spec, rootfs.path(), &subject, &metrics)
        .expect_err("refused");
    assert!(matches!(error, HardenRefused::Stub(_)), "{error:?}");
    assert!(
        error
            .to_string()
            .starts_with("LEVERS9_SECCOMP=observe asks for less than pool gpu's seccomp"),
        "{error}"
    );
    assert_eq!(metrics.count(Check::StubLoosening, "enforce", "gpu"), 1);

    spec.env.clear();
    spec.mounts.push(levers9_runtime::BindMount {
        source: "/host".into(),
        destination: "/etc".into(),
        read_only: true,
    });
    let error = gpu
        .harden(&mut spec, rootfs.path(), &subject, &metrics)
        .expect_err("refused");
    let HardenRefused::Mount(refused) = error else {
        panic!("a mount refusal: {error:?}");
    };
    assert_eq!(refused.target, "/etc");
}

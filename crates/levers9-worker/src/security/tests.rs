//! Precedence: worker-wide < pool < a stub's tightening; loosening refused;
//! attached-cluster pools take the worker-wide value.

use levers9_config::{
    ContainerSecurityConfig, ContainerServerAuthMode, PoolConfig, SeccompSetting,
    SecurityProfileName, WorkerConfig,
};
use levers9_runtime::{CapabilitySet, SeccompMode, SecurityProfile};

use super::*;

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
    let plain = policy.for_stub(&[]);
    assert_eq!(plain.profile, policy.profile);
    assert!(plain.refused.is_empty());
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
    let hardened = cpu.for_stub(&env(&[(PROFILE_VARIABLE, "hardened")]));
    assert_eq!(hardened.profile, SecurityProfile::hardened());
    assert!(hardened.refused.is_empty(), "{:?}", hardened.refused);

    let enforce = cpu.for_stub(&env(&[(SECCOMP_VARIABLE, "enforce")]));
    assert_eq!(enforce.profile.seccomp, SeccompMode::Enforce);
    assert_eq!(
        enforce.profile.capabilities,
        CapabilitySet::Default,
        "only what it asked for"
    );
    assert!(enforce.refused.is_empty());
}

#[test]
fn a_stub_cannot_loosen_its_pool() {
    let gpu = SecurityPolicy::resolve(&config(), "gpu", PoolOrigin::Configured);
    let asked = gpu.for_stub(&env(&[
        (PROFILE_VARIABLE, "default"),
        (SECCOMP_VARIABLE, "off"),
    ]));
    assert_eq!(asked.profile, gpu.profile, "the pool's values apply");
    assert_eq!(asked.refused.len(), 2, "{:?}", asked.refused);
    assert_eq!(
        asked.refused[0],
        "LEVERS9_SECURITY_PROFILE=default is looser than pool gpu in seccomp, readOnlyRootfs, \
         maskedPaths: a stub cannot loosen its pool's security, so the pool's values apply"
    );
    assert_eq!(
        asked.refused[1],
        "LEVERS9_SECCOMP=off asks for less than pool gpu's seccomp (enforce): a stub cannot \
         loosen its pool's security, so the pool's value applies"
    );

    let unknown = gpu.for_stub(&env(&[(SECCOMP_VARIABLE, "lax")]));
    assert_eq!(unknown.profile, gpu.profile);
    assert_eq!(
        unknown.refused,
        ["LEVERS9_SECCOMP=\"lax\" is not a seccomp mode (off, observe or enforce); ignored"]
    );
}

#[test]
fn harden_sets_the_profile_records_refusals_and_checks_mounts() {
    let metrics = SecurityMetrics::default();
    let subject = Subject {
        container_id: "c1".into(),
        stub_id: "s1".into(),
        pool: "gpu".into(),
    };
    let rootfs = tempfile::tempdir().expect("tempdir");
    let mut config = config();
    config.volume_mount_validation = levers9_config::VolumeMountValidationMode::Enforce;
    let gpu = SecurityPolicy::resolve(&config, "gpu", PoolOrigin::Configured);
    let mut spec = ContainerSpec::new("c1", rootfs.path(), vec!["true".into()]);
    spec.env = env(&[(SECCOMP_VARIABLE, "observe")]);
    let refused = gpu
        .harden(&mut spec, rootfs.path(), &subject, &metrics)
        .expect("no mounts to refuse");
    assert_eq!(spec.security, gpu.profile);
    assert_eq!(refused.len(), 1, "{refused:?}");
    assert_eq!(metrics.count(Check::StubLoosening, "enforce", "gpu"), 1);

    spec.mounts.push(levers9_runtime::BindMount {
        source: "/host".into(),
        destination: "/etc".into(),
        read_only: true,
    });
    let error = gpu
        .harden(&mut spec, rootfs.path(), &subject, &metrics)
        .expect_err("refused");
    assert_eq!(error.target, "/etc");
}

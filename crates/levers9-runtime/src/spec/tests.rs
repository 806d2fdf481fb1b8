use super::*;
use crate::{BindMount, ContainerId, Resources};

fn id(id: &str) -> ContainerId {
    ContainerId::parse(id).unwrap()
}

fn caps(memory_overhead_mib: u64, pids_overhead: u64) -> Capabilities {
    Capabilities {
        name: "test",
        sandboxed: false,
        supports_seccomp: true,
        detects_oom: true,
        memory_overhead_mib,
        pids_overhead,
        supports_netns_path: true,
    }
}

#[test]
fn device_nodes_are_created_and_allowed_by_the_cgroup() {
    let mut s = ContainerSpec::new(id("c1"), "/r", vec!["true".into()]);
    s.devices.push(crate::DeviceNode {
        path: "/dev/nvidia0".into(),
        kind: "c".into(),
        major: 195,
        minor: 0,
        file_mode: 0o666,
    });
    let json = serde_json::to_value(
        build(&s, Path::new("/r"), &caps(0, 0), "/levers9-c1").expect("builds"),
    )
    .expect("json");
    let node = &json["linux"]["devices"][0];
    assert_eq!(node["path"], "/dev/nvidia0");
    assert_eq!(
        (
            node["type"].as_str(),
            node["major"].as_i64(),
            node["minor"].as_i64()
        ),
        (Some("c"), Some(195), Some(0))
    );
    let rules = json["linux"]["resources"]["devices"]
        .as_array()
        .expect("rules");
    assert_eq!(rules[0]["allow"], false, "everything else stays denied");
    assert_eq!(rules[1]["allow"], true);
    assert_eq!(
        (rules[1]["major"].as_i64(), rules[1]["minor"].as_i64()),
        (Some(195), Some(0))
    );

    let plain = ContainerSpec::new(id("c2"), "/r", vec!["true".into()]);
    let json = serde_json::to_value(
        build(&plain, Path::new("/r"), &caps(0, 0), "/levers9-c2").expect("builds"),
    )
    .expect("json");
    assert!(json["linux"].get("devices").is_none());
}

#[test]
fn limits_mounts_and_namespaces_are_generated() {
    let mut s = ContainerSpec::new(id("c1"), "/r", vec!["true".into()]);
    s.resources = Resources {
        cpu_millicores: 500,
        cpu_limit_millicores: 0,
        memory_mib: 32,
        pids: 16,
    };
    s.mounts.push(BindMount {
        source: "/data".into(),
        destination: "/data".into(),
        read_only: true,
    });
    s.tmp_mib = Some(8);
    let json = serde_json::to_value(
        build(&s, Path::new("/r"), &caps(100, 10), "/levers9-c1").expect("builds"),
    )
    .expect("json");
    let res = &json["linux"]["resources"];
    assert_eq!(res["memory"]["limit"], 132 << 20);
    assert_eq!(res["memory"]["swap"], 132 << 20);
    assert_eq!(res["cpu"]["quota"], 50_000, "no limit above the guarantee");
    assert_eq!(res["cpu"]["period"], 100_000);
    assert_eq!(res["cpu"]["shares"], 512);
    assert_eq!(res["pids"]["limit"], 26);
    assert_eq!(json["linux"]["cgroupsPath"], "/levers9-c1");
    s.resources.cpu_limit_millicores = 1000;
    let burst = serde_json::to_value(
        build(&s, Path::new("/r"), &caps(100, 10), "/levers9-c1").expect("builds"),
    )
    .expect("json");
    let cpu = &burst["linux"]["resources"]["cpu"];
    assert_eq!(cpu["quota"], 100_000, "it may burst to the limit");
    assert_eq!(cpu["shares"], 512, "its weight stays its guarantee");
    assert_eq!(json["process"]["terminal"], false);
    assert!(json["process"]["env"][0]
        .as_str()
        .unwrap_or("")
        .starts_with("PATH="));
    let dests: Vec<&str> = json["mounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .filter_map(|m| m["destination"].as_str())
        .collect();
    for d in [
        "/proc",
        "/dev",
        "/dev/shm",
        "/dev/pts",
        "/dev/mqueue",
        "/sys",
        "/tmp",
        "/data",
    ] {
        assert!(dests.contains(&d), "{d} mounted");
    }
    let types: Vec<&str> = json["linux"]["namespaces"]
        .as_array()
        .expect("namespaces")
        .iter()
        .filter_map(|n| n["type"].as_str())
        .collect();
    for t in ["pid", "network", "ipc", "uts", "mount"] {
        assert!(types.contains(&t), "{t} namespace");
    }
    assert_eq!(json["linux"]["seccomp"]["defaultAction"], "SCMP_ACT_ERRNO");
}

fn built(s: &ContainerSpec, sandboxed: bool) -> serde_json::Value {
    let mut caps = caps(0, 0);
    caps.sandboxed = sandboxed;
    serde_json::to_value(build(s, Path::new("/r"), &caps, "/c").expect("builds")).expect("json")
}

#[test]
fn the_default_profile_builds_todays_spec() {
    let json = built(
        &ContainerSpec::new(id("c1"), "/r", vec!["true".into()]),
        false,
    );
    let mut bounding: Vec<&str> = json["process"]["capabilities"]["bounding"]
        .as_array()
        .expect("bounding set")
        .iter()
        .filter_map(|c| c.as_str())
        .collect();
    bounding.sort_unstable();
    assert_eq!(
        bounding,
        ["CAP_AUDIT_WRITE", "CAP_KILL", "CAP_NET_BIND_SERVICE"]
    );
    assert_eq!(json["process"]["noNewPrivileges"], true);
    assert_eq!(json["root"]["readonly"], false);
    assert!(json["linux"]["uidMappings"].is_null());
    assert_eq!(
        json["linux"]["maskedPaths"],
        serde_json::to_value(get_default_maskedpaths()).expect("json")
    );
}

#[test]
fn the_hardened_profile_is_applied_and_gvisor_gets_what_it_honours() {
    let mut s = ContainerSpec::new(id("c1"), "/r", vec!["true".into()]);
    s.security = crate::SecurityProfile::hardened();
    s.security.user_namespace = true;
    let json = built(&s, false);
    assert_eq!(
        json["process"]["capabilities"]["bounding"],
        serde_json::json!([])
    );
    assert_eq!(json["root"]["readonly"], true);
    assert_eq!(
        json["linux"]["uidMappings"][0]["hostID"],
        USER_NAMESPACE_HOST_ID
    );
    assert_eq!(json["linux"]["gidMappings"][0]["containerID"], 0);
    assert!(json["linux"]["namespaces"]
        .as_array()
        .expect("namespaces")
        .iter()
        .any(|n| n["type"] == "user"));
    let tmp = json["mounts"]
        .as_array()
        .expect("mounts")
        .iter()
        .find(|m| m["destination"] == "/tmp")
        .expect("a read-only root gets a /tmp");
    assert_eq!(tmp["type"], "tmpfs");
    let masked = json["linux"]["maskedPaths"].to_string();
    assert!(masked.contains("/proc/kallsyms"), "{masked}");

    let gvisor = built(&s, true);
    assert_eq!(gvisor["root"]["readonly"], true);
    assert_eq!(
        gvisor["process"]["capabilities"]["bounding"],
        serde_json::json!([])
    );
    assert!(
        gvisor["linux"]["uidMappings"].is_null(),
        "no user namespace"
    );
    assert!(!gvisor["linux"]["maskedPaths"]
        .to_string()
        .contains("kallsyms"));
}

#[test]
fn bad_specs_are_rejected() {
    let ok = ContainerSpec::new(id("c1"), "/r", vec!["true".into()]);
    assert!(validate(&ok).is_ok());
    let s = ContainerSpec {
        args: vec![],
        ..ok.clone()
    };
    assert!(validate(&s).is_err());
    let s = ContainerSpec {
        cwd: "tmp".into(),
        ..ok
    };
    assert!(validate(&s).is_err());
}

//! The shape of a request, and the code linked into a spare.

use super::*;
use levers9_api::v1::ObjectMount;

fn request(code_digest: &str) -> RunContainer {
    RunContainer {
        container_id: "c1".into(),
        workspace_id: "w1".into(),
        image: "img@sha256:1".into(),
        container_server: true,
        cpu_millicores: 250,
        memory_mib: 256,
        env: [
            ("LEVERS9_CODE_DIR", "/levers9/code"),
            ("PYTHONPATH", "/levers9/sdk:/levers9/code"),
            ("LEVERS9_FUNCTION", "f"),
            ("TOKEN", "secret"),
        ]
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .into(),
        objects: vec![
            ObjectMount {
                digest: code_digest.into(),
                target: "/levers9/code".into(),
                unpack: true,
                compile: false,
            },
            ObjectMount {
                digest: "sdk1".into(),
                target: "/levers9/sdk".into(),
                unpack: true,
                compile: true,
            },
        ],
        ..RunContainer::default()
    }
}

#[test]
fn a_shape_leaves_out_the_code_and_what_python_reads_later() {
    let one = shape(&request("code1")).expect("a function container");
    let mut other = request("code2");
    other.container_id = "c2".into();
    other.request_id = "r2".into();
    other.secret_names = vec!["TOKEN".into()];
    other.env.insert("LEVERS9_FUNCTION".into(), "g".into());
    other.env.insert("TOKEN".into(), "another".into());
    assert_eq!(Some(&one), shape(&other).as_ref());
    let mut kept: Vec<_> = one.env.keys().collect();
    kept.sort();
    assert_eq!(kept, ["LEVERS9_CODE_DIR", "PYTHONPATH"]);

    let mut bigger = request("code1");
    bigger.memory_mib = 512;
    assert_ne!(Some(one.clone()), shape(&bigger));
    let mut elsewhere = request("code1");
    elsewhere.workspace_id = "w2".into();
    assert_ne!(Some(one.clone()), shape(&elsewhere));
    let mut started_otherwise = request("code1");
    started_otherwise
        .env
        .insert("PYTHONHASHSEED".into(), "0".into());
    assert_ne!(Some(one.clone()), shape(&started_otherwise));
    let mut hardened = request("code1");
    hardened
        .env
        .insert(PROFILE_VARIABLE.into(), "hardened".into());
    assert_ne!(Some(one), shape(&hardened));
}

#[test]
fn gpus_volumes_and_the_host_network_get_no_spare() {
    let mut gpu = request("c");
    gpu.gpu_count = 1;
    let mut host = request("c");
    host.host_network = true;
    let mut plain = request("c");
    plain.container_server = false;
    for request in [gpu, host, plain] {
        assert_eq!(shape(&request), None);
    }
}

#[test]
fn the_code_is_linked_and_its_modules_named() {
    let dir = tempfile::tempdir().unwrap();
    let from = dir.path().join("from");
    std::fs::create_dir_all(from.join("pkg/sub")).unwrap();
    std::fs::write(from.join("app.py"), "x = 1").unwrap();
    std::fs::write(from.join("pkg/sub/m.py"), "y = 2").unwrap();
    std::os::unix::fs::symlink("app.py", from.join("alias.py")).unwrap();
    let to = dir.path().join("to");
    std::fs::create_dir(&to).unwrap();
    link_tree(&from, &to).unwrap();
    assert_eq!(
        std::fs::read_to_string(to.join("pkg/sub/m.py")).unwrap(),
        "y = 2"
    );
    assert_eq!(
        std::fs::read_to_string(to.join("alias.py")).unwrap(),
        "x = 1"
    );
    let mut names = top_level_modules(&to).unwrap();
    names.sort();
    assert_eq!(names, ["alias", "app", "pkg"]);
}

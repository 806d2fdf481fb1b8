use std::collections::HashMap;

use super::*;

fn b64(s: &str) -> String {
    STANDARD.encode(s)
}

fn basic(user: &str, password: &str) -> HostCredentials {
    HostCredentials::Static(RegistryCredentials::Basic {
        username: user.into(),
        password: password.into(),
    })
}

#[test]
fn every_docker_config_entry_form_is_read() {
    let text = serde_json::json!({
        "auths": {
            "https://index.docker.io/v1/": {"auth": b64("hub:hubpw")},
            "Registry.Example.com:5000": {"username": "ci", "password": "pw:with:colons"},
            "x.azurecr.io": {"auth": b64("00000000-0000-0000-0000-000000000000:"), "identitytoken": "refresh"},
            "r.example.org": {"registrytoken": "bearer-token"},
            "a.example": {"auth": b64("u:p"), "email": "x@y"}
        },
        "credHelpers": {"123456789012.dkr.ecr.eu-west-1.amazonaws.com": "ecr-login"},
        "HttpHeaders": {"User-Agent": "ignored"}
    })
    .to_string();
    let read = parse_docker_config("test", &text).unwrap();
    let expected: HashMap<String, HostCredentials> = [
        ("docker.io", basic("hub", "hubpw")),
        ("registry.example.com:5000", basic("ci", "pw:with:colons")),
        (
            "x.azurecr.io",
            basic("00000000-0000-0000-0000-000000000000", "refresh"),
        ),
        (
            "r.example.org",
            HostCredentials::Static(RegistryCredentials::Bearer {
                token: "bearer-token".into(),
            }),
        ),
        ("a.example", basic("u", "p")),
        (
            "123456789012.dkr.ecr.eu-west-1.amazonaws.com",
            HostCredentials::Ecr,
        ),
    ]
    .into_iter()
    .map(|(h, c)| (h.to_owned(), c))
    .collect();
    assert_eq!(read, expected);
}

#[test]
fn a_kubernetes_dockerconfigjson_secret_value_is_read() {
    // What `kubectl create secret docker-registry` writes into .dockerconfigjson.
    let text = r#"{"auths":{"registry.internal:5000":{"username":"levers9","password":"s3cret","email":"ops@example.com","auth":"bGV2ZXJzOTpzM2NyZXQ="}}}"#;
    let read = parse_docker_config(".dockerconfigjson", text).unwrap();
    assert_eq!(read["registry.internal:5000"], basic("levers9", "s3cret"));
}

#[test]
fn unusable_entries_are_refused_without_showing_secrets() {
    let cases = [
        (
            serde_json::json!({"auths": {"r.io": {}}}),
            "the entry of registry \"r.io\" has none of",
        ),
        (
            serde_json::json!({"auths": {"r.io": {"auth": "%%%secretish"}}}),
            "has an \"auth\" that is not base64",
        ),
        (
            serde_json::json!({"auths": {"r.io": {"auth": b64("nocolon-secretish")}}}),
            "not base64 of USER:PASSWORD",
        ),
        (
            serde_json::json!({"credsStore": "desktop", "auths": {"r.io": {}}}),
            "credential store \"desktop\"",
        ),
        (
            serde_json::json!({"credHelpers": {"gcr.io": "gcloud"}}),
            "names the credential helper \"gcloud\"",
        ),
    ];
    for (config, expected) in cases {
        let error = parse_docker_config("f.json", &config.to_string())
            .unwrap_err()
            .to_string();
        assert!(error.contains(expected), "{error}");
        assert!(!error.contains("secretish"), "{error}");
    }
    let error = parse_docker_config("f.json", "{\"auths\": {\"r\": {\"password\": \"secretish\"")
        .unwrap_err()
        .to_string();
    assert!(
        error.starts_with("f.json is not a docker config JSON file"),
        "{error}"
    );
    assert!(!error.contains("secretish"), "{error}");
}

#[test]
fn hosts_are_normalized_like_docker_config_keys() {
    assert_eq!(normalize_registry_host("https://r.io:443/v2/"), "r.io:443");
    assert_eq!(
        normalize_registry_host("http://127.0.0.1:5000"),
        "127.0.0.1:5000"
    );
    assert_eq!(normalize_registry_host("registry-1.docker.io"), "docker.io");
    assert_eq!(normalize_registry_host("GHCR.io"), "ghcr.io");
}

#[test]
fn build_containers_get_docker_config_json_that_reads_back() {
    let basic = RegistryCredentials::Basic {
        username: "u".into(),
        password: "p:q".into(),
    };
    let bearer = RegistryCredentials::Bearer { token: "t".into() };
    let anonymous = RegistryCredentials::Anonymous;
    let json = docker_config_json([("a.io", &basic), ("b.io", &bearer), ("c.io", &anonymous)]);
    let read = parse_docker_config("env", &json).unwrap();
    assert_eq!(read.len(), 2);
    assert_eq!(read["a.io"], HostCredentials::Static(basic));
    assert_eq!(read["b.io"], HostCredentials::Static(bearer));
}

#[tokio::test]
async fn the_keychain_answers_per_host_and_anonymous_otherwise() {
    let keychain = RegistryKeychain::new(
        [(
            "https://R.io/".to_owned(),
            RegistryCredentials::Bearer { token: "t".into() },
        )]
        .into(),
    );
    assert_eq!(
        keychain.credentials_for("r.io").await.unwrap(),
        RegistryCredentials::Bearer { token: "t".into() }
    );
    assert_eq!(
        keychain.credentials_for("other.io").await.unwrap(),
        RegistryCredentials::Anonymous
    );
    let debug = format!("{keychain:?}");
    assert!(
        debug.contains("r.io") && !debug.contains("\"t\""),
        "{debug}"
    );
}

#[tokio::test]
async fn a_builds_docker_config_holds_only_the_hosts_it_names() {
    let basic = RegistryCredentials::Basic {
        username: "u".into(),
        password: "p".into(),
    };
    let keychain = RegistryKeychain::new(
        [
            ("push.io".to_owned(), basic.clone()),
            (
                "other.io".to_owned(),
                RegistryCredentials::Bearer { token: "t".into() },
            ),
        ]
        .into(),
    );

    let json = keychain
        .docker_config_for(&["push.io".into(), "base.io".into()])
        .await
        .unwrap()
        .expect("one host has credentials");
    let anonymous = keychain
        .docker_config_for(&["base.io".into()])
        .await
        .unwrap();

    let read = parse_docker_config("build", &json).unwrap();
    assert_eq!(read.keys().collect::<Vec<_>>(), ["push.io"]);
    assert_eq!(read["push.io"], HostCredentials::Static(basic));
    assert_eq!(anonymous, None);
}

#[test]
fn debug_and_authorization_headers() {
    let basic = RegistryCredentials::Basic {
        username: "u".into(),
        password: "secretish".into(),
    };
    assert!(!format!("{basic:?}").contains("secretish"));
    assert_eq!(
        basic.authorization().unwrap(),
        format!("Basic {}", b64("u:secretish"))
    );
    assert_eq!(RegistryCredentials::Anonymous.authorization(), None);
}

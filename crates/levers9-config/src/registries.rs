//! `worker.insecureRegistries`: the registries reached over plain HTTP.
//! Each entry is compared with the registry of an image reference as it is
//! written (`host` or `host:port`), so a scheme or a path in one would
//! never match and the registry would silently stay on HTTPS.

use crate::error::ConfigError;

/// Checks every entry is a bare `host[:port]`.
pub(crate) fn validate_insecure(registries: &[String]) -> Result<(), ConfigError> {
    for registry in registries {
        let bare = !registry.is_empty()
            && !registry.contains("://")
            && !registry.contains('/')
            && !registry.chars().any(char::is_whitespace);
        if !bare {
            return Err(ConfigError::Invalid {
                key: "worker.insecureRegistries",
                message: format!(
                    "{registry:?} is not HOST[:PORT]: write the registry as image references \
                     name it, e.g. k3d-levers9-registry.localhost:5111"
                ),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_insecure_registry_is_a_bare_host_and_port() {
        validate_insecure(&[
            "k3d-levers9-registry.localhost:5111".into(),
            "registry".into(),
        ])
        .expect("valid");
        for wrong in ["http://registry:5000", "registry:5000/levers9", "", "a b"] {
            let error = validate_insecure(&[wrong.into()])
                .expect_err(wrong)
                .to_string();
            assert!(error.contains("is not HOST[:PORT]"), "{error}");
        }
    }
}

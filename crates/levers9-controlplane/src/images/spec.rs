//! Image specs: what the SDK sends, checked, and their content address.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::ImageServiceError;

/// The config label a built image keeps its canonical spec in.
pub const SPEC_LABEL: &str = "dev.levers9.image.spec";

/// One step of a spec; steps keep their order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum Step {
    /// `pip install` of requirement specifiers.
    Pip {
        /// Requirement specifiers.
        packages: Vec<String>,
    },
    /// Debian packages, unpacked without maintainer scripts.
    Apt {
        /// Package names.
        packages: Vec<String>,
    },
    /// Shell commands, in order.
    Run {
        /// Each run with `/bin/sh -c`.
        commands: Vec<String>,
    },
    /// Environment variables of later steps and of the image.
    Env {
        /// Names and values.
        env: BTreeMap<String, String>,
    },
    /// A workspace object (a zip of local files) copied to `dest`.
    Files {
        /// Digest of the zip (`sha256:…`), an object of the build's workspace.
        digest: String,
        /// Where in the image.
        dest: String,
    },
}

/// A spec as the SDK writes it.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SpecRequest {
    /// Picks the base image (`<runner.baseImage repository>:<version>`)
    /// when `base_image` is empty.
    pub python_version: String,
    /// A reference; short names resolve against
    /// `imageService.runner.baseImageRegistry`.
    pub base_image: String,
    /// What to add to the base image, in order; each prefix of them is built
    /// and pushed as an image of its own, so specs that share a prefix share
    /// its build.
    pub steps: Vec<Step>,
}

/// A spec with its base image resolved to a digest: what an image id is
/// the hash of.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Canonical {
    /// `registry/repository@sha256:…`.
    pub base: String,
    /// As asked for (may be empty).
    pub python_version: String,
    /// As asked for, in order: part of what the id hashes.
    pub steps: Vec<Step>,
}

impl Canonical {
    /// The canonical JSON (fields in a fixed order, maps sorted).
    pub fn to_json(&self) -> String {
        // Strings, lists and sorted maps: serialising cannot fail.
        serde_json::to_string(self).unwrap_or_default()
    }

    /// The image id: sha256 hex of the canonical JSON.
    pub fn id(&self) -> String {
        hex::encode(Sha256::digest(self.to_json().as_bytes()))
    }

    /// The spec of the first `n` steps.
    pub fn prefix(&self, n: usize) -> Canonical {
        Canonical {
            steps: self.steps[..n].to_vec(),
            ..self.clone()
        }
    }
}

fn invalid(message: String) -> ImageServiceError {
    ImageServiceError::InvalidSpec(message)
}

/// Parses and checks a spec from the SDK.
pub fn parse(json: &str) -> Result<SpecRequest, ImageServiceError> {
    let spec: SpecRequest = serde_json::from_str(json)
        .map_err(|e| invalid(format!("the image spec is not valid: {e}")))?;
    for step in &spec.steps {
        check_step(step)?;
    }
    Ok(spec)
}

fn check_step(step: &Step) -> Result<(), ImageServiceError> {
    match step {
        Step::Pip { packages } => {
            if packages.is_empty() {
                return Err(invalid("add_python_packages got no packages".into()));
            }
            for p in packages {
                // An option would change what pip does beyond installing.
                if p.trim().is_empty() || p.starts_with('-') {
                    return Err(invalid(format!(
                        "{p:?} is not a requirement specifier such as 'six' or 'numpy>=2'"
                    )));
                }
            }
        }
        Step::Apt { packages } => {
            if packages.is_empty() {
                return Err(invalid("add_apt_packages got no packages".into()));
            }
            for p in packages {
                let ok = p.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
                    && p.chars()
                        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || "+.-".contains(c));
                if !ok {
                    return Err(invalid(format!(
                        "{p:?} is not a Debian package name (lowercase letters, digits, + . -)"
                    )));
                }
            }
        }
        Step::Run { commands } => {
            if commands.is_empty() || commands.iter().any(|c| c.trim().is_empty()) {
                return Err(invalid(
                    "add_commands needs non-empty shell commands".into(),
                ));
            }
        }
        Step::Env { env } => {
            for key in env.keys() {
                let ok = key.chars().next().is_some_and(|c| !c.is_ascii_digit())
                    && key.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
                if !ok {
                    return Err(invalid(format!(
                        "{key:?} is not an environment variable name (letters, digits, _)"
                    )));
                }
            }
        }
        Step::Files { digest, dest } => {
            let hex = digest.strip_prefix("sha256:").unwrap_or_default();
            if hex.len() != 64 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(invalid(format!("{digest:?} is not an object digest")));
            }
            if !dest.starts_with('/') || dest.split('/').any(|p| p == "..") {
                return Err(invalid(format!(
                    "add_local_files destination {dest:?} must be an absolute path without .."
                )));
            }
        }
    }
    Ok(())
}

/// What `docker pull` would fetch for `name` from `registry`: a name whose
/// first part has no `.` or `:` (and is not `localhost`) lives in the
/// registry; a one-part name may be an official image under `library/`.
/// Candidates in order; a name with its own registry is its only one.
pub fn base_candidates(name: &str, registry: &str) -> Result<Vec<String>, ImageServiceError> {
    let first = name.split('/').next().unwrap_or_default();
    if name.contains('/') && (first.contains('.') || first.contains(':') || first == "localhost") {
        return Ok(vec![with_tag(name)]);
    }
    if registry.is_empty() {
        return Err(ImageServiceError::BaseImageWithoutRegistry(name.to_owned()));
    }
    let registry = registry.trim_end_matches('/');
    let mut out = vec![with_tag(&format!("{registry}/{name}"))];
    if !name.contains('/') {
        out.push(with_tag(&format!("{registry}/library/{name}")));
    }
    Ok(out)
}

/// `latest` when a name has neither tag nor digest.
fn with_tag(name: &str) -> String {
    let last = name.rsplit('/').next().unwrap_or_default();
    if name.contains('@') || last.contains(':') {
        name.to_owned()
    } else {
        format!("{name}:latest")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_follow_the_canonical_spec() {
        let spec = parse(r#"{"steps":[{"kind":"pip","packages":["six"]},{"kind":"env","env":{"B":"1","A":"2"}}]}"#).unwrap();
        let canonical = Canonical {
            base: "r/p@sha256:00".into(),
            python_version: String::new(),
            steps: spec.steps,
        };
        assert_eq!(canonical.id().len(), 64);
        assert!(canonical.to_json().contains(r#"{"A":"2","B":"1"}"#));
        assert_ne!(canonical.id(), canonical.prefix(1).id());
        let other_base = Canonical {
            base: "r/p@sha256:01".into(),
            ..canonical.clone()
        };
        assert_ne!(canonical.id(), other_base.id());
    }

    #[test]
    fn bad_steps_are_refused_with_what_to_do() {
        for bad in [
            r#"{"steps":[{"kind":"pip","packages":["--index-url=x"]}]}"#,
            r#"{"steps":[{"kind":"apt","packages":["Jq;rm"]}]}"#,
            r#"{"steps":[{"kind":"run","commands":[]}]}"#,
            r#"{"steps":[{"kind":"env","env":{"1A":"x"}}]}"#,
            r#"{"steps":[{"kind":"files","digest":"sha256:00","dest":"/a"}]}"#,
            r#"{"steps":[{"kind":"nope"}]}"#,
        ] {
            assert!(
                matches!(parse(bad), Err(ImageServiceError::InvalidSpec(_))),
                "{bad}"
            );
        }
    }

    #[test]
    fn short_names_resolve_like_docker_pull() {
        assert_eq!(
            base_candidates("python:3.11", "127.0.0.1:5000").unwrap(),
            [
                "127.0.0.1:5000/python:3.11",
                "127.0.0.1:5000/library/python:3.11"
            ]
        );
        assert_eq!(
            base_candidates("levers9/python", "reg.example.com/x").unwrap(),
            ["reg.example.com/x/levers9/python:latest"]
        );
        assert_eq!(
            base_candidates("ghcr.io/a/b@sha256:1", "").unwrap(),
            ["ghcr.io/a/b@sha256:1"]
        );
        assert!(base_candidates("python:3.11", "").is_err());
    }
}

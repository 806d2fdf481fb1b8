//! The manifests `levers9 cluster join` writes into a cluster: a namespace,
//! the agent's service account with a Role limited to worker Jobs and their
//! pods in that namespace (no ClusterRole), the Secret with the worker
//! token, and the agent's Deployment. The agent dials out to the
//! controlplane, so the controlplane needs no key for the cluster and no
//! way in.

use std::collections::BTreeMap;

use k8s_openapi::api::apps::v1::{Deployment, DeploymentSpec};
use k8s_openapi::api::core::v1::{
    Capabilities, Container, LocalObjectReference, Namespace, PodSecurityContext, PodSpec,
    PodTemplateSpec, Secret, SecurityContext, ServiceAccount,
};
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kube::{Api, Client, Resource};
use serde::de::DeserializeOwned;
use serde::Serialize;

use crate::job::{token_env, TOKEN_KEY};
use crate::KubeError;

/// The name of the agent's Deployment, service account, Role and binding.
pub const AGENT_NAME: &str = "levers9-cluster-agent";
/// The Secret holding the worker token, read by the agent and its Jobs.
pub const TOKEN_SECRET: &str = "levers9-worker-token";
/// The field manager of server-side apply.
const FIELD_MANAGER: &str = "levers9-cluster-join";

/// An attached cluster: what `cluster join` writes. Not `Debug`: it holds
/// the token.
#[derive(Clone)]
pub struct AttachedCluster {
    /// The pool its workers join.
    pub pool: String,
    /// The namespace of the agent and the worker Jobs.
    pub namespace: String,
    /// The image of the agent and workers (the `levers9` binary).
    pub image: String,
    /// The `levers9 cluster agent` arguments after `--pool`, `--namespace`
    /// and the image: the controlplane, the pool's hardware, its scaling.
    pub agent_args: Vec<String>,
    /// The Secrets the kubelet pulls the agent's image with (the workers'
    /// Jobs name theirs through the agent's `--image-pull-secret`).
    pub image_pull_secrets: Vec<String>,
    /// The worker token. Only in the Secret.
    pub token: String,
}

fn meta(name: &str, namespace: Option<&str>) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_owned()),
        namespace: namespace.map(str::to_owned),
        labels: Some(labels()),
        ..ObjectMeta::default()
    }
}

fn labels() -> BTreeMap<String, String> {
    [("app.kubernetes.io/name".to_owned(), AGENT_NAME.to_owned())].into()
}

impl AttachedCluster {
    /// The namespace. Worker pods run privileged (runc and runsc need it),
    /// so the namespace admits privileged pods under Pod Security.
    pub fn namespace(&self) -> Namespace {
        let mut meta = meta(&self.namespace, None);
        meta.labels.get_or_insert_default().insert(
            "pod-security.kubernetes.io/enforce".into(),
            "privileged".into(),
        );
        Namespace {
            metadata: meta,
            ..Namespace::default()
        }
    }

    /// The agent's service account.
    pub fn service_account(&self) -> ServiceAccount {
        ServiceAccount {
            metadata: meta(AGENT_NAME, Some(&self.namespace)),
            ..ServiceAccount::default()
        }
    }

    /// What the agent may do: manage Jobs and read pods and their logs, in
    /// its namespace only.
    pub fn role(&self) -> Role {
        let rule = |group: &str, resources: &[&str], verbs: &[&str]| PolicyRule {
            api_groups: Some(vec![group.to_owned()]),
            resources: Some(resources.iter().map(|r| (*r).to_owned()).collect()),
            verbs: verbs.iter().map(|v| (*v).to_owned()).collect(),
            ..PolicyRule::default()
        };
        Role {
            metadata: meta(AGENT_NAME, Some(&self.namespace)),
            rules: Some(vec![
                rule(
                    "batch",
                    &["jobs"],
                    &["get", "list", "watch", "create", "delete"],
                ),
                rule("", &["pods"], &["get", "list", "watch"]),
                rule("", &["pods/log"], &["get"]),
            ]),
        }
    }

    /// Binds the Role to the service account.
    pub fn role_binding(&self) -> RoleBinding {
        RoleBinding {
            metadata: meta(AGENT_NAME, Some(&self.namespace)),
            role_ref: RoleRef {
                api_group: "rbac.authorization.k8s.io".into(),
                kind: "Role".into(),
                name: AGENT_NAME.into(),
            },
            subjects: Some(vec![Subject {
                kind: "ServiceAccount".into(),
                name: AGENT_NAME.into(),
                namespace: Some(self.namespace.clone()),
                ..Subject::default()
            }]),
        }
    }

    /// The worker token, for the agent and the worker Jobs.
    pub fn secret(&self) -> Secret {
        Secret {
            metadata: meta(TOKEN_SECRET, Some(&self.namespace)),
            type_: Some("Opaque".into()),
            string_data: Some([(TOKEN_KEY.to_owned(), self.token.clone())].into()),
            ..Secret::default()
        }
    }

    /// The agent: one replica, unprivileged, with the token from the Secret.
    pub fn deployment(&self) -> Deployment {
        let mut args = vec![
            "cluster".to_owned(),
            "agent".to_owned(),
            "--pool".to_owned(),
            self.pool.clone(),
            "--namespace".to_owned(),
            self.namespace.clone(),
            "--worker-image".to_owned(),
            self.image.clone(),
        ];
        args.extend(self.agent_args.iter().cloned());
        let container = Container {
            name: "agent".into(),
            image: Some(self.image.clone()),
            args: Some(args),
            env: Some(vec![token_env(TOKEN_SECRET)]),
            security_context: Some(SecurityContext {
                allow_privilege_escalation: Some(false),
                read_only_root_filesystem: Some(true),
                capabilities: Some(Capabilities {
                    drop: Some(vec!["ALL".into()]),
                    ..Capabilities::default()
                }),
                ..SecurityContext::default()
            }),
            ..Container::default()
        };
        Deployment {
            metadata: meta(AGENT_NAME, Some(&self.namespace)),
            spec: Some(DeploymentSpec {
                replicas: Some(1),
                selector: LabelSelector {
                    match_labels: Some(labels()),
                    ..LabelSelector::default()
                },
                // Two agents would fight over the Jobs: replace, don't surge.
                strategy: Some(k8s_openapi::api::apps::v1::DeploymentStrategy {
                    type_: Some("Recreate".into()),
                    ..Default::default()
                }),
                template: PodTemplateSpec {
                    metadata: Some(ObjectMeta {
                        labels: Some(labels()),
                        ..ObjectMeta::default()
                    }),
                    spec: Some(PodSpec {
                        service_account_name: Some(AGENT_NAME.into()),
                        security_context: Some(PodSecurityContext {
                            run_as_non_root: Some(true),
                            run_as_user: Some(65534),
                            run_as_group: Some(65534),
                            seccomp_profile: Some(k8s_openapi::api::core::v1::SeccompProfile {
                                type_: "RuntimeDefault".into(),
                                ..Default::default()
                            }),
                            ..PodSecurityContext::default()
                        }),
                        containers: vec![container],
                        image_pull_secrets: (!self.image_pull_secrets.is_empty()).then(|| {
                            self.image_pull_secrets
                                .iter()
                                .map(|name| LocalObjectReference { name: name.clone() })
                                .collect()
                        }),
                        ..PodSpec::default()
                    }),
                },
                ..DeploymentSpec::default()
            }),
            status: None,
        }
    }

    /// Every manifest as one YAML stream, in the order they must be applied.
    pub fn yaml(&self) -> Result<String, KubeError> {
        let documents = [
            serde_yaml::to_string(&self.namespace())?,
            serde_yaml::to_string(&self.service_account())?,
            serde_yaml::to_string(&self.role())?,
            serde_yaml::to_string(&self.role_binding())?,
            serde_yaml::to_string(&self.secret())?,
            serde_yaml::to_string(&self.deployment())?,
        ];
        Ok(documents
            .iter()
            .map(|d| format!("---\n{d}"))
            .collect::<String>())
    }

    /// Applies every manifest with server-side apply, in order.
    pub async fn apply(&self, client: &Client) -> Result<(), KubeError> {
        apply(Api::all(client.clone()), &self.namespace()).await?;
        let ns = &self.namespace;
        apply(Api::namespaced(client.clone(), ns), &self.service_account()).await?;
        apply(Api::namespaced(client.clone(), ns), &self.role()).await?;
        apply(Api::namespaced(client.clone(), ns), &self.role_binding()).await?;
        apply(Api::namespaced(client.clone(), ns), &self.secret()).await?;
        apply(Api::namespaced(client.clone(), ns), &self.deployment()).await
    }
}

async fn apply<K>(api: Api<K>, object: &K) -> Result<(), KubeError>
where
    K: Resource<DynamicType = ()> + Clone + Serialize + DeserializeOwned + std::fmt::Debug,
{
    crate::apply::apply(api, object, FIELD_MANAGER)
        .await
        .map_err(|source| KubeError::Apply {
            kind: match K::kind(&()) {
                std::borrow::Cow::Borrowed(kind) => kind,
                std::borrow::Cow::Owned(_) => "object",
            },
            name: object.meta().name.clone().unwrap_or_default(),
            source: Box::new(source),
        })
}

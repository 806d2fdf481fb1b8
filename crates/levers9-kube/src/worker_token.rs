//! The Secret a `provider: kubernetes` pool's worker Jobs take their token
//! from (`kubernetes.workerTokenSecret`, key `token`). The controlplane
//! keeps it itself, so a chart install needs no hand-made Secret: it reads
//! the Secret, and writes a fresh token into it (server-side apply) when
//! the Secret is missing or its token no longer works. Both requests name
//! the Secret, so the Role can limit them to it (`resourceNames`).

use k8s_openapi::api::core::v1::Secret;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube::{Api, Client};

use crate::job::TOKEN_KEY;
use crate::KubeError;

/// The field manager of the controlplane's writes.
const FIELD_MANAGER: &str = "levers9-controlplane";

/// One pool's worker token Secret.
pub struct WorkerTokenSecret {
    api: Api<Secret>,
    namespace: String,
    name: String,
}

impl WorkerTokenSecret {
    /// Secret `name` in `namespace`.
    pub fn new(client: Client, namespace: &str, name: &str) -> Self {
        Self {
            api: Api::namespaced(client, namespace),
            namespace: namespace.to_owned(),
            name: name.to_owned(),
        }
    }

    /// The token the Secret holds; None when there is no such Secret or it
    /// has no `token` key.
    pub async fn read(&self) -> Result<Option<String>, KubeError> {
        let secret = self
            .api
            .get_opt(&self.name)
            .await
            .map_err(|source| self.error("read", source))?;
        let token = secret
            .and_then(|secret| secret.data)
            .and_then(|mut data| data.remove(TOKEN_KEY))
            .and_then(|bytes| String::from_utf8(bytes.0).ok())
            .map(|token| token.trim().to_owned())
            .filter(|token| !token.is_empty());
        Ok(token)
    }

    /// Makes the Secret hold `token` (creating it when missing). Running
    /// pods keep the token they started with; Jobs made afterwards get this
    /// one.
    pub async fn write(&self, token: &str) -> Result<(), KubeError> {
        let secret = Secret {
            metadata: ObjectMeta {
                name: Some(self.name.clone()),
                namespace: Some(self.namespace.clone()),
                labels: Some(
                    [(
                        "app.kubernetes.io/managed-by".to_owned(),
                        FIELD_MANAGER.to_owned(),
                    )]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            type_: Some("Opaque".into()),
            string_data: Some([(TOKEN_KEY.to_owned(), token.to_owned())].into()),
            ..Secret::default()
        };
        crate::apply::apply(self.api.clone(), &secret, FIELD_MANAGER)
            .await
            .map_err(|source| self.error("write", source))
    }

    fn error(&self, verb: &'static str, source: kube::Error) -> KubeError {
        KubeError::TokenSecret {
            verb,
            name: self.name.clone(),
            namespace: self.namespace.clone(),
            source: Box::new(source),
        }
    }
}

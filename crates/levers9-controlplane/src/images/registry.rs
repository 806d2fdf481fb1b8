//! The few OCI distribution calls the image service makes: resolve a tag to
//! a digest, read manifests and configs, list and delete tags.

use std::sync::Arc;
use std::time::Duration;

use levers9_image::is_loopback_host;
use sha2::{Digest, Sha256};

use super::auth::Authorizer;
use super::ImageServiceError;

const ACCEPT: &str = "application/vnd.oci.image.manifest.v1+json, \
    application/vnd.docker.distribution.manifest.v2+json, \
    application/vnd.oci.image.index.v1+json, \
    application/vnd.docker.distribution.manifest.list.v2+json";

/// A registry client over plain HTTP for loopback registries and those of
/// `worker.insecureRegistries`, HTTPS otherwise.
#[derive(Clone)]
pub struct RegistryClient {
    http: reqwest::Client,
    /// `worker.insecureRegistries`, as `host[:port]`.
    insecure: Vec<String>,
    /// Answers registries' challenges with `imageService.registryCredentialsFile`.
    auth: Arc<Authorizer>,
}

/// `host/repository` and the tag or digest of a reference.
pub fn split(reference: &str) -> Result<(&str, &str, &str), ImageServiceError> {
    let (name, tag) = match reference.split_once('@') {
        Some(parts) => parts,
        None => {
            let slash = reference.rfind('/').unwrap_or(0);
            match reference[slash..].rfind(':') {
                Some(i) => (&reference[..slash + i], &reference[slash + i + 1..]),
                None => (reference, "latest"),
            }
        }
    };
    let (host, repo) = name
        .split_once('/')
        .ok_or_else(|| ImageServiceError::InvalidReference(reference.to_owned()))?;
    Ok((host, repo, tag))
}

/// The repository a `/v2/` path is about.
fn repo_of(path: &str) -> &str {
    ["/manifests/", "/blobs/", "/tags/"]
        .iter()
        .find_map(|marker| path.find(marker).map(|i| &path[..i]))
        .unwrap_or(path)
}

fn refused(host: &str, what: &str) -> ImageServiceError {
    ImageServiceError::RegistryRefused {
        host: host.to_owned(),
        what: what.to_owned(),
    }
}

fn unavailable(host: &str, what: &str, detail: impl std::fmt::Display) -> ImageServiceError {
    ImageServiceError::RegistryUnavailable {
        host: host.to_owned(),
        what: what.to_owned(),
        detail: detail.to_string(),
    }
}

impl Default for RegistryClient {
    /// A client with bounded waits.
    fn default() -> Self {
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(60))
            .build()
            .unwrap_or_default();
        Self {
            http,
            insecure: Vec::new(),
            auth: Arc::default(),
        }
    }
}

impl RegistryClient {
    /// Authenticates with `auth` where registries ask for it.
    pub fn with_auth(mut self, auth: Authorizer) -> Self {
        self.auth = Arc::new(auth);
        self
    }

    /// Sends `request` (no body) for a call on `repo` of `host`, with the
    /// header that answered this registry's challenge before; on a `401`,
    /// answers the challenge and sends it once more.
    async fn send(
        &self,
        host: &str,
        repo: &str,
        delete: bool,
        request: reqwest::RequestBuilder,
        what: &str,
    ) -> Result<reqwest::Response, ImageServiceError> {
        let again = request.try_clone();
        let mut first = request;
        if let Some(header) = self.auth.known(host, repo, delete).await? {
            first = first.header(reqwest::header::AUTHORIZATION, header);
        }
        let response = first.send().await.map_err(|e| unavailable(host, what, e))?;
        if response.status() != reqwest::StatusCode::UNAUTHORIZED {
            return Ok(response);
        }
        let challenge = response
            .headers()
            .get(reqwest::header::WWW_AUTHENTICATE)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let (Some(again), Some(header)) = (
            again,
            self.auth
                .answer(&self.http, host, repo, delete, challenge.as_deref())
                .await?,
        ) else {
            return Err(refused(host, what));
        };
        let response = again
            .header(reqwest::header::AUTHORIZATION, header)
            .send()
            .await
            .map_err(|e| unavailable(host, what, e))?;
        if response.status() == reqwest::StatusCode::UNAUTHORIZED {
            return Err(refused(host, what));
        }
        Ok(response)
    }

    /// Plain HTTP for these registries too (`worker.insecureRegistries`),
    /// as the workers pull from them.
    pub fn with_insecure_registries(mut self, registries: &[String]) -> Self {
        self.insecure = registries.to_vec();
        self
    }

    fn url(&self, host: &str, path: &str) -> String {
        let plain = is_loopback_host(host) || self.insecure.iter().any(|r| r == host);
        let scheme = if plain { "http" } else { "https" };
        format!("{scheme}://{host}/v2/{path}")
    }

    /// GETs `path`; `None` on 404, an error naming `what` on anything else
    /// that is not a success.
    async fn get(
        &self,
        host: &str,
        path: &str,
        what: &str,
        accept: Option<&str>,
    ) -> Result<Option<reqwest::Response>, ImageServiceError> {
        let mut request = self.http.get(self.url(host, path));
        if let Some(accept) = accept {
            request = request.header("Accept", accept);
        }
        let response = self.send(host, repo_of(path), false, request, what).await?;
        match response.status().as_u16() {
            200..=299 => Ok(Some(response)),
            404 => Ok(None),
            code => Err(unavailable(host, what, format!("HTTP {code}"))),
        }
    }

    /// The manifest digest and bytes of `repo:tag_or_digest` on `host`;
    /// `None` when the registry does not have it.
    pub async fn manifest(
        &self,
        host: &str,
        repo: &str,
        reference: &str,
    ) -> Result<Option<(String, Vec<u8>)>, ImageServiceError> {
        let what = format!("reading manifest {repo}:{reference}");
        let path = format!("{repo}/manifests/{reference}");
        let Some(response) = self.get(host, &path, &what, Some(ACCEPT)).await? else {
            return Ok(None);
        };
        let body = response
            .bytes()
            .await
            .map_err(|e| unavailable(host, &what, e))?;
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(&body)));
        Ok(Some((digest, body.to_vec())))
    }

    /// A blob's bytes (configs are small).
    pub async fn blob(
        &self,
        host: &str,
        repo: &str,
        digest: &str,
    ) -> Result<Vec<u8>, ImageServiceError> {
        let what = format!("reading blob {digest} of {repo}");
        let path = format!("{repo}/blobs/{digest}");
        let response = self
            .get(host, &path, &what, None)
            .await?
            .ok_or_else(|| unavailable(host, &what, "HTTP 404"))?;
        Ok(response
            .bytes()
            .await
            .map_err(|e| unavailable(host, &what, e))?
            .to_vec())
    }

    /// The tags of a repository (none when it does not exist yet).
    pub async fn tags(&self, host: &str, repo: &str) -> Result<Vec<String>, ImageServiceError> {
        #[derive(serde::Deserialize)]
        struct Tags {
            tags: Option<Vec<String>>,
        }
        let what = format!("listing tags of {repo}");
        let path = format!("{repo}/tags/list");
        let Some(response) = self.get(host, &path, &what, None).await? else {
            return Ok(Vec::new());
        };
        let tags: Tags = response
            .json()
            .await
            .map_err(|e| unavailable(host, &what, e))?;
        Ok(tags.tags.unwrap_or_default())
    }

    /// Deletes a manifest by digest (its tags go with it).
    pub async fn delete(
        &self,
        host: &str,
        repo: &str,
        digest: &str,
    ) -> Result<(), ImageServiceError> {
        let url = self.url(host, &format!("{repo}/manifests/{digest}"));
        let what = format!("deleting manifest {digest} of {repo}");
        let request = self.http.delete(&url);
        let response = self.send(host, repo, true, request, &what).await?;
        match response.status().as_u16() {
            200..=299 => Ok(()),
            405 => Err(ImageServiceError::DeletesDisabled(host.to_owned())),
            code => Err(unavailable(host, &what, format!("HTTP {code}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{split, RegistryClient};

    #[test]
    fn plain_http_for_loopback_and_the_insecure_registries_only() {
        let client = RegistryClient::default()
            .with_insecure_registries(&["k3d-levers9-registry.localhost:5111".into()]);
        assert_eq!(
            client.url(
                "k3d-levers9-registry.localhost:5111",
                "levers9/python/tags/list"
            ),
            "http://k3d-levers9-registry.localhost:5111/v2/levers9/python/tags/list"
        );
        assert!(client.url("127.0.0.1:5000", "x").starts_with("http://"));
        assert!(client
            .url("k3d-levers9-registry.localhost:5112", "x")
            .starts_with("https://"));
        assert!(client
            .url("registry.example.com", "x")
            .starts_with("https://"));
    }

    #[test]
    fn references_split_into_host_repository_and_tag() {
        assert_eq!(
            split("127.0.0.1:5000/levers9/python:3.11").unwrap(),
            ("127.0.0.1:5000", "levers9/python", "3.11")
        );
        assert_eq!(
            split("r.io/a/b@sha256:ab").unwrap(),
            ("r.io", "a/b", "sha256:ab")
        );
        assert_eq!(split("r.io:80/a").unwrap(), ("r.io:80", "a", "latest"));
        assert!(split("python").is_err());
    }
}

//! Dialling a controlplane: the one place that decides between TLS and
//! plain gRPC and which certificates to trust. The CLI, the SDK's launcher,
//! the worker and the agent all go through [`Controlplane::endpoint`], so
//! they follow the same rules.

use std::path::{Path, PathBuf};

use tonic::transport::{Certificate, ClientTlsConfig, Endpoint};

/// Why a controlplane cannot be dialled.
#[derive(Debug, thiserror::Error)]
pub enum DialError {
    /// The address is not `host:port` or a URL.
    #[error(
        "{0:?} is not a valid controlplane address: give host:port or a URL like https://host:port"
    )]
    Address(String),
    /// The CA file cannot be read.
    #[error("cannot read the controlplane CA file {path}: {source} (LEVERS9_CONTROLPLANE_CA or the context's ca_file)")]
    CaFile {
        /// The CA file as configured (`LEVERS9_CONTROLPLANE_CA` or the
        /// context's `ca_file`).
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The CA file holds no PEM certificate.
    #[error("the controlplane CA file {0} holds no PEM certificate (-----BEGIN CERTIFICATE-----)")]
    CaNotPem(PathBuf),
    /// TLS is asked for but nothing is trusted.
    #[error(
        "this machine has no trusted root certificates to check the controlplane's TLS certificate: \
         install the ca-certificates package, or give the CA that signed it with LEVERS9_CONTROLPLANE_CA"
    )]
    NoRoots,
    /// The TLS settings were refused.
    #[error("cannot set up TLS to the controlplane: {0}")]
    Tls(#[from] tonic::transport::Error),
}

/// The controlplane's gRPC port.
const DEFAULT_PORT: u16 = 1993;

/// A controlplane to dial.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Controlplane {
    /// `host:port`, `[v6]:port`, or a URL (`https://…` always uses TLS).
    pub address: String,
    /// TLS asked for: a context's `tls = true` or `LEVERS9_CONTROLPLANE_TLS`.
    pub tls: bool,
    /// A PEM file of CA certificates to trust besides the system's roots,
    /// for a controlplane whose certificate a private CA signed.
    pub ca_file: Option<PathBuf>,
}

/// Whether a controlplane on `port` is dialled with TLS: always on 443 (the
/// load balancer), elsewhere only when asked, so plain gRPC to an in-cluster
/// service name keeps working.
pub fn uses_tls(port: u16, asked: bool) -> bool {
    asked || port == 443
}

impl Controlplane {
    /// `address` with TLS as asked and no CA file.
    pub fn new(address: impl Into<String>, tls: bool) -> Self {
        Self {
            address: address.into(),
            tls,
            ca_file: None,
        }
    }

    /// The URL dialled: `https://` when TLS is used, else `http://`.
    pub fn url(&self) -> Result<String, DialError> {
        let invalid = || DialError::Address(self.address.clone());
        if let Some((scheme, rest)) = self.address.split_once("://") {
            return match scheme {
                "https" => Ok(self.address.clone()),
                "http" if self.tls => Ok(format!("https://{rest}")),
                "http" => Ok(self.address.clone()),
                _ => Err(invalid()),
            };
        }
        // A bare host means the controlplane's own gRPC port, as in the CLI.
        let has_port = self
            .address
            .rsplit_once(':')
            .is_some_and(|(host, _)| !host.contains(':') || host.ends_with(']'));
        let address = if has_port {
            self.address.clone()
        } else {
            format!("{}:{DEFAULT_PORT}", self.address)
        };
        let uri: http::Uri = format!("http://{address}").parse().map_err(|_| invalid())?;
        if uri.host().is_none_or(str::is_empty) || uri.path() != "/" {
            return Err(invalid());
        }
        let port = uri.port_u16().ok_or_else(invalid)?;
        let scheme = if uses_tls(port, self.tls) {
            "https"
        } else {
            "http"
        };
        Ok(format!("{scheme}://{address}"))
    }

    /// An endpoint for the controlplane, with TLS set up when it is used.
    /// Native roots are trusted where the machine has any, plus `ca_file`.
    pub fn endpoint(&self) -> Result<Endpoint, DialError> {
        let url = self.url()?;
        let endpoint = Endpoint::from_shared(url.clone())
            .map_err(|_| DialError::Address(self.address.clone()))?;
        if !url.starts_with("https://") {
            return Ok(endpoint);
        }
        Ok(endpoint.tls_config(self.tls_config()?)?)
    }

    fn tls_config(&self) -> Result<ClientTlsConfig, DialError> {
        let mut config = ClientTlsConfig::new();
        let native = !rustls_native_certs::load_native_certs().certs.is_empty();
        if native {
            config = config.with_native_roots();
        }
        match &self.ca_file {
            Some(path) => Ok(config.ca_certificate(read_ca(path)?)),
            None if native => Ok(config),
            None => Err(DialError::NoRoots),
        }
    }
}

fn read_ca(path: &Path) -> Result<Certificate, DialError> {
    let pem = std::fs::read(path).map_err(|source| DialError::CaFile {
        path: path.to_owned(),
        source,
    })?;
    if !pem
        .windows(b"-----BEGIN CERTIFICATE-----".len())
        .any(|w| w == b"-----BEGIN CERTIFICATE-----")
    {
        return Err(DialError::CaNotPem(path.to_owned()));
    }
    Ok(Certificate::from_pem(pem))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url(address: &str, tls: bool) -> String {
        Controlplane::new(address, tls).url().unwrap()
    }

    #[test]
    fn tls_is_used_on_443_or_when_asked() {
        assert_eq!(url("cp:1993", false), "http://cp:1993");
        assert_eq!(url("cp:1993", true), "https://cp:1993");
        assert_eq!(url("cp:443", false), "https://cp:443");
        assert_eq!(url("[::1]:2000", true), "https://[::1]:2000");
        assert_eq!(url("https://cp:1993", false), "https://cp:1993");
        assert_eq!(url("http://cp:1993", true), "https://cp:1993");
        assert_eq!(url("http://cp:1993", false), "http://cp:1993");
        assert_eq!(url("cp", false), "http://cp:1993");
        assert_eq!(url("[::1]", true), "https://[::1]:1993");
    }

    #[test]
    fn bad_addresses_and_ca_files_say_what_is_wrong() {
        let error = Controlplane::new("cp:http", false).url().unwrap_err();
        assert!(error.to_string().contains("host:port"), "{error}");
        let error = Controlplane::new("cp:1993/x", false).url().unwrap_err();
        assert!(error.to_string().contains("host:port"), "{error}");
        let error = Controlplane::new("ftp://cp:1", false).url().unwrap_err();
        assert!(error.to_string().contains("not a valid"), "{error}");

        let dir = std::env::temp_dir().join(format!("l9-dial-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let not_pem = dir.join("ca.txt");
        std::fs::write(&not_pem, "hello").unwrap();
        let error = read_ca(&not_pem).unwrap_err();
        assert!(
            error.to_string().contains("holds no PEM certificate"),
            "{error}"
        );
        let error = read_ca(&dir.join("missing.pem")).unwrap_err();
        assert!(error.to_string().contains("cannot read"), "{error}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

//! TLS on the controlplane's own listeners (`controlplane.tls`), for a
//! controlplane reached without a TLS-terminating load balancer in front.
//!
//! Each connection's first byte decides: a TLS handshake (0x16) is served
//! by the real services; anything else is a client that was not told to use
//! TLS, and gets an answer saying so (a gRPC status on the gRPC port, a 400
//! on the HTTP port) rather than a reset it cannot explain.

use std::io;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use levers9_config::TlsConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio_rustls::rustls::pki_types::pem::PemObject;
use tokio_rustls::rustls::pki_types::{CertificateDer, PrivateKeyDer};
use tokio_rustls::rustls::{crypto, ServerConfig};
use tokio_rustls::server::TlsStream;
use tokio_rustls::TlsAcceptor;

use crate::error::ApiError;

/// A client that opens a connection and says nothing is dropped after this.
const HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(10);

/// The first byte of a TLS record carrying a handshake.
const TLS_HANDSHAKE: u8 = 0x16;

/// Connections waiting for the server to take them.
const BACKLOG: usize = 128;

/// Why TLS could not be set up.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// One of the two files is missing.
    #[error(
        "controlplane.tls needs both certFile and keyFile (LEVERS9_TLS_CERT_FILE, \
         LEVERS9_TLS_KEY_FILE); only {0} is set"
    )]
    Incomplete(&'static str),
    /// A file cannot be read or parsed.
    #[error("controlplane.tls.{key} {path}: {message}")]
    File {
        /// certFile or keyFile.
        key: &'static str,
        /// The file as configured (`controlplane.tls.certFile` or `keyFile`, or
        /// their environment variables).
        path: String,
        /// What is wrong with it.
        message: String,
    },
    /// rustls refused the pair.
    #[error("controlplane.tls: the certificate and key do not make a usable pair: {0}")]
    Pair(#[from] tokio_rustls::rustls::Error),
}

/// The TLS settings for a listener speaking `alpn`, or None when
/// `controlplane.tls` is off.
pub(crate) fn acceptor(config: &TlsConfig, alpn: &[u8]) -> Result<Option<TlsAcceptor>, TlsError> {
    if !config.enabled() {
        return Ok(None);
    }
    if config.cert_file.is_empty() {
        return Err(TlsError::Incomplete("keyFile"));
    }
    if config.key_file.is_empty() {
        return Err(TlsError::Incomplete("certFile"));
    }
    let certs = read_chain(Path::new(&config.cert_file))?;
    let key = PrivateKeyDer::from_pem_file(&config.key_file).map_err(|e| TlsError::File {
        key: "keyFile",
        path: config.key_file.clone(),
        message: format!("not a PEM private key ({e})"),
    })?;
    // ring, as tonic's tls-ring clients use: one provider for the process,
    // chosen here rather than by whichever crate enabled one last.
    let mut server =
        ServerConfig::builder_with_provider(Arc::new(crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()?
            .with_no_client_auth()
            .with_single_cert(certs, key)?;
    server.alpn_protocols = vec![alpn.to_vec()];
    Ok(Some(TlsAcceptor::from(Arc::new(server))))
}

fn read_chain(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let fail = |message: String| TlsError::File {
        key: "certFile",
        path: path.display().to_string(),
        message,
    };
    let certs = CertificateDer::pem_file_iter(path)
        .map_err(|e| fail(format!("cannot be read ({e})")))?
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| fail(format!("is not PEM ({e})")))?;
    if certs.is_empty() {
        return Err(fail("holds no certificate".into()));
    }
    Ok(certs)
}

/// Connections of a TLS listener, sorted by what the client spoke.
pub(crate) struct Sorted {
    /// Finished handshakes.
    pub tls: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    /// Clients that did not start with a TLS handshake.
    pub plain: mpsc::Receiver<TcpStream>,
}

/// Accepts on `listener` until `stopped`, each handshake on a task of its
/// own so a slow client holds up no one else.
pub(crate) fn sort(
    listener: TcpListener,
    acceptor: TlsAcceptor,
    mut stopped: watch::Receiver<bool>,
) -> Sorted {
    let (tls_tx, tls) = mpsc::channel(BACKLOG);
    let (plain_tx, plain) = mpsc::channel(BACKLOG);
    tokio::spawn(async move {
        let stop = async move {
            let _ = stopped.wait_for(|stop| *stop).await;
        };
        tokio::pin!(stop);
        loop {
            let (stream, peer) = tokio::select! {
                accepted = listener.accept() => match accepted {
                    Ok(pair) => pair,
                    Err(error) => {
                        // Out of file descriptors and the like: pause, as
                        // axum and tonic do, rather than spin.
                        tracing::warn!(%error, "cannot accept a connection");
                        tokio::time::sleep(Duration::from_millis(100)).await;
                        continue;
                    }
                },
                _ = &mut stop => return,
            };
            let acceptor = acceptor.clone();
            let tls_tx = tls_tx.clone();
            let plain_tx = plain_tx.clone();
            tokio::spawn(async move {
                let handshake = async {
                    let _ = stream.set_nodelay(true);
                    let mut first = [0u8; 1];
                    if stream.peek(&mut first).await? == 0 {
                        return Ok(());
                    }
                    if first[0] != TLS_HANDSHAKE {
                        let _ = plain_tx.send(stream).await;
                        return Ok(());
                    }
                    let stream = acceptor.accept(stream).await?;
                    let _ = tls_tx.send((stream, peer)).await;
                    Ok::<(), io::Error>(())
                };
                match tokio::time::timeout(HANDSHAKE_TIMEOUT, handshake).await {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => tracing::debug!(%peer, %error, "TLS handshake failed"),
                    Err(_) => tracing::debug!(%peer, "TLS handshake timed out"),
                }
            });
        }
    });
    Sorted { tls, plain }
}

/// What a plain gRPC client on the TLS port is told.
pub(crate) fn plain_grpc_refusal(port: u16) -> ApiError {
    ApiError::FailedPrecondition(format!(
        "the controlplane speaks TLS on port {port}: add --tls to the CLI context \
         (levers9 config create NAME --tls) or set LEVERS9_CONTROLPLANE_TLS=true \
         (a worker: --tls); with a private CA also set LEVERS9_CONTROLPLANE_CA"
    ))
}

/// Serves plain gRPC connections one answer: the refusal.
pub(crate) async fn refuse_plain_grpc(
    plain: mpsc::Receiver<TcpStream>,
    port: u16,
    stopped: watch::Receiver<bool>,
) {
    let router = axum::Router::new().fallback(move || async move {
        tonic::Status::from(plain_grpc_refusal(port)).into_http::<axum::body::Body>()
    });
    let incoming =
        tokio_stream::StreamExt::map(tokio_stream::wrappers::ReceiverStream::new(plain), |s| {
            Ok::<_, io::Error>(s)
        });
    let served = tonic::transport::Server::builder()
        .add_routes(tonic::service::Routes::from(router))
        .serve_with_incoming_shutdown(incoming, async move {
            let mut stopped = stopped;
            let _ = stopped.wait_for(|stop| *stop).await;
        })
        .await;
    if let Err(error) = served {
        tracing::error!(%error, "the plain gRPC refusal stopped");
    }
}

/// Answers plain HTTP on the TLS port with a 400 naming the https URL.
pub(crate) async fn refuse_plain_http(mut plain: mpsc::Receiver<TcpStream>, port: u16) {
    while let Some(mut stream) = plain.recv().await {
        tokio::spawn(async move {
            let body = format!(
                "the controlplane speaks HTTPS on port {port}: use https:// (curl --cacert CA.pem https://HOST:{port}/...)\n"
            );
            let answer = format!(
                "HTTP/1.1 400 Bad Request\r\ncontent-type: text/plain\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = tokio::time::timeout(HANDSHAKE_TIMEOUT, async {
                // Read the request first: closing on unread bytes resets
                // the connection before the client sees the answer.
                let mut request = [0u8; 8192];
                let _ = stream.read(&mut request).await?;
                stream.write_all(answer.as_bytes()).await?;
                stream.shutdown().await
            })
            .await;
        });
    }
}

/// Hands finished handshakes to axum.
pub(crate) struct TlsListener {
    pub(crate) accepted: mpsc::Receiver<(TlsStream<TcpStream>, SocketAddr)>,
    pub(crate) addr: SocketAddr,
}

impl axum::serve::Listener for TlsListener {
    type Io = TlsStream<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        match self.accepted.recv().await {
            Some(pair) => pair,
            // The accept loop ended at shutdown; axum's graceful shutdown
            // ends the server, so no further connection is awaited.
            None => std::future::pending().await,
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Ok(self.addr)
    }
}

//! Starting and stopping a controlplane: both listeners over one shared state.

use std::future::{Future, IntoFuture};
use std::net::SocketAddr;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

use axum::serve::ListenerExt;
use levers9_api::v1::{
    auth_service_server::AuthServiceServer, cluster_service_server::ClusterServiceServer,
    container_service_server::ContainerServiceServer, dict_service_server::DictServiceServer,
    function_service_server::FunctionServiceServer, image_service_server::ImageServiceServer,
    log_service_server::LogServiceServer, machine_service_server::MachineServiceServer,
    queue_service_server::QueueServiceServer, secret_service_server::SecretServiceServer,
    token_service_server::TokenServiceServer, volume_service_server::VolumeServiceServer,
    worker_service_server::WorkerServiceServer, workspace_service_server::WorkspaceServiceServer,
};
use levers9_config::Config;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;
use tokio_stream::wrappers::ReceiverStream;
use tokio_stream::StreamExt as _;
use tonic::transport::server::TcpIncoming;

use crate::auth::{AuthLayer, Authenticator};
use crate::backends::{self, BackendError};
use crate::functions::objects::{ObjectStorage, ObjectStorageError};
use crate::metrics::{GrpcMetricsLayer, Metrics};
use crate::sealing;
use crate::services::Services;
use crate::Shared;

/// The largest function call message: arguments, results and code objects
/// travel whole.
const MAX_MESSAGE_BYTES: usize = 256 * 1024 * 1024;

type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send>>;

/// Why the controlplane could not start.
#[derive(Debug, thiserror::Error)]
pub enum StartError {
    /// A backend could not be opened.
    #[error(transparent)]
    Backend(#[from] BackendError),
    /// A listener could not bind.
    #[error("cannot listen on {addr} ({what}): {source}")]
    Bind {
        /// gRPC or HTTP.
        what: &'static str,
        /// `host:port`: `controlplane.bindAddress` and the listener's port.
        addr: String,
        /// Why.
        source: std::io::Error,
    },
    /// The workspace object storage is unreachable or refuses its keys.
    #[error(transparent)]
    Objects(#[from] ObjectStorageError),
    /// An encryption key in the config is malformed.
    #[error(transparent)]
    Key(#[from] levers9_seal::KeyError),
    /// `imageService.localImages` cannot be opened.
    #[error("imageService.localImages: {0}")]
    LocalImages(#[from] levers9_image::ImageError),
    /// `imageService.localImagesWritable` on a controlplane others can reach.
    #[error(
        "imageService.localImagesWritable needs controlplane.bindAddress on loopback (it is \
         {0:?}): pushes to the local image storage ask for no token"
    )]
    WritableImages(String),
    /// `storage.juicefs` cannot be formatted or mounted.
    #[error("storage.juicefs: {0}")]
    Volumes(#[from] levers9_volumes::VolumeError),
    /// `controlplane.tls` is incomplete or its files are unusable.
    #[error(transparent)]
    Tls(#[from] crate::tls::TlsError),
    /// The metrics registry refused a metric (a programming error).
    #[error("cannot register metrics: {0}")]
    Metrics(#[from] prometheus::Error),
}

/// A controlplane serving on both listeners, as [`start`] returns it;
/// [`RunningControlplane::stop`] ends it.
pub struct RunningControlplane {
    /// Where gRPC listens.
    pub grpc_addr: SocketAddr,
    /// Where HTTP listens.
    pub http_addr: SocketAddr,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
    volumes: levers9_volumes::Volumes,
}

impl RunningControlplane {
    /// Stops accepting calls, lets running ones finish, and returns.
    pub async fn stop(self) {
        let _ = self.shutdown.send(true);
        for task in self.tasks {
            let _ = task.await;
        }
        self.volumes.close().await;
    }
}

/// Opens the backends, binds both listeners and serves until stopped.
pub async fn start(config: Config) -> Result<RunningControlplane, StartError> {
    for default in config.shipped_defaults_in_use() {
        tracing::warn!(key = default.key(), "{}", default.advice());
    }
    let keyring = sealing::keyring(&config)?;
    let stores = backends::open_store(&config).await?;
    let store = stores.records.clone();
    let state = backends::open_state(&config).await?;
    match store.backend() {
        "sqlite" => tracing::info!(
            path = %backends::sqlite_path(&config).display(),
            "records: embedded SQLite (set database.postgres.host to use Postgres)"
        ),
        backend => tracing::info!(backend, "records: Postgres"),
    }
    match state.backend() {
        "memory" => tracing::info!(
            "hot state: in-process (set database.redis.addrs to use Redis; needed for more than one replica)"
        ),
        backend => tracing::info!(backend, "hot state: Redis"),
    }

    let objects = ObjectStorage::open(&config).await?;
    tracing::info!(
        location = %objects.location(),
        "objects: code and SDK zips (set storage.workspace.bucket to use S3)"
    );

    // Mounted now, so keys or a metadata URL that do not work stop the
    // start with their cause rather than fail each volume call later.
    let volumes = levers9_volumes::Volumes::new(
        &config,
        &config.controlplane.data_dir(),
        levers9_volumes::FormatMode::Update,
    );
    if volumes.is_juicefs() {
        volumes.root().await?;
    }
    tracing::info!(location = %volumes.location(), "volumes");

    let metrics = Arc::new(Metrics::new(store.backend(), state.backend())?);
    let replica_id = uuid::Uuid::now_v7().to_string();
    let cache_ttl = Duration::from_secs(config.controlplane.auth.token_cache_seconds);
    let images =
        crate::images::ImageBuilds::new(&config.image_service, &config.worker.image_registry)
            .with_insecure_registries(&config.worker.insecure_registries);
    let tasks = crate::functions::TaskState::new(
        state.clone(),
        Duration::from_secs(config.controlplane.task_result_ttl_seconds),
        &replica_id,
    );
    let fleet = crate::fleet::Fleet::new(
        state.clone(),
        Duration::from_secs(config.worker.heartbeat_ttl_seconds),
        config.worker.pools.clone(),
        Arc::new(tasks.clone()),
    )
    .with_job_resources_enforced(config.worker.job_resources_enforced)
    .with_worker_config(config.worker.clone())
    .with_worker_storage(&config.storage.juicefs)
    .with_registry_keychain(images.keychain().clone())
    .with_runtime_pools(stores.machines.clone())
    .with_workspace_volume_storage(volumes.is_juicefs());
    let shared = Arc::new(Shared {
        auth: Arc::new(Authenticator::new(store.clone(), cache_ttl)),
        store,
        sealed: stores.sealed.clone(),
        keyring: keyring.clone(),
        scheduling: crate::scheduler::Scheduling::new(fleet.clone(), state.clone()),
        fleet,
        functions: stores.functions.clone(),
        logs: stores.logs.clone(),
        stubs: crate::functions::stubs::StubCache::default(),
        tasks,
        task_logs: crate::functions::logs::TaskLogs::start(stores.logs.clone(), state.clone()),
        objects,
        volumes: volumes.clone(),
        base_image: config.image_service.runner.base_image_reference(),
        local_images: local_images(&config)?,
        state,
        images,
        image_registry: config.worker.image_registry.clone(),
        bootstrap_secret: config.controlplane.auth.bootstrap_secret.clone(),
        machines: stores.machines.clone(),
        object_limits: config.controlplane.objects.clone(),
    });
    if shared.bootstrap_secret.is_empty() {
        tracing::info!("bootstrap is off (no LEVERS9_BOOTSTRAP_SECRET)");
    }
    let services = Services::new(shared.clone());
    spawn_rotation(shared.clone(), config.controlplane.key_rotation.batch_size);

    let cp = &config.controlplane;
    let grpc_listener = bind("gRPC", &cp.bind_address, cp.grpc.port).await?;
    let http_listener = bind("HTTP", &cp.bind_address, cp.http.port).await?;
    let grpc_addr = local_addr("gRPC", &grpc_listener)?;
    let http_addr = local_addr("HTTP", &http_listener)?;
    let grpc_tls = crate::tls::acceptor(&cp.tls, b"h2")?;
    let http_tls = crate::tls::acceptor(&cp.tls, b"http/1.1")?;
    if grpc_tls.is_some() {
        tracing::info!(cert_file = %cp.tls.cert_file, "TLS on both listeners");
    }
    let (shutdown, stopped) = watch::channel(false);

    let (health_reporter, health_service) = tonic_health::server::health_reporter();
    health_reporter
        .set_serving::<AuthServiceServer<crate::services::AuthApi>>()
        .await;
    health_reporter
        .set_serving::<TokenServiceServer<crate::services::TokenApi>>()
        .await;
    health_reporter
        .set_serving::<WorkspaceServiceServer<crate::services::WorkspaceApi>>()
        .await;
    health_reporter
        .set_serving::<SecretServiceServer<crate::services::SecretApi>>()
        .await;
    health_reporter
        .set_serving::<WorkerServiceServer<crate::services::WorkerApi>>()
        .await;
    health_reporter
        .set_serving::<ContainerServiceServer<crate::services::ContainerApi>>()
        .await;
    health_reporter
        .set_serving::<FunctionServiceServer<crate::services::FunctionApi>>()
        .await;
    health_reporter
        .set_serving::<VolumeServiceServer<crate::services::VolumeApi>>()
        .await;
    health_reporter
        .set_serving::<MachineServiceServer<crate::services::MachineApi>>()
        .await;
    health_reporter
        .set_serving::<ClusterServiceServer<crate::services::ClusterApi>>()
        .await;
    health_reporter
        .set_serving::<DictServiceServer<crate::services::DictApi>>()
        .await;
    health_reporter
        .set_serving::<QueueServiceServer<crate::services::QueueApi>>()
        .await;
    health_reporter
        .set_serving::<LogServiceServer<crate::services::LogApi>>()
        .await;
    let grpc_router = tonic::transport::Server::builder()
        .layer(GrpcMetricsLayer(metrics.clone()))
        .layer(AuthLayer(shared.auth.clone()))
        .add_service(health_service)
        .add_service(AuthServiceServer::from_arc(services.auth.clone()))
        .add_service(TokenServiceServer::from_arc(services.token.clone()))
        .add_service(WorkspaceServiceServer::from_arc(services.workspace.clone()))
        .add_service(SecretServiceServer::from_arc(services.secret.clone()))
        .add_service(
            // Inputs and results of functions travel on worker streams.
            WorkerServiceServer::from_arc(services.worker.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES + (1 << 20))
                .max_encoding_message_size(MAX_MESSAGE_BYTES + (1 << 20)),
        )
        .add_service(ContainerServiceServer::from_arc(services.container.clone()))
        .add_service(VolumeServiceServer::from_arc(services.volume.clone()))
        .add_service(ImageServiceServer::from_arc(services.image.clone()))
        .add_service(MachineServiceServer::from_arc(services.machine.clone()))
        .add_service(ClusterServiceServer::from_arc(services.cluster.clone()))
        .add_service(LogServiceServer::from_arc(services.log.clone()))
        // A put of many values travels as one message, like a map's inputs.
        .add_service(
            DictServiceServer::from_arc(services.dict.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
        .add_service(
            QueueServiceServer::from_arc(services.queue.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        )
        .add_service(
            FunctionServiceServer::from_arc(services.function.clone())
                .max_decoding_message_size(MAX_MESSAGE_BYTES)
                .max_encoding_message_size(MAX_MESSAGE_BYTES),
        );
    let mut tasks = Vec::new();
    let grpc: BoxFuture<Result<(), tonic::transport::Error>> = match grpc_tls {
        None => Box::pin(grpc_router.serve_with_incoming_shutdown(
            // Small unary answers must not wait on Nagle's algorithm; our own
            // listener does not get tonic's default, so set it here.
            TcpIncoming::from(grpc_listener).with_nodelay(Some(true)),
            wait_for(stopped.clone()),
        )),
        Some(acceptor) => {
            let sorted = crate::tls::sort(grpc_listener, acceptor, stopped.clone());
            tasks.push(tokio::spawn(crate::tls::refuse_plain_grpc(
                sorted.plain,
                grpc_addr.port(),
                stopped.clone(),
            )));
            let incoming =
                ReceiverStream::new(sorted.tls).map(|(stream, _)| Ok::<_, std::io::Error>(stream));
            Box::pin(grpc_router.serve_with_incoming_shutdown(incoming, wait_for(stopped.clone())))
        }
    };
    let http_service = crate::http::router(shared.clone(), services, metrics).merge(
        crate::machines::download::router(crate::machines::download::AgentBinaries::from_config(
            &config.controlplane,
        )),
    );
    let http: BoxFuture<std::io::Result<()>> = match http_tls {
        None => {
            let http_listener = http_listener.tap_io(|stream| {
                if let Err(error) = stream.set_nodelay(true) {
                    tracing::debug!(%error, "cannot set TCP_NODELAY on an HTTP connection");
                }
            });
            Box::pin(
                axum::serve(http_listener, http_service)
                    .with_graceful_shutdown(wait_for(stopped.clone()))
                    .into_future(),
            )
        }
        Some(acceptor) => {
            let sorted = crate::tls::sort(http_listener, acceptor, stopped.clone());
            tasks.push(tokio::spawn(crate::tls::refuse_plain_http(
                sorted.plain,
                http_addr.port(),
            )));
            let listener = crate::tls::TlsListener {
                accepted: sorted.tls,
                addr: http_addr,
            };
            Box::pin(
                axum::serve(listener, http_service)
                    .with_graceful_shutdown(wait_for(stopped.clone()))
                    .into_future(),
            )
        }
    };

    let router = shared.tasks.clone();
    let routed = stopped.clone();
    tasks.extend([
        tokio::spawn(async move { router.route(routed).await }),
        tokio::spawn(crate::scheduler::run(
            shared.scheduling.clone(),
            replica_id.clone(),
            stopped.clone(),
        )),
        tokio::spawn(crate::fleet::reaper::run(
            shared.scheduling.clone(),
            replica_id.clone(),
            stopped.clone(),
        )),
        tokio::spawn(crate::fleet::provider::run(
            crate::fleet::provider::Providers {
                scheduling: shared.scheduling.clone(),
                store: shared.store.clone(),
                pools: config.worker.pools.clone(),
                job_resources_enforced: config.worker.job_resources_enforced,
                worker_wide: levers9_kube::WorkerWide::from_config(&config),
                processes: Arc::new(crate::fleet::provider::process::Launch::new(
                    &config,
                    shared.store.clone(),
                    grpc_addr,
                )),
                holder: replica_id.clone(),
            },
            stopped.clone(),
        )),
        tokio::spawn(crate::schedules::firer::run(
            crate::schedules::firer::Parts {
                store: shared.functions.clone(),
                tasks: shared.tasks.clone(),
            },
            replica_id.clone(),
            stopped.clone(),
        )),
        tokio::spawn(crate::functions::dispatcher::run(
            crate::functions::dispatcher::Parts {
                store: shared.functions.clone(),
                tasks: shared.tasks.clone(),
                scheduling: shared.scheduling.clone(),
            },
            replica_id,
            stopped,
        )),
        tokio::spawn(async move {
            if let Err(error) = grpc.await {
                tracing::error!(%error, "gRPC listener stopped");
            }
        }),
        tokio::spawn(async move {
            if let Err(error) = http.await {
                tracing::error!(%error, "HTTP listener stopped");
            }
        }),
    ]);
    tracing::info!(grpc = %grpc_addr, http = %http_addr, "controlplane listening");
    Ok(RunningControlplane {
        grpc_addr,
        http_addr,
        shutdown,
        tasks,
        volumes,
    })
}

/// The local image storage, when configured.
fn local_images(config: &Config) -> Result<Option<crate::registry::LocalImages>, StartError> {
    let images = &config.image_service;
    if images.local_images.is_empty() {
        return Ok(None);
    }
    let bind = &config.controlplane.bind_address;
    let loopback = bind == "localhost"
        || bind
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    if images.local_images_writable && !loopback {
        return Err(StartError::WritableImages(bind.clone()));
    }
    Ok(Some(crate::registry::LocalImages {
        layout: levers9_image::layout::Layout::open(Path::new(&images.local_images))?,
        writable: images.local_images_writable,
    }))
}

async fn bind(what: &'static str, host: &str, port: u16) -> Result<TcpListener, StartError> {
    TcpListener::bind((host, port))
        .await
        .map_err(|source| StartError::Bind {
            what,
            addr: format!("{host}:{port}"),
            source,
        })
}

fn local_addr(what: &'static str, listener: &TcpListener) -> Result<SocketAddr, StartError> {
    listener.local_addr().map_err(|source| StartError::Bind {
        what,
        addr: "bound socket".into(),
        source,
    })
}

async fn wait_for(mut stopped: watch::Receiver<bool>) {
    let _ = stopped.wait_for(|stop| *stop).await;
}

/// Re-seals stored values onto the current key in the background, so the
/// controlplane serves while it runs, and logs the outcome as one structured
/// line operators can check before dropping an old key.
fn spawn_rotation(shared: Arc<Shared>, batch_size: u32) {
    tokio::spawn(async move {
        let current_key_id = shared.keyring.current_id().to_string();
        match sealing::rotate(shared.sealed.as_ref(), &shared.keyring, batch_size).await {
            Ok(report) => tracing::info!(
                all_rows_on_current_key = report.all_rows_on_current_key(),
                current_key_id,
                resealed = report.resealed,
                changed_meanwhile = report.changed_meanwhile,
                unknown_key = report.unknown_key,
                tampered = report.tampered,
                on_current_key = report.on_current_key,
                on_other_keys = report.on_other_keys,
                "encryption key rotation finished"
            ),
            Err(error) => tracing::error!(
                all_rows_on_current_key = false,
                current_key_id,
                %error,
                "encryption key rotation failed; it runs again at the next start"
            ),
        }
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn writable_local_images_need_a_loopback_controlplane() {
        let dir = tempfile::tempdir().expect("dir");
        let mut config = Config::default();
        config.image_service.local_images = dir.path().display().to_string();
        config.image_service.local_images_writable = true;

        config.controlplane.bind_address = "0.0.0.0".into();
        let error = local_images(&config).expect_err("reachable from outside");
        assert!(
            error
                .to_string()
                .contains("controlplane.bindAddress on loopback"),
            "{error}"
        );

        for loopback in ["127.0.0.1", "::1", "localhost"] {
            config.controlplane.bind_address = loopback.into();
            let images = local_images(&config).expect("loopback").expect("on");
            assert!(images.writable);
        }
        config.image_service.local_images_writable = false;
        config.controlplane.bind_address = "0.0.0.0".into();
        let images = local_images(&config).expect("read-only").expect("on");
        assert!(!images.writable);
    }
}

//! `levers9 up`: the whole stack on one machine — a controlplane on the
//! embedded state whose pool `default` keeps one worker process
//! (`provider: process`) — with a CLI context to use it.

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use clap::{Args, ValueEnum};
use levers9_api::v1::AuthorizeRequest;
use levers9_config::{PoolConfig, PoolProvider, PoolRuntime};

use crate::client::{Client, Target};
use crate::context::{CliConfig, Context};

/// The CLI context `up` writes and selects.
const CONTEXT: &str = "local";

#[derive(Debug, Clone, Copy, ValueEnum)]
enum RuntimeArg {
    Runc,
    Gvisor,
}

/// Arguments of `levers9 up`.
#[derive(Debug, Args)]
pub struct UpArgs {
    /// YAML config file, as for `levers9 controlplane` (the embedded state
    /// unless it configures Postgres and Redis).
    #[arg(long, env = "LEVERS9_CONFIG")]
    config: Option<PathBuf>,
    /// Where the records, the worker's state and images live.
    #[arg(long, default_value_os_t = default_dir())]
    data_dir: PathBuf,
    /// gRPC port on 127.0.0.1.
    #[arg(long, default_value_t = 1993)]
    grpc_port: u16,
    /// HTTP port on 127.0.0.1.
    #[arg(long, default_value_t = 1994)]
    http_port: u16,
    /// The local worker's container runtime.
    #[arg(long, value_enum, default_value = "runc")]
    runtime: RuntimeArg,
}

fn default_dir() -> PathBuf {
    let home = std::env::var_os("HOME").unwrap_or_else(|| ".".into());
    PathBuf::from(home).join(".levers9").join("up")
}

/// Starts everything, writes the `local` context, serves until SIGINT/SIGTERM.
pub async fn run(args: UpArgs) -> Result<()> {
    let env = |name: &str| std::env::var(name).ok();
    let (mut config, _) = levers9_config::load(args.config.as_deref(), &env)?;
    let cp = &mut config.controlplane;
    cp.bind_address = "127.0.0.1".into();
    cp.grpc.port = args.grpc_port;
    cp.http.port = args.http_port;
    cp.data_dir = args.data_dir.join("controlplane").display().to_string();
    // The controlplane keeps one worker process in pool `default`: known
    // before its worker joins, so a first call made at once waits for the
    // worker rather than being refused.
    let pool = config
        .worker
        .pools
        .entry("default".into())
        .or_insert_with(|| PoolConfig {
            runtime: match args.runtime {
                RuntimeArg::Runc => PoolRuntime::Runc,
                RuntimeArg::Gvisor => PoolRuntime::Gvisor,
            },
            ..Default::default()
        });
    if pool.provider == PoolProvider::Local {
        pool.provider = PoolProvider::Process;
        pool.scaling.min_workers = pool.scaling.min_workers.max(1);
        pool.scaling.max_workers = pool.scaling.max_workers.max(pool.scaling.min_workers);
        if pool.process.state_dir.is_empty() {
            pool.process.state_dir = args.data_dir.join("workers").display().to_string();
        }
        // The controlplane stops with this process: nowhere to drain to.
        pool.process.drain_grace_seconds = 0;
    }
    let runner = &mut config.image_service.runner;
    if runner.base_image_registry.is_empty() {
        if args.http_port == 0 {
            bail!(
                "--http-port must be a fixed port: the local worker pulls the base image from it"
            );
        }
        // No registry to pull the base image from: build it into the local
        // image storage, which the controlplane serves as a registry.
        let dir = args.data_dir.join("images");
        let name = runner.base_image.clone();
        let layout = levers9_image::layout::Layout::open(&dir)?;
        tokio::task::spawn_blocking(move || {
            let say = |what: &str| eprintln!("levers9 up: {what}");
            levers9_image::debian::ensure_python_image(&layout, &name, &say)
        })
        .await??;
        let local = format!("127.0.0.1:{}", args.http_port);
        runner.base_image_registry = local.clone();
        let images = &mut config.image_service;
        images.local_images = dir.display().to_string();
        // Image builds push to the same storage and run on the one worker,
        // so `Image().add_python_packages(...)` works with nothing else.
        images.local_images_writable = true;
        if !config
            .worker
            .pools
            .contains_key(&images.build_pool_selector)
        {
            images.build_pool_selector = "default".into();
        }
        if config.worker.image_registry.is_empty() {
            config.worker.image_registry = local;
        }
    }
    // A one-time secret: only this process ever knows it, and it does
    // nothing once the first workspace exists.
    let secret = uuid::Uuid::new_v4().simple().to_string();
    cp.auth.bootstrap_secret = levers9_config::Secret::new(secret.clone());
    let running = levers9_controlplane::start(config).await?;
    let target = Target {
        host: "127.0.0.1".into(),
        port: running.grpc_addr.port(),
        tls: false,
        ca_file: None,
        token: String::new(),
    };
    let admin = admin_token(&target, &secret).await?;
    let path = save_context(&target, &admin)?;
    eprintln!(
        "levers9 is up: gRPC {} and HTTP {}, a {} worker in pool default.\n\
         The CLI context {CONTEXT:?} is selected ({}).\n\
         Try: python examples/hello.py (with the SDK: pip install ./sdk/python)\n\
         Stop with Ctrl-C.",
        running.grpc_addr,
        running.http_addr,
        args.runtime_name(),
        path.display()
    );
    super::shutdown_signal().await?;
    eprintln!("levers9 is going down");
    // Stops the worker process too.
    running.stop().await;
    Ok(())
}

impl UpArgs {
    fn runtime_name(&self) -> &'static str {
        match self.runtime {
            RuntimeArg::Runc => "runc",
            RuntimeArg::Gvisor => "gvisor",
        }
    }
}

/// The admin token: a fresh one on a fresh data dir, or the one the `local`
/// context saved on an earlier `up` of the same data dir.
async fn admin_token(target: &Target, secret: &str) -> Result<String> {
    let client = Client::new(target)?;
    match client.bootstrap(secret).await {
        Ok(answer) => return Ok(answer.new_token),
        Err(error) => {
            let already = error
                .downcast_ref::<tonic::Status>()
                .is_some_and(|s| s.code() == tonic::Code::FailedPrecondition);
            if !already {
                return Err(error);
            }
        }
    }
    let saved = CliConfig::load()?
        .and_then(|file| file.contexts.get(CONTEXT).map(|c| c.token.clone()))
        .unwrap_or_default();
    if !saved.is_empty() {
        let check = Client::new(&Target {
            token: saved.clone(),
            ..target.clone()
        })?
        .auth()
        .authorize(AuthorizeRequest {})
        .await;
        if check.is_ok() {
            return Ok(saved);
        }
    }
    bail!(
        "this data dir was set up before and the CLI has no working token for it (context \
         {CONTEXT:?}): use another --data-dir, or remove the old one to start afresh"
    )
}

fn save_context(target: &Target, token: &str) -> Result<PathBuf> {
    let mut file = CliConfig::load()?.unwrap_or_default();
    file.contexts.insert(
        CONTEXT.to_owned(),
        Context {
            host: target.host.clone(),
            port: target.port,
            tls: false,
            ca_file: None,
            token: token.to_owned(),
        },
    );
    file.current = CONTEXT.to_owned();
    file.save().context("cannot save the CLI context")
}

//! `levers9 controlplane`.

use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};
use clap::Args;

/// Arguments of `levers9 controlplane`.
#[derive(Debug, Args)]
pub struct ControlplaneArgs {
    /// YAML config file; its keys override the shipped defaults and
    /// LEVERS9_* variables override it (see docs/configuration.md).
    #[arg(long, env = "LEVERS9_CONFIG")]
    config: Option<PathBuf>,
    /// Print the effective config, every secret redacted, and exit.
    #[arg(long)]
    print_config: bool,
}

/// Loads the config and serves until SIGINT or SIGTERM.
pub async fn run(args: ControlplaneArgs) -> Result<()> {
    let env = |name: &str| std::env::var(name).ok();
    let (config, source) = levers9_config::load(args.config.as_deref(), &env)?;
    if args.print_config {
        let yaml =
            levers9_config::to_yaml(&config.redacted()).context("cannot print the config")?;
        print!("{yaml}");
        return Ok(());
    }
    if std::env::var("LEVERS9_REFUSE_DEFAULT_ENCRYPTION_KEY").is_ok_and(|v| v == "true")
        && config.database.postgres.encryption_key.expose()
            == levers9_config::SHIPPED_ENCRYPTION_KEY
    {
        bail!(
            "refusing to start on the shipped database encryption key \
             (LEVERS9_REFUSE_DEFAULT_ENCRYPTION_KEY=true). Make a key with \
             `head -c 32 /dev/urandom | base64`, set it as database.postgres.encryptionKey \
             (or LEVERS9_ENCRYPTION_KEY) and list the shipped key under \
             database.postgres.previousEncryptionKeys for one start, so stored values are \
             re-sealed onto the new key; see docs/security.md"
        );
    }
    match &source {
        levers9_config::ConfigSource::Defaults => {
            tracing::info!("config: shipped defaults and LEVERS9_* environment")
        }
        levers9_config::ConfigSource::File(path) => {
            tracing::info!(file = %path.display(), "config: file and LEVERS9_* environment")
        }
    }
    let running = levers9_controlplane::start(config).await?;
    super::shutdown_signal().await?;
    tracing::info!("shutting down");
    running.stop().await;
    Ok(())
}

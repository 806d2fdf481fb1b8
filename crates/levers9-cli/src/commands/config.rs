//! `levers9 config`: CLI contexts.

use anyhow::{bail, Result};
use clap::Subcommand;

use crate::context::{CliConfig, DEFAULT_PORT};
use crate::output;

/// Context commands.
#[derive(Debug, Subcommand)]
pub enum ConfigCommand {
    /// Create (or replace) a context and make it current. Asks for the token
    /// (or takes LEVERS9_TOKEN); an empty token with LEVERS9_BOOTSTRAP_SECRET
    /// set gets the first admin token of a new install.
    Create {
        /// Context name.
        name: String,
        /// Controlplane host.
        #[arg(long, default_value = "localhost")]
        host: String,
        /// Controlplane gRPC port.
        #[arg(long, default_value_t = DEFAULT_PORT)]
        port: u16,
        /// Use TLS on a port other than 443 (443 always uses TLS); needed
        /// for a controlplane that serves TLS itself (controlplane.tls).
        #[arg(long)]
        tls: bool,
        /// A PEM file of CA certificates to trust besides the system's, for
        /// a controlplane certificate a private CA signed (default:
        /// LEVERS9_CONTROLPLANE_CA).
        #[arg(long)]
        ca_file: Option<std::path::PathBuf>,
    },
    /// List contexts; the current one is marked with *.
    List,
    /// Make a context current.
    Select {
        /// Context name.
        name: String,
    },
    /// Delete a context.
    Delete {
        /// Context name.
        name: String,
    },
    /// Show a context (the current one by default); the token stays hidden.
    Show {
        /// Context name.
        name: Option<String>,
    },
}

/// Runs a context command.
pub async fn run(command: ConfigCommand, selected: Option<&str>) -> Result<()> {
    match command {
        ConfigCommand::Create {
            name,
            host,
            port,
            tls,
            ca_file,
        } => {
            let address = crate::first_run::Address {
                host,
                port,
                tls,
                ca_file,
            };
            crate::first_run::ask_and_save(&name, Some(address)).await?;
            Ok(())
        }
        ConfigCommand::List => {
            let file = existing()?;
            let rows: Vec<Vec<String>> = file
                .contexts
                .iter()
                .map(|(name, c)| {
                    let mark = if *name == file.current { "*" } else { "" };
                    vec![
                        mark.to_owned(),
                        name.clone(),
                        c.host.clone(),
                        c.port.to_string(),
                        levers9_api::dial::uses_tls(c.port, c.tls).to_string(),
                    ]
                })
                .collect();
            output::table(&["", "NAME", "HOST", "PORT", "TLS"], &rows);
            Ok(())
        }
        ConfigCommand::Select { name } => {
            let mut file = existing()?;
            file.select(&name)?;
            file.save()?;
            eprintln!("Current context: {name}");
            Ok(())
        }
        ConfigCommand::Delete { name } => {
            let mut file = existing()?;
            if file.contexts.remove(&name).is_none() {
                bail!("no context named {name:?}: see levers9 config list");
            }
            if file.current == name {
                file.current = String::new();
            }
            file.save()?;
            eprintln!("Deleted context {name}");
            Ok(())
        }
        ConfigCommand::Show { name } => {
            let file = existing()?;
            let name = name
                .or(selected.map(str::to_owned))
                .unwrap_or(file.current.clone());
            let c = file.get(&name)?;
            println!("name: {name}");
            println!("host: {}", c.host);
            println!("port: {}", c.port);
            println!("tls: {}", levers9_api::dial::uses_tls(c.port, c.tls));
            if let Some(ca) = &c.ca_file {
                println!("ca_file: {}", ca.display());
            }
            println!(
                "token: {}",
                if c.token.is_empty() {
                    "<none>"
                } else {
                    "<hidden>"
                }
            );
            Ok(())
        }
    }
}

fn existing() -> Result<CliConfig> {
    match CliConfig::load()? {
        Some(file) => Ok(file),
        None => bail!("there is no CLI config yet: create one with levers9 config create NAME"),
    }
}

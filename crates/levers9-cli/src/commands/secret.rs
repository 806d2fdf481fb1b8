//! `levers9 secret`.

use std::io::{IsTerminal, Read, Write};
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::{Args, Subcommand};
use levers9_api::v1::{
    CreateSecretRequest, DeleteSecretRequest, ListSecretsRequest, UpdateSecretRequest,
};

use crate::output;

/// Secret commands.
#[derive(Debug, Subcommand)]
pub enum SecretCommand {
    /// Create a secret. The value comes from --value, --from-file or stdin;
    /// it is sealed at rest and never shown again.
    Create(ValueArgs),
    /// List secret names (never values).
    List,
    /// Replace the value of a secret.
    Update(ValueArgs),
    /// Delete a secret.
    Delete {
        /// Secret name.
        name: String,
    },
}

/// A secret's name and where its value comes from.
#[derive(Debug, Args)]
pub struct ValueArgs {
    /// Secret name: becomes an environment variable in containers.
    name: String,
    /// The value. Prefer --from-file or stdin: a flag shows in the process list.
    #[arg(long, conflicts_with = "from_file")]
    value: Option<String>,
    /// Read the value from this file.
    #[arg(long)]
    from_file: Option<PathBuf>,
}

impl ValueArgs {
    fn value(&self) -> Result<String> {
        if let Some(value) = &self.value {
            return Ok(value.clone());
        }
        if let Some(path) = &self.from_file {
            return std::fs::read_to_string(path)
                .with_context(|| format!("cannot read the secret value from {}", path.display()));
        }
        let mut stdin = std::io::stdin();
        let mut text = String::new();
        if stdin.is_terminal() {
            eprint!("Value of {}: ", self.name);
            std::io::stderr().flush()?;
            stdin.read_line(&mut text)?;
        } else {
            stdin.read_to_string(&mut text)?;
        }
        // `echo value | levers9 secret create` must not store the newline.
        Ok(text
            .strip_suffix('\n')
            .map(|t| t.strip_suffix('\r').unwrap_or(t))
            .unwrap_or(&text)
            .to_owned())
    }
}

/// Runs a secret command.
pub async fn run(command: SecretCommand, context: Option<&str>) -> Result<()> {
    // Read the value before connecting, so a first run's prompts and the
    // value never compete for stdin.
    let value = match &command {
        SecretCommand::Create(args) | SecretCommand::Update(args) => Some(args.value()?),
        _ => None,
    };
    let client = super::connect(context).await?;
    let mut secrets = client.secrets();
    match command {
        SecretCommand::Create(args) => {
            secrets
                .create_secret(CreateSecretRequest {
                    name: args.name.clone(),
                    value: value.unwrap_or_default(),
                })
                .await?;
            eprintln!("Created secret {}", args.name);
        }
        SecretCommand::Update(args) => {
            secrets
                .update_secret(UpdateSecretRequest {
                    name: args.name.clone(),
                    value: value.unwrap_or_default(),
                })
                .await?;
            eprintln!("Updated secret {}", args.name);
        }
        SecretCommand::List => {
            let listed = secrets
                .list_secrets(ListSecretsRequest {})
                .await?
                .into_inner()
                .secrets;
            let rows: Vec<Vec<String>> = listed
                .into_iter()
                .map(|s| vec![s.name, s.key_id, s.created_at, s.updated_at])
                .collect();
            output::table(&["NAME", "KEY", "CREATED", "UPDATED"], &rows);
        }
        SecretCommand::Delete { name } => {
            secrets
                .delete_secret(DeleteSecretRequest { name: name.clone() })
                .await?;
            eprintln!("Deleted secret {name}");
        }
    }
    Ok(())
}

//! `levers9 workspace`.

use std::io::{IsTerminal, Read};
use std::path::PathBuf;

use anyhow::{Context as _, Result};
use clap::Subcommand;
use levers9_api::v1::{
    CreateWorkspaceRequest, GetStorageCredentialsRequest, GetWorkspaceRequest,
    SetStorageCredentialsRequest, StorageCredentials,
};

/// Workspace commands.
#[derive(Debug, Subcommand)]
pub enum WorkspaceCommand {
    /// Create a workspace (admin token); prints its first admin token once.
    Create {
        /// Lower-case letters, digits and dashes.
        name: String,
    },
    /// Show the workspace of your token.
    Show,
    /// The workspace's object storage credentials (admin token).
    #[command(subcommand)]
    Storage(StorageCommand),
}

/// Storage credential commands.
#[derive(Debug, Subcommand)]
pub enum StorageCommand {
    /// Set them; the secret access key is read from stdin (or
    /// --secret-access-key-file), sealed at rest and never shown again.
    Set {
        /// S3-compatible endpoint, e.g. https://s3.us-east-2.amazonaws.com.
        #[arg(long)]
        endpoint: String,
        /// Bucket.
        #[arg(long)]
        bucket: String,
        /// Access key id.
        #[arg(long)]
        access_key_id: String,
        /// Read the secret access key from this file instead of stdin.
        #[arg(long)]
        secret_access_key_file: Option<PathBuf>,
    },
    /// Show them, without the secret access key.
    Show,
}

/// Runs a workspace command.
pub async fn run(command: WorkspaceCommand, context: Option<&str>) -> Result<()> {
    // Read the secret before connecting, so a first run's prompts and the
    // secret never compete for stdin.
    let secret_access_key = match &command {
        WorkspaceCommand::Storage(StorageCommand::Set {
            secret_access_key_file: Some(path),
            ..
        }) => Some(
            std::fs::read_to_string(path)
                .with_context(|| format!("cannot read {}", path.display()))?,
        ),
        WorkspaceCommand::Storage(StorageCommand::Set { .. }) => Some(read_stdin_secret()?),
        _ => None,
    };
    let client = super::connect(context).await?;
    match command {
        WorkspaceCommand::Create { name } => {
            let answer = client
                .workspaces()
                .create_workspace(CreateWorkspaceRequest { name })
                .await?
                .into_inner();
            let workspace = answer
                .workspace
                .context("the controlplane sent no workspace")?;
            eprintln!(
                "Created workspace {} ({}); its admin token, shown once:",
                workspace.name, workspace.id
            );
            println!("{}", answer.admin_token);
        }
        WorkspaceCommand::Show => {
            let workspace = client
                .workspaces()
                .get_workspace(GetWorkspaceRequest {})
                .await?
                .into_inner()
                .workspace
                .context("the controlplane sent no workspace")?;
            println!("id: {}", workspace.id);
            println!("name: {}", workspace.name);
            println!("created: {}", workspace.created_at);
        }
        WorkspaceCommand::Storage(StorageCommand::Set {
            endpoint,
            bucket,
            access_key_id,
            ..
        }) => {
            client
                .workspaces()
                .set_storage_credentials(SetStorageCredentialsRequest {
                    credentials: Some(StorageCredentials {
                        endpoint,
                        bucket,
                        access_key_id,
                        secret_access_key: secret_access_key.unwrap_or_default().trim().to_owned(),
                    }),
                })
                .await?;
            eprintln!("Storage credentials set (sealed at rest)");
        }
        WorkspaceCommand::Storage(StorageCommand::Show) => {
            let answer = client
                .workspaces()
                .get_storage_credentials(GetStorageCredentialsRequest {})
                .await?
                .into_inner();
            let c = answer
                .credentials
                .context("the controlplane sent no credentials")?;
            println!("endpoint: {}", c.endpoint);
            println!("bucket: {}", c.bucket);
            println!("access key id: {}", c.access_key_id);
            println!("secret access key: <sealed>");
            println!("sealed with key: {}", answer.key_id);
        }
    }
    Ok(())
}

fn read_stdin_secret() -> Result<String> {
    let mut stdin = std::io::stdin();
    if stdin.is_terminal() {
        eprint!("Secret access key: ");
    }
    let mut text = String::new();
    stdin.read_to_string(&mut text)?;
    Ok(text)
}

//! `levers9 workspace`.

use anyhow::{Context as _, Result};
use clap::Subcommand;
use levers9_api::v1::{CreateWorkspaceRequest, GetWorkspaceRequest};

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
}

/// Runs a workspace command.
pub async fn run(command: WorkspaceCommand, context: Option<&str>) -> Result<()> {
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
    }
    Ok(())
}

//! `levers9 stub`: the functions your workspace has run, as stored.

use anyhow::Result;
use clap::Subcommand;
use levers9_api::v1::{GetStubRequest, ListStubsRequest};

use crate::output;

/// Stub commands.
#[derive(Debug, Subcommand)]
pub enum StubCommand {
    /// List your workspace's stubs, newest first: each function with the
    /// module (app) it was defined in, its image and resources.
    List {
        /// How many, at most (up to 1000).
        #[arg(long, default_value_t = 100)]
        limit: u32,
    },
    /// Show one stub's whole configuration.
    Show {
        /// Stub id.
        id: String,
    },
}

/// Runs a stub command.
pub async fn run(command: StubCommand, context: Option<&str>) -> Result<()> {
    let client = super::connect(context).await?;
    let mut functions = client.functions();
    match command {
        StubCommand::List { limit } => {
            let stubs = functions
                .list_stubs(ListStubsRequest { limit })
                .await?
                .into_inner()
                .stubs;
            let rows: Vec<Vec<String>> = stubs
                .into_iter()
                .map(|s| {
                    let config = s.config.unwrap_or_default();
                    vec![
                        s.stub_id,
                        s.module_path,
                        s.function_name,
                        config.image,
                        format!("{}m", config.cpu_millicores),
                        format!("{}Mi", config.memory_mib),
                        s.created_at,
                    ]
                })
                .collect();
            output::table(
                &["ID", "APP", "FUNCTION", "IMAGE", "CPU", "MEMORY", "CREATED"],
                &rows,
            );
        }
        StubCommand::Show { id } => {
            let stub = functions
                .get_stub(GetStubRequest { stub_id: id })
                .await?
                .into_inner()
                .stub
                .unwrap_or_default();
            println!("{}", serde_json::to_string_pretty(&stub)?);
        }
    }
    Ok(())
}

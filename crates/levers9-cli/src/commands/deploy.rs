//! `levers9 deploy path/file.py`: the file's functions as an app that anyone
//! in the workspace calls by name (`levers9.Function.lookup(app, fn)`), and
//! `levers9 deployment list`. Deploying is the SDK's work (it packs the code
//! and makes the stubs, as a first `.remote()` does); this hands over to it.

use anyhow::Result;
use clap::{Args, Subcommand};
use levers9_api::v1::ListDeploymentsRequest;

use crate::output;

/// Arguments of `levers9 deploy`.
#[derive(Debug, Args)]
pub struct DeployArgs {
    /// The file whose @function functions make the app; its directory is the
    /// code shipped, as for `levers9 run`.
    file: String,
    /// The app's name (letters, digits, '-', '_', '.'); default: the file's
    /// stem. Deploying the same name again makes its next version, which
    /// replaces all of the app's functions at once.
    #[arg(long)]
    name: Option<String>,
    /// The Python that has the levers9 SDK installed (pip install ./sdk/python).
    #[arg(long, env = "LEVERS9_PYTHON", default_value = "python3")]
    python: String,
}

/// Deployment commands.
#[derive(Debug, Subcommand)]
pub enum DeploymentCommand {
    /// List the functions of the current version of each deployed app.
    List,
}

/// Replaces this process with `python -m levers9 deploy …`.
pub async fn deploy(args: DeployArgs, context: Option<&str>) -> Result<()> {
    let mut sdk_args = vec!["deploy".to_owned(), args.file];
    if let Some(name) = args.name {
        sdk_args.extend(["--name".to_owned(), name]);
    }
    super::run::exec_sdk(&args.python, &sdk_args, context).await
}

/// Runs a deployment command.
pub async fn run(command: DeploymentCommand, context: Option<&str>) -> Result<()> {
    let client = super::connect(context).await?;
    match command {
        DeploymentCommand::List => {
            let deployments = client
                .functions()
                .list_deployments(ListDeploymentsRequest {})
                .await?
                .into_inner()
                .deployments;
            let rows: Vec<Vec<String>> = deployments
                .into_iter()
                .map(|d| {
                    vec![
                        d.app_name,
                        d.function_name,
                        d.version.to_string(),
                        d.stub_id,
                        d.created_at,
                    ]
                })
                .collect();
            output::table(&["APP", "FUNCTION", "VERSION", "STUB", "DEPLOYED"], &rows);
        }
    }
    Ok(())
}

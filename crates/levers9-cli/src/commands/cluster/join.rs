//! `levers9 cluster join --pool NAME`.

use anyhow::{Context as _, Result};
use clap::Args;
use levers9_api::v1::CreateTokenRequest;
use levers9_kube::AttachedCluster;

use super::pool::PoolArgs;

/// `levers9 cluster join`.
#[derive(Debug, Args)]
pub struct JoinArgs {
    /// The pool the cluster's workers join; requests reach it by naming it.
    #[arg(long)]
    pool: String,
    /// The namespace of the agent and the worker Jobs.
    #[arg(long, default_value = "levers9-workers")]
    namespace: String,
    /// The image of the agent and workers (the levers9 worker image).
    #[arg(long)]
    image: String,
    /// The pool's hardware, placement and scaling.
    #[command(flatten)]
    pool_args: PoolArgs,
    /// Write the manifests as YAML to stdout instead of applying them.
    #[arg(long)]
    print: bool,
}

/// Creates the worker token, then prints or applies the manifests.
pub async fn run(args: JoinArgs, context: Option<&str>) -> Result<()> {
    // Checked before a token is made for nothing.
    args.pool_args.pool()?;
    let client = super::super::connect(context).await?;
    let answer = client
        .tokens()
        .create_token(CreateTokenRequest {
            token_type: "worker".into(),
            description: format!("attached cluster, pool {}", args.pool),
        })
        .await?
        .into_inner();
    let token_id = answer.token.map(|t| t.id).unwrap_or_default();
    let cluster = AttachedCluster {
        pool: args.pool.clone(),
        namespace: args.namespace.clone(),
        image: args.image.clone(),
        agent_args: args.pool_args.to_args(),
        image_pull_secrets: args.pool_args.access.image_pull_secrets.clone(),
        token: answer.secret,
    };
    if args.print {
        print!("{}", cluster.yaml()?);
        eprintln!(
            "Created worker token {token_id} for pool {}; it is in the Secret above \
             (revoke it with levers9 token revoke {token_id} if you discard this output)",
            args.pool
        );
        return Ok(());
    }
    let kube = levers9_kube::default_client()
        .await
        .context("cannot reach the cluster of your kubeconfig (KUBECONFIG or ~/.kube/config); use --print to get the manifests instead")?;
    cluster.apply(&kube).await?;
    eprintln!(
        "Attached the cluster as pool {} in namespace {} (worker token {token_id}); \
         the agent starts worker Jobs as requests wait for the pool",
        args.pool, args.namespace
    );
    Ok(())
}

//! `levers9 token`.

use anyhow::{Context as _, Result};
use clap::Subcommand;
use levers9_api::v1::{CreateTokenRequest, ListTokensRequest, RevokeTokenRequest};

use crate::output::{self, or_dash};

/// Token commands.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token; its secret is printed once and stored only as a hash.
    Create {
        /// admin, workspace, worker or machine.
        #[arg(long = "type", default_value = "workspace")]
        token_type: String,
        /// What the token is for.
        #[arg(long, default_value = "")]
        description: String,
    },
    /// List the tokens of your workspace (never their secrets).
    List,
    /// Revoke a token; it stops working within seconds everywhere.
    Revoke {
        /// The token id, from levers9 token list.
        id: String,
    },
}

/// Runs a token command.
pub async fn run(command: TokenCommand, context: Option<&str>) -> Result<()> {
    let client = super::connect(context).await?;
    match command {
        TokenCommand::Create {
            token_type,
            description,
        } => {
            let answer = client
                .tokens()
                .create_token(CreateTokenRequest {
                    token_type,
                    description,
                })
                .await?
                .into_inner();
            let token = answer.token.context("the controlplane sent no token")?;
            eprintln!(
                "Created {} token {} (shown once; keep it secret):",
                token.token_type, token.id
            );
            println!("{}", answer.secret);
        }
        TokenCommand::List => {
            let tokens = client
                .tokens()
                .list_tokens(ListTokensRequest {})
                .await?
                .into_inner()
                .tokens;
            let rows: Vec<Vec<String>> = tokens
                .into_iter()
                .map(|t| {
                    vec![
                        t.id,
                        t.token_type,
                        or_dash(&t.description),
                        t.created_at,
                        or_dash(&t.last_used_at),
                        or_dash(&t.revoked_at),
                    ]
                })
                .collect();
            output::table(
                &[
                    "ID",
                    "TYPE",
                    "DESCRIPTION",
                    "CREATED",
                    "LAST USED",
                    "REVOKED",
                ],
                &rows,
            );
        }
        TokenCommand::Revoke { id } => {
            client
                .tokens()
                .revoke_token(RevokeTokenRequest {
                    token_id: id.clone(),
                })
                .await?;
            eprintln!("Revoked token {id}");
        }
    }
    Ok(())
}

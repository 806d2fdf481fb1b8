//! Which controlplane and token a command uses, and the first run on a
//! machine with no CLI config: ask for the address and a token; an empty
//! token with `LEVERS9_BOOTSTRAP_SECRET` set gets the first admin token.

use std::io::{BufRead, IsTerminal, Write};
use std::path::PathBuf;

use anyhow::{bail, Context as _, Result};

use crate::client::{Client, Target};
use crate::context::{parse_address, CliConfig, Context, DEFAULT_PORT};

/// Name of the context the first run saves.
const FIRST_CONTEXT: &str = "default";

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// `LEVERS9_CONTROLPLANE_TLS` is set to true.
fn env_tls() -> bool {
    env("LEVERS9_CONTROLPLANE_TLS").is_some_and(|v| v == "true" || v == "1")
}

/// `LEVERS9_CONTROLPLANE_CA`, the CA file to trust.
fn env_ca() -> Option<PathBuf> {
    env("LEVERS9_CONTROLPLANE_CA").map(PathBuf::from)
}

/// `LEVERS9_CONTROLPLANE_HOST`/`_PORT`/`_TLS`/`_CA` and `LEVERS9_TOKEN` over a context.
fn with_env_overrides(mut target: Target) -> Result<Target> {
    if let Some(host) = env("LEVERS9_CONTROLPLANE_HOST") {
        target.host = host;
    }
    if let Some(port) = env("LEVERS9_CONTROLPLANE_PORT") {
        target.port = port
            .parse()
            .with_context(|| format!("LEVERS9_CONTROLPLANE_PORT={port:?} is not a port number"))?;
    }
    if env_tls() {
        target.tls = true;
    }
    if let Some(ca) = env_ca() {
        target.ca_file = Some(ca);
    }
    if let Some(token) = env("LEVERS9_TOKEN") {
        target.token = token;
    }
    Ok(target)
}

fn target_of(context: &Context) -> Target {
    Target {
        host: context.host.clone(),
        port: context.port,
        tls: context.tls,
        ca_file: context.ca_file.clone(),
        token: context.token.clone(),
    }
}

/// The target of a command: the named (or current) context with the
/// environment on top; on a machine without CLI config, the first run.
pub async fn resolve(context_name: Option<&str>) -> Result<Target> {
    let file = CliConfig::load()?;
    let Some(file) = file else {
        if env("LEVERS9_TOKEN").is_some() {
            let default = Target {
                host: "localhost".into(),
                port: DEFAULT_PORT,
                tls: false,
                ca_file: None,
                token: String::new(),
            };
            return with_env_overrides(default);
        }
        let context = ask_and_save(FIRST_CONTEXT, None).await?;
        return with_env_overrides(target_of(&context));
    };
    let name = context_name.unwrap_or(&file.current);
    if name.is_empty() {
        bail!("no current CLI context: pick one with levers9 config select NAME (see levers9 config list)");
    }
    with_env_overrides(target_of(file.get(name)?))
}

/// Where a new context points (`levers9 config create` flags).
pub struct Address {
    /// Host name or address.
    pub host: String,
    /// gRPC port.
    pub port: u16,
    /// TLS asked for (`LEVERS9_CONTROLPLANE_TLS` asks too).
    pub tls: bool,
    /// The CA file to trust (`LEVERS9_CONTROLPLANE_CA` when not given).
    pub ca_file: Option<PathBuf>,
}

/// Asks for what is not given (address, then token), checks the token with
/// the controlplane (or bootstraps with an empty one), and saves the context
/// as `name`, making it current.
pub async fn ask_and_save(name: &str, given: Option<Address>) -> Result<Context> {
    let mut prompter = Prompter::new();
    let (host, port, tls, ca_file) = match given {
        Some(a) => (
            a.host,
            a.port,
            a.tls || env_tls(),
            a.ca_file.or_else(env_ca),
        ),
        None => match env("LEVERS9_CONTROLPLANE_HOST") {
            Some(_) => {
                let base = Target {
                    host: "localhost".into(),
                    port: DEFAULT_PORT,
                    tls: false,
                    ca_file: None,
                    token: String::new(),
                };
                let t = with_env_overrides(base)?;
                (t.host, t.port, t.tls, t.ca_file)
            }
            None => {
                let answer = prompter.ask(&format!(
                    "Controlplane address [localhost:{DEFAULT_PORT}]: "
                ))?;
                let (host, port) = if answer.trim().is_empty() {
                    ("localhost".to_owned(), DEFAULT_PORT)
                } else {
                    parse_address(&answer)?
                };
                (host, port, env_tls(), env_ca())
            }
        },
    };
    let token = match env("LEVERS9_TOKEN") {
        Some(token) => token,
        None => prompter
            .ask(
                "Token (leave empty to get the first admin token with LEVERS9_BOOTSTRAP_SECRET): ",
            )?
            .trim()
            .to_owned(),
    };
    let mut target = Target {
        host,
        port,
        tls,
        ca_file,
        token,
    };
    let workspace = if target.token.is_empty() {
        let Some(secret) = env("LEVERS9_BOOTSTRAP_SECRET") else {
            bail!(
                "no token given and LEVERS9_BOOTSTRAP_SECRET is not set: paste a token from \
                 levers9 token create, or set LEVERS9_BOOTSTRAP_SECRET to the controlplane's \
                 bootstrap secret to get the first admin token of a new install"
            );
        };
        let answer = Client::new(&target)?
            .bootstrap(&secret)
            .await
            .with_context(|| format!("bootstrap at {} failed", target.address()))?;
        target.token = answer.new_token;
        answer.workspace_name
    } else {
        let answer = Client::new(&target)?
            .auth()
            .authorize(levers9_api::v1::AuthorizeRequest {})
            .await
            .with_context(|| format!("the token was refused by {}", target.address()))?;
        answer.into_inner().workspace_name
    };
    let context = Context {
        host: target.host,
        port: target.port,
        tls: target.tls,
        ca_file: target.ca_file,
        token: target.token,
    };
    let mut file = CliConfig::load()?.unwrap_or_default();
    file.contexts.insert(name.to_owned(), context.clone());
    file.current = name.to_owned();
    let path = file.save()?;
    eprintln!(
        "Saved context {name:?} (workspace {workspace}) to {}",
        path.display()
    );
    Ok(context)
}

/// Reads answers from stdin: a terminal shows the question; without one,
/// answers may be piped in, and running out of them is an error rather than
/// a wait.
struct Prompter {
    interactive: bool,
}

impl Prompter {
    fn new() -> Self {
        Self {
            interactive: std::io::stdin().is_terminal(),
        }
    }

    fn ask(&mut self, question: &str) -> Result<String> {
        if self.interactive {
            eprint!("{question}");
            std::io::stderr().flush()?;
        }
        let mut line = String::new();
        let read = std::io::stdin().lock().read_line(&mut line)?;
        if read == 0 {
            bail!(
                "levers9 has no CLI config yet and no terminal to ask for one: run \
                 `levers9 config create NAME --host HOST --port PORT` in a terminal, or set \
                 LEVERS9_CONTROLPLANE_HOST and LEVERS9_TOKEN (or LEVERS9_BOOTSTRAP_SECRET with \
                 the token left empty on stdin)"
            );
        }
        Ok(line.trim_end_matches(['\r', '\n']).to_owned())
    }
}

//! `levers9 container exec`: a command in a running container, its output
//! copied to ours as it comes, and our exit code its. With a terminal
//! (`-t`) the command runs on one in the container: with `-i` and ours a
//! terminal, ours is raw and every key goes there, and our window size
//! follows it.

use std::io::{IsTerminal, Read, Write};

use anyhow::{bail, Result};
use futures::StreamExt;
use levers9_api::v1::{exec_event, exec_request, ExecRequest, ExecStartRequest};
use tokio::sync::mpsc;

use super::tty::{self, RawMode, Resizes, TerminatingSignals};
use crate::client::Client;
use crate::output::ExitWith;

/// Stdin is read in chunks of this size; this many wait to be sent at most.
const STDIN_CHUNK_BYTES: usize = 64 << 10;
const STDIN_QUEUE: usize = 16;

/// A command to run in a container.
pub(crate) struct Exec {
    pub(crate) container_id: String,
    pub(crate) command: Vec<String>,
    pub(crate) env: Vec<(String, String)>,
    pub(crate) workdir: Option<String>,
    /// Our stdin is its stdin; otherwise it reads EOF at once (or, on a
    /// terminal, nothing).
    pub(crate) interactive: bool,
    /// On a terminal in the container.
    pub(crate) tty: bool,
}

/// Why `-i -t` cannot be: our stdin is not a terminal.
pub(crate) const NOT_A_TERMINAL: &str = "stdin is not a terminal: a terminal (-t) needs one; \
     to pass piped input use levers9 container exec -i ID -- COMMAND (without -t)";

/// Runs `exec`; returns as the command exits (an [`ExitWith`] error for a
/// code other than 0), or with 128+N when signal N ends us first.
pub(crate) async fn exec(client: &Client, exec: Exec) -> Result<()> {
    let raw_wanted = exec.tty && exec.interactive;
    if raw_wanted && !std::io::stdin().is_terminal() {
        bail!(NOT_A_TERMINAL);
    }
    let mut env = exec.env;
    if exec.tty && !env.iter().any(|(name, _)| name == "TERM") {
        env.push(("TERM".into(), tty::term()));
    }
    let (tx, rx) = mpsc::channel(STDIN_QUEUE);
    let start = ExecStartRequest {
        container_id: exec.container_id,
        args: exec.command,
        env: env.into_iter().collect(),
        working_dir: exec.workdir.unwrap_or_default(),
        tty: exec.tty,
        terminal_size: if exec.tty { tty::window_size() } else { None },
    };
    // The channel is new and has room.
    let _ = tx
        .send(ExecRequest {
            kind: Some(exec_request::Kind::Start(start)),
        })
        .await;
    let mut signals = TerminatingSignals::watch()?;
    if exec.tty && tty::window_size().is_some() {
        tokio::spawn(forward_resizes(Resizes::watch()?, tx.clone()));
    }
    if exec.interactive {
        std::thread::spawn(move || copy_stdin(tx));
    } else {
        let _ = tx
            .send(ExecRequest {
                kind: Some(exec_request::Kind::StdinClose(true)),
            })
            .await;
        // Held open until the exec ends: a closed request stream is also
        // read as the end of stdin, which is what it says already.
        tokio::spawn(async move { tx.closed().await });
    }
    let events = client
        .containers()
        .exec_container(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|request| (request, rx))
        }))
        .await?
        .into_inner();
    // Raw only once the exec is accepted: a refusal prints as usual. From
    // here every return, error or caught signal drops it, restoring ours.
    let _raw = if raw_wanted {
        Some(RawMode::enter()?)
    } else {
        None
    };
    tokio::select! {
        ended = relay(events) => ended,
        number = signals.next() => Err(ExitWith(128 + number as u8).into()),
    }
}

/// Copies the command's output to ours until its exit code.
async fn relay(mut events: tonic::Streaming<levers9_api::v1::ExecEvent>) -> Result<()> {
    while let Some(event) = events.next().await {
        match event?.kind {
            Some(exec_event::Kind::Stdout(data)) => {
                let mut out = std::io::stdout();
                out.write_all(&data)?;
                out.flush()?;
            }
            Some(exec_event::Kind::Stderr(data)) => std::io::stderr().write_all(&data)?,
            Some(exec_event::Kind::ExitCode(0)) => return Ok(()),
            Some(exec_event::Kind::ExitCode(code)) => {
                return Err(ExitWith(u8::try_from(code).unwrap_or(1)).into())
            }
            None => {}
        }
    }
    bail!("the exec ended without an exit code: see levers9 container get")
}

/// Sends our terminal's new size each time it changes.
async fn forward_resizes(mut resizes: Resizes, tx: mpsc::Sender<ExecRequest>) {
    while let Some(size) = resizes.next().await {
        let resize = ExecRequest {
            kind: Some(exec_request::Kind::Resize(size)),
        };
        if tx.send(resize).await.is_err() {
            return;
        }
    }
}

/// Sends our stdin, then its end; blocks on the queue while it is full.
fn copy_stdin(tx: mpsc::Sender<ExecRequest>) {
    let mut stdin = std::io::stdin().lock();
    let mut buf = vec![0u8; STDIN_CHUNK_BYTES];
    loop {
        let kind = match stdin.read(&mut buf) {
            Ok(0) | Err(_) => exec_request::Kind::StdinClose(true),
            Ok(n) => exec_request::Kind::Stdin(buf[..n].to_vec()),
        };
        let last = matches!(kind, exec_request::Kind::StdinClose(_));
        if tx.blocking_send(ExecRequest { kind: Some(kind) }).is_err() || last {
            return;
        }
    }
}

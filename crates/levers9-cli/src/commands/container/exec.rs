//! `levers9 container exec`: a command in a running container, its output
//! copied to ours as it comes, and our exit code its.

use std::io::{Read, Write};

use anyhow::Result;
use futures::StreamExt;
use levers9_api::v1::{exec_event, exec_request, ExecRequest, ExecStartRequest};
use tokio::sync::mpsc;

use crate::client::Client;
use crate::output::ExitWith;

/// Stdin is read in chunks of this size; this many wait to be sent at most.
const STDIN_CHUNK_BYTES: usize = 64 << 10;
const STDIN_QUEUE: usize = 16;

/// Runs `command` in the container `id`; with `interactive`, our stdin is
/// its stdin, otherwise it reads EOF at once.
pub(super) async fn exec(
    client: &Client,
    id: String,
    command: Vec<String>,
    env: Vec<(String, String)>,
    workdir: Option<String>,
    interactive: bool,
) -> Result<()> {
    let (tx, rx) = mpsc::channel(STDIN_QUEUE);
    let start = ExecStartRequest {
        container_id: id,
        args: command,
        env: env.into_iter().collect(),
        working_dir: workdir.unwrap_or_default(),
    };
    // The channel is new and has room.
    let _ = tx
        .send(ExecRequest {
            kind: Some(exec_request::Kind::Start(start)),
        })
        .await;
    if interactive {
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
    let mut events = client
        .containers()
        .exec_container(futures::stream::unfold(rx, |mut rx| async move {
            rx.recv().await.map(|request| (request, rx))
        }))
        .await?
        .into_inner();
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
    anyhow::bail!("the exec ended without an exit code: see levers9 container get")
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

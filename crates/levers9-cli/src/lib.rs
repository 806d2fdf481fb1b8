//! The code of the two levers9 binaries: `levers9` (the controlplane
//! process and every user command, src/main.rs) and `levers9-worker` (the
//! worker process alone, which the worker image ships,
//! src/bin/levers9-worker.rs). A library only so that both link it: each
//! binary keeps only the code its `main` reaches.
// The doc comments of the commands and flags are clap's `--help` text,
// written for a terminal: `[args]` there is no link, nor a URL a hyperlink.
#![allow(rustdoc::broken_intra_doc_links, rustdoc::bare_urls)]

mod client;
pub mod commands;
mod context;
mod first_run;
mod output;

use std::future::Future;
use std::io::IsTerminal;
use std::process::ExitCode;

/// Runs a parsed command to its exit code: on a tokio runtime, logging at
/// info for a process (`is_process`), at warn for a user command.
pub fn run_to_exit<F>(is_process: bool, command: F) -> ExitCode
where
    F: Future<Output = anyhow::Result<()>> + Send + 'static,
{
    init_logging(is_process);
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("error: cannot start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    let outcome = runtime.block_on(async move {
        if !is_process {
            return command.await;
        }
        // A process's main loops (the worker's session with the
        // controlplane, ...) run on a runtime thread, not on this one, which
        // only blocks on them: the tasks they wake for every call (streams,
        // connections) then run beside them, and a call's hand-offs do not
        // each cross to another thread. A user command stays here: it may
        // block on the terminal.
        match tokio::spawn(command).await {
            Ok(outcome) => outcome,
            Err(joined) => std::panic::resume_unwind(joined.into_panic()),
        }
    });
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => match error.downcast_ref::<output::ExitWith>() {
            Some(output::ExitWith(code)) => ExitCode::from(*code),
            None => {
                eprintln!("error: {}", output::describe(&error));
                ExitCode::FAILURE
            }
        },
    }
}

/// Processes log at info, user commands only at warn so their output stays
/// readable. `LEVERS9_LOG` overrides the filter, `LEVERS9_LOG_FORMAT=json`
/// gives one JSON object per line.
fn init_logging(is_process: bool) {
    use tracing_subscriber::EnvFilter;
    let default = if is_process { "info" } else { "warn" };
    let filter = EnvFilter::try_from_env("LEVERS9_LOG").unwrap_or_else(|_| EnvFilter::new(default));
    let builder = tracing_subscriber::fmt()
        .with_env_filter(filter)
        // Colour codes only for a person at a terminal, never in log files.
        .with_ansi(std::io::stderr().is_terminal())
        .with_writer(std::io::stderr);
    if std::env::var("LEVERS9_LOG_FORMAT").is_ok_and(|f| f == "json") {
        builder.json().init();
    } else {
        builder.init();
    }
}

//! `levers9-worker`: the worker process alone, as `levers9 worker` runs it
//! (the same flags and environment), and what the worker image ships.
//! Linked without the controlplane and the user commands, it is half the
//! code of `levers9`, so a worker keeps fewer of its binary's pages
//! resident (docs/benchmarks.md, "A worker-only binary").

use std::process::ExitCode;

use clap::Parser;
use levers9_cli::commands::worker::{self, RunArgs};

/// Runs a levers9 worker: it joins the controlplane's pool and runs each
/// task in its own container (runc or gVisor). The same process as
/// `levers9 worker`, without the rest of the levers9 command; the token
/// comes from LEVERS9_TOKEN (a worker token).
#[derive(Debug, Parser)]
#[command(name = "levers9-worker", version)]
struct Args {
    #[command(flatten)]
    run: RunArgs,
}

fn main() -> ExitCode {
    let args = Args::parse();
    levers9_cli::run_to_exit(true, worker::run_process(args.run))
}

//! `levers9`: the controlplane process and every user command, in one binary.

use std::process::ExitCode;

use clap::Parser;
use levers9_cli::commands::{self, Cli};

fn main() -> ExitCode {
    let cli = Cli::parse();
    let is_process = cli.command.is_process();
    levers9_cli::run_to_exit(is_process, commands::run(cli))
}

//! `levers9 run path/file.py::fn [args]`: one call of a function, from the
//! shell. The Python SDK does the work (it packs the code and calls the
//! function); this command finds Python and hands over.

use std::os::unix::process::CommandExt;
use std::process::Command;

use anyhow::{bail, Result};
use clap::Args;

/// Arguments of `levers9 run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// The function: path/to/file.py::name.
    target: String,
    /// Its arguments: Python literals (1, 'text', [1, 2]) or plain text;
    /// key=value passes a keyword argument.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true)]
    args: Vec<String>,
    /// The Python that has the levers9 SDK installed (pip install ./sdk/python).
    #[arg(long, env = "LEVERS9_PYTHON", default_value = "python3")]
    python: String,
}

/// Replaces this process with `python -m levers9 run …` (see [`exec_sdk`]).
pub async fn run(args: RunArgs, context: Option<&str>) -> Result<()> {
    if !args.target.contains("::") {
        bail!(
            "{:?} names no function: write path/to/file.py::function_name",
            args.target
        );
    }
    let mut sdk_args = vec!["run".to_owned(), args.target];
    sdk_args.extend(args.args);
    exec_sdk(&args.python, &sdk_args, context).await
}

/// Replaces this process with `python -m levers9 <sdk_args>`, connected where
/// this CLI would connect (the context, with the environment on top;
/// the token goes in the environment, never in argv); returns only if
/// that cannot start.
pub(super) async fn exec_sdk(
    python: &str,
    sdk_args: &[String],
    context: Option<&str>,
) -> Result<()> {
    let target = crate::first_run::resolve(context).await?;
    let mut command = Command::new(python);
    command.args(["-m", "levers9"]).args(sdk_args);
    target.export_to(&mut command);
    let error = command.exec();
    bail!(
        "cannot start {python} ({error}): install Python 3.9+ and the SDK (pip install ./sdk/python), \
         or point --python at the interpreter that has it"
    )
}

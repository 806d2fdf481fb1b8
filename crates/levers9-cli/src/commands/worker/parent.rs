//! A worker process the controlplane started (`provider: process`) stops
//! with it: the controlplane names itself in `LEVERS9_WORKER_PARENT_PID`,
//! and the kernel sends the worker SIGTERM (it drains) when that parent
//! dies, even by SIGKILL, so no orphan worker outlives it.

use anyhow::{bail, Context as _, Result};

/// The variable the controlplane sets on the workers it starts.
pub(crate) const PARENT_PID_ENV: &str = "LEVERS9_WORKER_PARENT_PID";

/// With [`PARENT_PID_ENV`] set, asks for SIGTERM when the parent dies.
pub(crate) fn exit_with_parent() -> Result<()> {
    let Ok(text) = std::env::var(PARENT_PID_ENV) else {
        return Ok(());
    };
    let parent: i32 = text
        .parse()
        .with_context(|| format!("{PARENT_PID_ENV} is {text:?}, not a process id"))?;
    nix::sys::prctl::set_pdeathsig(nix::sys::signal::Signal::SIGTERM)
        .context("cannot ask to stop with the controlplane")?;
    // The parent may have died before the request: then it is no more ours.
    if nix::unistd::getppid().as_raw() != parent {
        bail!("the controlplane that started this worker ({PARENT_PID_ENV}={parent}) is gone");
    }
    Ok(())
}

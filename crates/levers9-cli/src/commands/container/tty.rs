//! Our own terminal, for an exec with one (`container exec -t`, `shell`):
//! raw mode while the remote terminal does the line editing, our window
//! size and its changes, and the signals that must not leave the terminal
//! raw.
//!
//! The one place of the CLI with unsafe code: the `TIOCGWINSZ` ioctl, which
//! nix offers only as an unsafe macro.
#![allow(unsafe_code)]

use std::io::IsTerminal;
use std::os::fd::AsRawFd;

use anyhow::{Context as _, Result};
use levers9_api::v1::TerminalSize;
use nix::sys::termios::{self, SetArg, Termios};
use tokio::signal::unix::{signal, Signal, SignalKind};

nix::ioctl_read_bad!(get_window_size, nix::libc::TIOCGWINSZ, nix::pty::Winsize);

/// Our stdin in raw mode until dropped: every key goes to the remote
/// terminal as typed (^C, ^Z and ^D included) and it echoes. Dropping it
/// (on any return, an error, or a signal `terminating_signal` caught)
/// restores the mode it had.
pub(crate) struct RawMode {
    saved: Termios,
}

impl RawMode {
    /// Puts stdin, which must be a terminal, in raw mode.
    pub(crate) fn enter() -> Result<RawMode> {
        let stdin = std::io::stdin();
        let saved = termios::tcgetattr(&stdin).context("reading our terminal's mode")?;
        let mut raw = saved.clone();
        termios::cfmakeraw(&mut raw);
        termios::tcsetattr(&stdin, SetArg::TCSANOW, &raw)
            .context("putting our terminal in raw mode")?;
        Ok(RawMode { saved })
    }
}

impl Drop for RawMode {
    fn drop(&mut self) {
        let _ = termios::tcsetattr(std::io::stdin(), SetArg::TCSADRAIN, &self.saved);
    }
}

/// The size of the terminal on our stdout (or else stdin); `None` when
/// neither is one.
pub(crate) fn window_size() -> Option<TerminalSize> {
    let stdout = std::io::stdout();
    let stdin = std::io::stdin();
    let fd = if stdout.is_terminal() {
        stdout.as_raw_fd()
    } else if stdin.is_terminal() {
        stdin.as_raw_fd()
    } else {
        return None;
    };
    let mut size = nix::pty::Winsize {
        ws_row: 0,
        ws_col: 0,
        ws_xpixel: 0,
        ws_ypixel: 0,
    };
    // SAFETY: `fd` is our stdout or stdin, open for the life of the
    // process, and `size` a struct winsize for TIOCGWINSZ to fill.
    unsafe { get_window_size(fd, &mut size) }.ok()?;
    Some(TerminalSize {
        rows: u32::from(size.ws_row),
        cols: u32::from(size.ws_col),
    })
}

/// Our terminal's size each time it changes (SIGWINCH).
pub(crate) struct Resizes {
    winch: Signal,
}

impl Resizes {
    pub(crate) fn watch() -> Result<Resizes> {
        Ok(Resizes {
            winch: signal(SignalKind::window_change()).context("cannot watch SIGWINCH")?,
        })
    }

    /// The new size after the next change.
    pub(crate) async fn next(&mut self) -> Option<TerminalSize> {
        loop {
            self.winch.recv().await?;
            if let Some(size) = window_size() {
                return Some(size);
            }
        }
    }
}

/// The signals that end us while our terminal is raw or a container of
/// ours runs: SIGINT (from `kill`: a typed ^C is a key in raw mode),
/// SIGTERM, SIGHUP (the terminal went away) and SIGQUIT.
pub(crate) struct TerminatingSignals {
    watched: Vec<(i32, Signal)>,
}

impl TerminatingSignals {
    pub(crate) fn watch() -> Result<TerminatingSignals> {
        use nix::sys::signal::Signal::{SIGHUP, SIGINT, SIGQUIT, SIGTERM};
        let kinds = [
            (SIGINT as i32, SignalKind::interrupt()),
            (SIGTERM as i32, SignalKind::terminate()),
            (SIGHUP as i32, SignalKind::hangup()),
            (SIGQUIT as i32, SignalKind::quit()),
        ];
        let watched = kinds
            .into_iter()
            .map(|(number, kind)| {
                signal(kind)
                    .map(|s| (number, s))
                    .with_context(|| format!("cannot watch signal {number}"))
            })
            .collect::<Result<_>>()?;
        Ok(TerminatingSignals { watched })
    }

    /// The number of the first of them to arrive.
    pub(crate) async fn next(&mut self) -> i32 {
        let arrivals = self.watched.iter_mut().map(|(number, signal)| {
            let number = *number;
            Box::pin(async move {
                signal.recv().await;
                number
            })
        });
        futures::future::select_all(arrivals).await.0
    }
}

/// `TERM` for the remote terminal: ours, or `xterm` when we have none.
pub(crate) fn term() -> String {
    std::env::var("TERM")
        .ok()
        .filter(|t| !t.is_empty() && t != "dumb")
        .unwrap_or_else(|| "xterm".to_owned())
}

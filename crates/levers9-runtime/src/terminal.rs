//! A pseudo-terminal on the host for an exec with a terminal (`tty`).
//!
//! The runtime's `exec` gets the slave as its stdin, stdout and stderr, in
//! a session of its own with the slave as its controlling terminal; we keep
//! the master. runc (`exec --tty`) then makes a second terminal inside the
//! container, sets ours raw and copies between the two; runsc hands ours to
//! the sandbox as the command's terminal and forwards the signals it gets
//! (the ^C the line discipline turns into SIGINT among them) to the
//! sandbox's foreground process. Either way the command is a session leader
//! with a terminal as its controlling terminal, so a shell has job control.
//!
//! The only unsafe code of this crate: two `ioctl`s nix offers only as
//! unsafe macros, the `pre_exec` that makes the runtime's process a
//! session leader, and tokio's registration of the master.
#![allow(unsafe_code)]

use std::io;
use std::os::fd::{AsRawFd, OwnedFd};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{ready, Context, Poll};

use nix::errno::Errno;
use nix::fcntl::{fcntl, FcntlArg, FdFlag, OFlag};
use nix::pty::{openpty, OpenptyResult, Winsize};
use tokio::io::unix::AsyncFd;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::process::Command;

use crate::error::RuntimeError;

nix::ioctl_write_ptr_bad!(set_window_size, nix::libc::TIOCSWINSZ, Winsize);
nix::ioctl_write_int_bad!(set_controlling_terminal, nix::libc::TIOCSCTTY);

/// A terminal's size in characters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WindowSize {
    /// Lines.
    pub rows: u16,
    /// Columns.
    pub cols: u16,
}

impl WindowSize {
    /// What a terminal of unknown size gets: 24 by 80.
    pub const DEFAULT: WindowSize = WindowSize { rows: 24, cols: 80 };

    /// `rows` by `cols`, zeros (unknown) replaced by the default's.
    pub fn new(rows: u32, cols: u32) -> Self {
        let fit = |n: u32, default: u16| match u16::try_from(n) {
            Ok(0) => default,
            Ok(n) => n,
            Err(_) => u16::MAX,
        };
        WindowSize {
            rows: fit(rows, Self::DEFAULT.rows),
            cols: fit(cols, Self::DEFAULT.cols),
        }
    }

    fn winsize(self) -> Winsize {
        Winsize {
            ws_row: self.rows,
            ws_col: self.cols,
            ws_xpixel: 0,
            ws_ypixel: 0,
        }
    }
}

/// The master side of an exec's terminal: read it for the command's
/// output (stdout and stderr in one), write it for its input. Clones share
/// the one terminal.
#[derive(Debug, Clone)]
pub struct Terminal {
    master: Arc<AsyncFd<OwnedFd>>,
}

/// A fresh terminal and its slave, for the runtime's process.
pub(crate) struct Pty {
    pub(crate) terminal: Terminal,
    pub(crate) slave: OwnedFd,
}

/// Opens a terminal of `size`; neither side is inherited by children
/// unless given as their stdio.
pub(crate) fn open(size: WindowSize) -> Result<Pty, RuntimeError> {
    let io = |what: &str, e: Errno| RuntimeError::io(what, io::Error::from(e));
    let OpenptyResult { master, slave } =
        openpty(Some(&size.winsize()), None).map_err(|e| io("opening a terminal", e))?;
    for fd in [&master, &slave] {
        fcntl(fd, FcntlArg::F_SETFD(FdFlag::FD_CLOEXEC))
            .map_err(|e| io("setting close-on-exec on a terminal", e))?;
    }
    fcntl(
        &master,
        FcntlArg::F_SETFL(OFlag::O_NONBLOCK | OFlag::O_RDWR),
    )
    .map_err(|e| io("making a terminal non-blocking", e))?;
    // SAFETY: the AsyncFd owns the master, which nothing else closes or
    // replaces while it is registered.
    let master = unsafe { AsyncFd::register(master) }
        .map_err(|e| RuntimeError::io("registering a terminal with tokio", e.into()))?;
    Ok(Pty {
        terminal: Terminal {
            master: Arc::new(master),
        },
        slave,
    })
}

/// Makes `cmd`'s process a session leader whose controlling terminal is
/// its stdin (which must be a terminal's slave): the runtime then gets the
/// SIGWINCH of a resize and, on runsc, the SIGINT of a ^C.
pub(crate) fn lead_session(cmd: &mut Command) {
    // SAFETY: between fork and exec only async-signal-safe calls are made:
    // setsid(2) and ioctl(2), without allocating.
    unsafe {
        cmd.pre_exec(|| {
            nix::unistd::setsid()?;
            set_controlling_terminal(0, 0)?;
            Ok(())
        });
    }
}

impl Terminal {
    /// Gives the terminal a new size; the process in its foreground gets a
    /// SIGWINCH.
    pub fn resize(&self, size: WindowSize) -> io::Result<()> {
        let winsize = size.winsize();
        // SAFETY: the fd is open for the life of `self` and `winsize` a
        // valid struct winsize for TIOCSWINSZ to read.
        unsafe { set_window_size(self.master.as_raw_fd(), &winsize) }?;
        Ok(())
    }
}

impl AsyncRead for Terminal {
    /// Reads what the command wrote; the end (0 bytes) once nothing holds
    /// the slave any more (Linux answers that with EIO).
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            let mut guard = ready!(self.master.poll_read_ready(cx))?;
            let unfilled = buf.initialize_unfilled();
            match guard.try_io(|fd| nix::unistd::read(fd.get_ref(), unfilled).map_err(Into::into)) {
                Ok(Ok(n)) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(()));
                }
                Ok(Err(e)) if e.raw_os_error() == Some(Errno::EIO as i32) => {
                    return Poll::Ready(Ok(()))
                }
                Ok(Err(e)) => return Poll::Ready(Err(e)),
                Err(_would_block) => continue,
            }
        }
    }
}

impl AsyncWrite for Terminal {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<io::Result<usize>> {
        loop {
            let mut guard = ready!(self.master.poll_write_ready(cx))?;
            match guard.try_io(|fd| nix::unistd::write(fd.get_ref(), data).map_err(Into::into)) {
                Ok(result) => return Poll::Ready(result),
                Err(_would_block) => continue,
            }
        }
    }

    fn poll_flush(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    nix::ioctl_read_bad!(get_window_size, nix::libc::TIOCGWINSZ, Winsize);

    #[test]
    fn unknown_sizes_are_the_default_and_huge_ones_saturate() {
        assert_eq!(WindowSize::new(0, 0), WindowSize::DEFAULT);
        assert_eq!(
            WindowSize::new(50, 1 << 20),
            WindowSize {
                rows: 50,
                cols: u16::MAX
            }
        );
    }

    #[tokio::test]
    async fn the_master_carries_bytes_both_ways_and_sets_the_size() {
        let Pty {
            mut terminal,
            slave,
        } = open(WindowSize::new(10, 20)).expect("open");
        let mut slave = std::fs::File::from(slave);
        terminal.resize(WindowSize::new(33, 77)).expect("resize");
        let mut size = WindowSize::DEFAULT.winsize();
        // SAFETY: the slave is open and `size` a struct winsize to fill.
        unsafe { get_window_size(slave.as_raw_fd(), &mut size) }.expect("TIOCGWINSZ");
        assert_eq!((size.ws_row, size.ws_col), (33, 77));
        terminal.write_all(b"ping\n").await.expect("write");
        let mut line = [0u8; 5];
        std::io::Read::read_exact(&mut slave, &mut line).expect("read slave");
        assert_eq!(&line, b"ping\n");
        std::io::Write::write_all(&mut slave, b"pong").expect("write slave");
        drop(slave);
        let mut out = Vec::new();
        terminal
            .read_to_end(&mut out)
            .await
            .expect("read to the end");
        // The slave echoes what it was typed, then what it wrote.
        let out = String::from_utf8_lossy(&out);
        assert!(out.ends_with("pong"), "{out:?}");
    }
}

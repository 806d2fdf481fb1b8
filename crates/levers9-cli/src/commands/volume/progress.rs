//! A one-line progress bar on stderr for file copies: redrawn at most five
//! times a second on a terminal, a single summary line otherwise (so logs
//! and tests get no carriage-return noise).

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

const REDRAW: Duration = Duration::from_millis(200);
const WIDTH: u64 = 30;
const MIB: f64 = 1024.0 * 1024.0;

/// Progress of one copy of `total` bytes.
pub struct Progress {
    label: String,
    total: u64,
    done: u64,
    /// Where this run started (a resumed copy starts past 0).
    resumed_at: u64,
    began: Instant,
    drawn: Option<Instant>,
    terminal: bool,
}

impl Progress {
    /// Starts at `done` bytes of `total`.
    pub fn new(label: String, done: u64, total: u64) -> Progress {
        let terminal = std::io::stderr().is_terminal();
        if done > 0 {
            eprintln!("{label}: resuming at {:.1} MiB", done as f64 / MIB);
        }
        Progress {
            label,
            total,
            done,
            resumed_at: done,
            began: Instant::now(),
            drawn: None,
            terminal,
        }
    }

    /// Sets how many bytes are done.
    pub fn set(&mut self, done: u64) {
        self.done = done;
        if self.terminal && self.drawn.is_none_or(|at| at.elapsed() >= REDRAW) {
            self.draw("\r");
            self.drawn = Some(Instant::now());
        }
    }

    /// Draws the final state and ends the line.
    pub fn finish(&mut self) {
        self.draw(if self.terminal { "\r" } else { "" });
        eprintln!();
    }

    fn draw(&self, prefix: &str) {
        let filled = (self.done * WIDTH).checked_div(self.total).unwrap_or(WIDTH);
        let percent = (self.done * 100).checked_div(self.total).unwrap_or(100);
        let seconds = self.began.elapsed().as_secs_f64().max(0.001);
        let rate = (self.done - self.resumed_at) as f64 / MIB / seconds;
        let mut stderr = std::io::stderr();
        let _ = write!(
            stderr,
            "{prefix}{} [{}{}] {percent:>3}% {:.1}/{:.1} MiB {rate:.1} MiB/s",
            self.label,
            "#".repeat(filled as usize),
            " ".repeat((WIDTH - filled) as usize),
            self.done as f64 / MIB,
            self.total as f64 / MIB,
        );
        let _ = stderr.flush();
    }
}

//! Captures what the code under test logs on this thread, for tests that
//! check a log line (a current-thread tokio runtime keeps spawned tasks on
//! it too).

use std::io::Write;
use std::sync::Arc;

use levers9_sync::Lock;
use tracing::subscriber::DefaultGuard;

/// Everything logged while it lives.
pub struct LogCapture {
    buffer: Arc<Lock<Vec<u8>>>,
    _guard: DefaultGuard,
}

#[derive(Clone)]
struct Sink(Arc<Lock<Vec<u8>>>);

impl Write for Sink {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().extend_from_slice(data);
        Ok(data.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl LogCapture {
    /// Starts capturing.
    pub fn start() -> LogCapture {
        let buffer = Arc::new(Lock::new(Vec::new()));
        let sink = Sink(buffer.clone());
        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish();
        LogCapture {
            buffer,
            _guard: tracing::subscriber::set_default(subscriber),
        }
    }

    /// What was logged so far.
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.buffer.lock()).into_owned()
    }

    /// The lines that contain `needle`.
    pub fn lines_with(&self, needle: &str) -> Vec<String> {
        self.text()
            .lines()
            .filter(|l| l.contains(needle))
            .map(str::to_owned)
            .collect()
    }
}

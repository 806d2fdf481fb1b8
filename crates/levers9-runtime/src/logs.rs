//! Capture of a container's stdout and stderr.
//!
//! The runtime's stdout/stderr are pipes (not files: runsc writes to a file
//! opened without `O_APPEND` at offset 0, clobbering it). Two tasks read them
//! and cut the bytes into chunks: one per line, or [`MAX_CHUNK`] bytes of a
//! longer line, or the unterminated rest at the end. Each chunk is
//! - kept in an in-memory ring of at most `log_buffer_bytes`
//!   ([`crate::RuntimeConfig`]); the oldest chunks are dropped first and
//!   counted in [`LogHandle::dropped_bytes`]. Nothing is written to disk
//!   here: whoever wants to keep logs subscribes and persists them;
//! - sent live to subscribers through a `tokio::sync::broadcast` channel of
//!   [`CHANNEL_CAPACITY`] chunks. A subscriber that falls further behind gets
//!   `RecvError::Lagged` and misses chunks (they are still in the ring while
//!   it holds them). The channel closes after both streams ended.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::SystemTime;

use levers9_sync::Lock;
use tokio::io::{AsyncBufReadExt, AsyncRead, BufReader};
use tokio::sync::broadcast;

/// Longest chunk: longer lines are split.
pub const MAX_CHUNK: usize = 16 * 1024;
/// Chunks a live subscriber may fall behind before it lags.
pub const CHANNEL_CAPACITY: usize = 1024;

/// Which output a chunk came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Stream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

/// A line (with its `\n`), or a piece of a long line, of one stream.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogChunk {
    /// Where it came from.
    pub stream: Stream,
    /// When we read it.
    pub at: SystemTime,
    /// The bytes, as written by the process.
    pub data: Vec<u8>,
}

#[derive(Debug)]
struct Inner {
    ring: VecDeque<LogChunk>,
    bytes: usize,
    capacity: usize,
    dropped: u64,
    /// `None` once both streams ended: the channel closes.
    tx: Option<broadcast::Sender<LogChunk>>,
    open_streams: u8,
}

/// The output of one container: what is retained, and a live feed.
/// Cheap to clone.
#[derive(Debug, Clone)]
pub struct LogHandle {
    inner: Arc<Lock<Inner>>,
}

impl LogHandle {
    pub(crate) fn new(capacity: usize) -> Self {
        let (tx, _) = broadcast::channel(CHANNEL_CAPACITY);
        LogHandle {
            inner: Arc::new(Lock::new(Inner {
                ring: VecDeque::new(),
                bytes: 0,
                capacity,
                dropped: 0,
                tx: Some(tx),
                open_streams: 2,
            })),
        }
    }

    /// The retained chunks, oldest first.
    pub fn snapshot(&self) -> Vec<LogChunk> {
        self.inner.lock().ring.iter().cloned().collect()
    }

    /// The retained chunks and a receiver of every later one, with no gap
    /// and no duplicate between them (for `logs -f`). After the container's
    /// output ended the receiver reports `Closed` at once.
    pub fn subscribe(&self) -> (Vec<LogChunk>, broadcast::Receiver<LogChunk>) {
        let inner = self.inner.lock();
        let history = inner.ring.iter().cloned().collect();
        let rx = match &inner.tx {
            Some(tx) => tx.subscribe(),
            None => broadcast::channel(1).1,
        };
        (history, rx)
    }

    /// The retained output of one stream as text (invalid UTF-8 replaced).
    pub fn text(&self, stream: Stream) -> String {
        let inner = self.inner.lock();
        let bytes: Vec<u8> = inner
            .ring
            .iter()
            .filter(|c| c.stream == stream)
            .flat_map(|c| c.data.iter().copied())
            .collect();
        String::from_utf8_lossy(&bytes).into_owned()
    }

    /// Bytes dropped from the ring because it was full.
    pub fn dropped_bytes(&self) -> u64 {
        self.inner.lock().dropped
    }

    /// Whether both streams have ended.
    pub fn is_finished(&self) -> bool {
        self.inner.lock().open_streams == 0
    }

    pub(crate) fn push(&self, chunk: LogChunk) {
        let mut inner = self.inner.lock();
        // Sent under the lock so that `subscribe` sees each chunk either in
        // the history or on the channel, never both or neither.
        if let Some(tx) = &inner.tx {
            // An error only means nobody listens right now.
            let _ = tx.send(chunk.clone());
        }
        inner.bytes += chunk.data.len();
        inner.ring.push_back(chunk);
        while inner.bytes > inner.capacity {
            let Some(old) = inner.ring.pop_front() else {
                break;
            };
            inner.bytes -= old.data.len();
            inner.dropped += old.data.len() as u64;
        }
    }

    fn stream_ended(&self) {
        let mut inner = self.inner.lock();
        inner.open_streams = inner.open_streams.saturating_sub(1);
        if inner.open_streams == 0 {
            inner.tx = None;
        }
    }

    /// Ends both streams at once (and again does nothing): for output that
    /// comes from no pipes (see `feed.rs`).
    pub(crate) fn end(&self) {
        let mut inner = self.inner.lock();
        inner.open_streams = 0;
        inner.tx = None;
    }

    /// Reads `reader` to its end into this handle. Read errors end the
    /// stream like EOF (after a warning): logs are best effort.
    pub(crate) async fn pump<R: AsyncRead + Unpin>(self, stream: Stream, reader: R) {
        let mut reader = BufReader::with_capacity(MAX_CHUNK, reader);
        let mut pending: Vec<u8> = Vec::new();
        loop {
            let buf = match reader.fill_buf().await {
                Ok(buf) => buf,
                Err(e) => {
                    tracing::warn!(error = %e, ?stream, "reading container output");
                    break;
                }
            };
            if buf.is_empty() {
                break;
            }
            let room = MAX_CHUNK - pending.len();
            let (take, complete) = match buf.iter().take(room).position(|&b| b == b'\n') {
                Some(i) => (i + 1, true),
                None => (buf.len().min(room), buf.len() >= room),
            };
            pending.extend_from_slice(&buf[..take]);
            reader.consume(take);
            if complete {
                self.push(LogChunk {
                    stream,
                    at: SystemTime::now(),
                    data: std::mem::take(&mut pending),
                });
            }
        }
        if !pending.is_empty() {
            self.push(LogChunk {
                stream,
                at: SystemTime::now(),
                data: pending,
            });
        }
        self.stream_ended();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn lines_are_chunked_bounded_and_streamed() {
        let logs = LogHandle::new(10);
        let (history, mut rx) = logs.subscribe();
        assert!(history.is_empty());
        let long = vec![b'x'; MAX_CHUNK + 5];
        let mut input = b"one\ntwo\n".to_vec();
        input.extend_from_slice(&long);
        logs.clone().pump(Stream::Stdout, &input[..]).await;
        logs.clone().pump(Stream::Stderr, &b"err"[..]).await;
        let mut got = Vec::new();
        while let Ok(chunk) = rx.recv().await {
            got.push(chunk.data);
        }
        assert_eq!(got.len(), 5, "one, two, two pieces of the long line, err");
        assert_eq!(got[0], b"one\n");
        assert_eq!(got[2].len(), MAX_CHUNK);
        assert_eq!(logs.text(Stream::Stderr), "err");
        assert!(
            logs.dropped_bytes() > 0,
            "ring of 10 bytes dropped the rest"
        );
        assert!(logs.is_finished());
        assert!(
            logs.subscribe().1.recv().await.is_err(),
            "closed after the end"
        );
    }
}

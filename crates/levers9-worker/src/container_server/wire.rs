//! The container server's wire format. Every frame, either way, is
//! `u32 BE header length ‖ header (UTF-8 JSON object with a "type") ‖
//! u32 BE body length ‖ body` (the body may be empty). Length-prefixed so
//! the runner needs nothing beyond Python's standard library, and the body
//! stays raw bytes (a cloudpickle) instead of being escaped into the JSON.

use levers9_api::v1::TaskResultState;
use serde::Deserialize;
use tokio::io::{AsyncRead, AsyncReadExt};

/// The largest header accepted: headers are a handful of short fields.
pub const MAX_HEADER_BYTES: u32 = 1 << 20;
/// The largest body accepted: a task's input or result, or a piece of output.
pub const MAX_BODY_BYTES: u32 = 1 << 30;

/// What the runner sends.
#[derive(Debug, Deserialize, PartialEq, Eq)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum FromRunner {
    /// Connected, and about to make a class's instance and run its
    /// `@enter` methods: from now on its Dict and Queue calls are served,
    /// but no input goes out before `Hello`. Runners of SDKs before it
    /// send none, and their calls are served from their hello.
    Attach {
        /// As in `Hello`.
        container_id: String,
        /// As in `Hello`.
        #[serde(default)]
        credential: String,
    },
    /// A spare's runner (`LEVERS9_SPARE=1`) connected and imported what
    /// every runner imports; it waits for an `assign` frame naming its
    /// function's container, then loads the function and says hello.
    Spare {
        /// As in `Hello`: the spare's own id until it is assigned.
        container_id: String,
        /// As in `Hello`.
        #[serde(default)]
        credential: String,
        /// The top-level modules it has imported: a function whose code
        /// has a module of one of these names cannot use it (its import
        /// would find the loaded one, not the code's).
        #[serde(default)]
        modules: Vec<String>,
    },
    /// Connected, and the function is loaded.
    Hello {
        /// Must be the container's own id (a runner mounted in the wrong
        /// place must not take inputs meant for another function).
        container_id: String,
        /// The container's credential (`LEVERS9_CONTAINER_SERVER_CREDENTIAL`);
        /// empty from a runner that has none.
        #[serde(default)]
        credential: String,
        /// Whether it answers a cancel (runners of SDKs before cancels
        /// came say nothing, and a cancel stops their container instead).
        #[serde(default)]
        cancels: bool,
    },
    /// The function could not be loaded; the runner exits next.
    InitError {
        /// As in `Hello`.
        #[serde(default)]
        credential: String,
        /// The exception, as Python prints its last line.
        #[serde(default)]
        message: String,
        /// The whole traceback, as `traceback.format_exc()` prints it; with the
        /// message it goes to the container's exit event, not the worker's log.
        #[serde(default)]
        traceback: String,
    },
    /// The function printed something while running a task; the body is
    /// the bytes.
    Output {
        /// The task it printed during.
        task_id: String,
        /// Which stream.
        stream: OutputStream,
    },
    /// A task ended; the body is the cloudpickled value or exception.
    Result {
        /// The task of the input it answers; a result for a task not running
        /// here (timed out, or never sent) is ignored.
        task_id: String,
        /// How it ended.
        state: ResultState,
        /// What happened, for people.
        #[serde(default)]
        message: String,
        /// The exception's traceback, for errors.
        #[serde(default)]
        traceback: String,
    },
    /// A Dict or Queue call of code in the container; the body is its
    /// byte strings (see `named.rs`).
    ObjectCall(super::named::ObjectCall),
    /// A generator yielded an item while running a task; the body is the
    /// cloudpickled item. The runner sends items only while fewer than its
    /// window are unacknowledged, so the worker keeps no queue of them.
    Item {
        /// The task that yielded it; the item is dropped if that task is not
        /// running here.
        task_id: String,
        /// From 0 within the task.
        index: u64,
    },
    /// A cancel came for a task the runner has already started: a thread
    /// cannot be interrupted, so it runs on.
    CancelRefused {
        /// The task whose cancel was refused; if it still runs, its container
        /// is stopped instead.
        task_id: String,
    },
    /// A kind this worker does not know: a newer SDK talking to an older
    /// worker. Ignored rather than refused, so the two can be upgraded
    /// apart (the SDK comes with each caller).
    #[serde(other)]
    Unknown,
}

/// Where output went.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum OutputStream {
    /// Standard output.
    Stdout,
    /// Standard error.
    Stderr,
}

impl OutputStream {
    /// The name the controlplane expects.
    pub fn as_str(self) -> &'static str {
        match self {
            OutputStream::Stdout => "stdout",
            OutputStream::Stderr => "stderr",
        }
    }
}

/// How a task the runner ran ended.
#[derive(Debug, Clone, Copy, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
pub enum ResultState {
    /// It returned.
    Complete,
    /// It raised.
    Error,
    /// It was cancelled before it started (an empty body).
    Cancelled,
}

impl ResultState {
    /// As the worker reports it to the controlplane.
    pub fn to_wire(self) -> TaskResultState {
        match self {
            ResultState::Complete => TaskResultState::Complete,
            ResultState::Error => TaskResultState::Error,
            ResultState::Cancelled => TaskResultState::Cancelled,
        }
    }
}

/// Why a frame from the runner was not accepted. The texts never include
/// the frame's content, so they can be logged.
#[derive(Debug, thiserror::Error)]
pub enum FrameError {
    /// Reading failed.
    #[error("cannot read from the runner: {0}")]
    Io(#[from] std::io::Error),
    /// The connection ended inside a frame.
    #[error("the connection ended in the middle of a frame")]
    Truncated,
    /// Header over [`MAX_HEADER_BYTES`].
    #[error("a frame header of {0} bytes, over the {MAX_HEADER_BYTES} allowed")]
    HeaderTooLarge(u32),
    /// Body over [`MAX_BODY_BYTES`].
    #[error("a frame body of {0} bytes, over the {MAX_BODY_BYTES} allowed")]
    BodyTooLarge(u32),
    /// The header is not a JSON object of a known shape.
    #[error("a frame header that is not a valid message: {0}")]
    BadHeader(String),
}

/// One frame: `header` serialised, then `body`.
pub fn encode(header: &serde_json::Value, body: &[u8]) -> Vec<u8> {
    // A Value always serialises.
    let header = serde_json::to_vec(header).unwrap_or_default();
    let mut frame = Vec::with_capacity(8 + header.len() + body.len());
    frame.extend_from_slice(&len_u32(header.len()).to_be_bytes());
    frame.extend_from_slice(&header);
    frame.extend_from_slice(&len_u32(body.len()).to_be_bytes());
    frame.extend_from_slice(body);
    frame
}

fn len_u32(len: usize) -> u32 {
    // Headers are ours and bodies come from gRPC messages the worker
    // decoded under a limit far below 4 GiB.
    u32::try_from(len).unwrap_or(u32::MAX)
}

/// The next frame, or `None` when the runner closed the connection between
/// frames.
pub async fn read_frame<R: AsyncRead + Unpin>(
    reader: &mut R,
) -> Result<Option<(FromRunner, Vec<u8>)>, FrameError> {
    let header_len = match reader.read_u32().await {
        Ok(len) => len,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return Ok(None),
        Err(e) => return Err(e.into()),
    };
    if header_len > MAX_HEADER_BYTES {
        return Err(FrameError::HeaderTooLarge(header_len));
    }
    let header = read_exact(reader, header_len).await?;
    let message: FromRunner =
        serde_json::from_slice(&header).map_err(|e| FrameError::BadHeader(e.to_string()))?;
    let body_len = match reader.read_u32().await {
        Ok(len) => len,
        Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
            return Err(FrameError::Truncated)
        }
        Err(e) => return Err(e.into()),
    };
    if body_len > MAX_BODY_BYTES {
        return Err(FrameError::BodyTooLarge(body_len));
    }
    let body = read_exact(reader, body_len).await?;
    Ok(Some((message, body)))
}

/// Reads `len` bytes, growing the buffer as they arrive rather than
/// allocating `len` up front on the peer's word.
async fn read_exact<R: AsyncRead + Unpin>(reader: &mut R, len: u32) -> Result<Vec<u8>, FrameError> {
    let mut buffer = Vec::new();
    reader.take(u64::from(len)).read_to_end(&mut buffer).await?;
    if buffer.len() != len as usize {
        return Err(FrameError::Truncated);
    }
    Ok(buffer)
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn parse(bytes: &[u8]) -> Result<Option<(FromRunner, Vec<u8>)>, FrameError> {
        read_frame(&mut &bytes[..]).await
    }

    #[tokio::test]
    async fn a_frame_round_trips() {
        let frame = encode(
            &serde_json::json!({"type": "result", "task_id": "t1", "state": "complete"}),
            b"pickle",
        );
        let (message, body) = parse(&frame).await.unwrap().unwrap();
        assert_eq!(
            message,
            FromRunner::Result {
                task_id: "t1".into(),
                state: ResultState::Complete,
                message: String::new(),
                traceback: String::new(),
            }
        );
        assert_eq!(body, b"pickle");
    }

    #[tokio::test]
    async fn an_item_frame_carries_its_index_and_body() {
        let frame = encode(
            &serde_json::json!({"type": "item", "task_id": "t1", "index": 3}),
            b"item",
        );
        let (message, body) = parse(&frame).await.unwrap().unwrap();
        assert_eq!(
            message,
            FromRunner::Item {
                task_id: "t1".into(),
                index: 3
            }
        );
        assert_eq!(body, b"item");
    }

    #[tokio::test]
    async fn an_attach_frame_carries_the_container_and_its_credential() {
        let frame = encode(
            &serde_json::json!({"type": "attach", "container_id": "c", "credential": "s"}),
            b"",
        );
        assert_eq!(
            parse(&frame).await.unwrap().unwrap().0,
            FromRunner::Attach {
                container_id: "c".into(),
                credential: "s".into(),
            }
        );
    }

    #[tokio::test]
    async fn unknown_kinds_are_tolerated_and_bad_headers_refused() {
        let frame = encode(&serde_json::json!({"type": "progress", "x": 1}), b"");
        assert_eq!(parse(&frame).await.unwrap().unwrap().0, FromRunner::Unknown);
        for header in [
            serde_json::json!({"no": "type"}),
            serde_json::json!({"type": "output", "task_id": "t", "stream": "stdlog"}),
            serde_json::json!({"type": "result", "task_id": "t", "state": "done"}),
        ] {
            let error = parse(&encode(&header, b"")).await.unwrap_err();
            assert!(matches!(error, FrameError::BadHeader(_)), "{error}");
        }
    }

    #[tokio::test]
    async fn oversized_and_truncated_frames_are_refused() {
        let error = parse(&(MAX_HEADER_BYTES + 1).to_be_bytes())
            .await
            .unwrap_err();
        assert!(matches!(error, FrameError::HeaderTooLarge(_)), "{error}");
        let mut frame = encode(
            &serde_json::json!({"type": "hello", "container_id": "c"}),
            b"",
        );
        let body_len_at = frame.len() - 4;
        frame[body_len_at..].copy_from_slice(&(MAX_BODY_BYTES + 1).to_be_bytes());
        let error = parse(&frame).await.unwrap_err();
        assert!(matches!(error, FrameError::BodyTooLarge(_)), "{error}");
        let frame = encode(
            &serde_json::json!({"type": "hello", "container_id": "c"}),
            b"abc",
        );
        let error = parse(&frame[..frame.len() - 1]).await.unwrap_err();
        assert!(matches!(error, FrameError::Truncated), "{error}");
        assert!(parse(b"").await.unwrap().is_none());
    }
}

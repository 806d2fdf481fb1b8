//! The frames a function runner sends its container server: the code in a
//! container is the user's, so every byte of the stream is untrusted.
//!
//! Beyond never panicking: the stream reads the same however the socket
//! splits it (all at once, or in pieces of the sizes the input's first
//! bytes pick), no frame claims more bytes than were sent, and every
//! object-call body that is accepted packs back to the same bytes.

#![no_main]

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};

use levers9_worker::fuzzing::{
    pack_object_body, read_frame, unpack_object_body, FrameError, FromRunner,
};
use libfuzzer_sys::fuzz_target;
use tokio::io::{AsyncRead, ReadBuf};

/// Hands out `data` in pieces whose sizes cycle through `pieces`, as a
/// socket may.
struct Pieces<'a> {
    data: &'a [u8],
    pieces: &'a [u8],
    next: usize,
}

impl AsyncRead for Pieces<'_> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        _: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let piece = match self.pieces.get(self.next % self.pieces.len().max(1)) {
            Some(&size) => usize::from(size).max(1),
            None => usize::MAX,
        };
        self.next += 1;
        let n = piece.min(buf.remaining()).min(self.data.len());
        let (now, later) = self.data.split_at(n);
        buf.put_slice(now);
        self.data = later;
        Poll::Ready(Ok(()))
    }
}

/// What a stream read to its end says: each frame's message, as `Debug`
/// text (the messages compare only that way), and body, then how it ended.
fn read_all(mut reader: Pieces<'_>) -> (Vec<(String, Vec<u8>)>, String) {
    let sent = reader.data.len();
    let mut frames = Vec::new();
    let mut claimed = 0;
    let end = loop {
        match futures::executor::block_on(read_frame(&mut reader)) {
            Ok(Some((message, body))) => {
                claimed += body.len() + 8;
                assert!(claimed <= sent, "frames longer than the stream");
                if let FromRunner::ObjectCall(_) = message {
                    if let Some(parts) = unpack_object_body(&body) {
                        assert_eq!(pack_object_body(&parts), body);
                    }
                }
                frames.push((format!("{message:?}"), body));
            }
            Ok(None) => break "closed".to_owned(),
            // The texts of errors may carry serde's positions, which are
            // the same however the stream came.
            Err(FrameError::Io(e)) => panic!("reading a slice failed: {e}"),
            Err(e) => break e.to_string(),
        }
    };
    (frames, end)
}

fuzz_target!(|data: &[u8]| {
    let (pieces, stream) = data.split_at(data.len().min(4));
    let whole = read_all(Pieces {
        data: stream,
        pieces: &[],
        next: 0,
    });
    let split = read_all(Pieces {
        data: stream,
        pieces,
        next: 0,
    });
    assert_eq!(whole, split);
    // A body alone, as the object-call forwarder reads it.
    if let Some(parts) = unpack_object_body(data) {
        assert_eq!(pack_object_body(&parts), data);
    }
});

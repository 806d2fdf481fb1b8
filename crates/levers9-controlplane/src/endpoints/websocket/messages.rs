//! A websocket connection's messages as they cross the runner's socket.
//!
//! The app's (`websocket.accept`, `websocket.send`, `websocket.close`) are
//! the task's items; the client's (and the end of the connection) are the
//! items of the connection's inbox. Each is one byte saying what it is, then
//! its data as it is:
//!
//! | byte | from | data |
//! | --- | --- | --- |
//! | `a` | app | accept: JSON `{"subprotocol": str or null, "headers": [[name, value]], "ran_ms": int}` (headers as Latin-1 strings, as for HTTP; `ran_ms`: how long the input had run) |
//! | `t` | both | a text message, UTF-8 |
//! | `b` | both | a binary message |
//! | `c` | app | close: JSON `{"code": int, "reason": str}` |
//! | `d` | gateway | the connection ended: JSON `{"code": int, "reason": str}`, the app's `websocket.disconnect` |
//!
//! So a message is never escaped or base64-encoded, and the runner reads
//! the kind from one byte.

use std::time::Duration;

use axum::http::{HeaderName, HeaderValue};
use serde::{Deserialize, Serialize};

use super::super::asgi;

/// The longest close reason a close frame holds, in bytes (RFC 6455 5.5:
/// 125 bytes of payload, 2 of them the code).
const MAX_REASON: usize = 123;

/// A message of the app's, from one of the task's items.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum FromApp {
    Accept {
        subprotocol: Option<String>,
        headers: Vec<(HeaderName, HeaderValue)>,
        /// How long the input had run when the app accepted: the worker's
        /// clock for the function's timeout started that long before.
        ran: Duration,
    },
    Text(String),
    Binary(Vec<u8>),
    Close {
        code: u16,
        reason: String,
    },
}

#[derive(Deserialize)]
struct Accept {
    subprotocol: Option<String>,
    #[serde(default)]
    headers: Vec<(String, String)>,
    #[serde(default)]
    ran_ms: u64,
}

#[derive(Serialize, Deserialize)]
struct Close {
    code: u16,
    #[serde(default)]
    reason: String,
}

impl FromApp {
    /// The message an item holds; what is wrong with it otherwise.
    pub(super) fn parse(mut payload: Vec<u8>) -> Result<Self, String> {
        let Some(&kind) = payload.first() else {
            return Err("an empty item".into());
        };
        let data = payload.split_off(1);
        match kind {
            b'a' => {
                let accept: Accept = serde_json::from_slice(&data).map_err(|e| e.to_string())?;
                let headers = accept
                    .headers
                    .into_iter()
                    .map(|(name, value)| asgi::header(&name, &value))
                    .collect::<Result<_, _>>()?;
                Ok(Self::Accept {
                    subprotocol: accept.subprotocol,
                    headers,
                    ran: Duration::from_millis(accept.ran_ms),
                })
            }
            b't' => String::from_utf8(data)
                .map(Self::Text)
                .map_err(|_| "a text message that is not UTF-8".into()),
            b'b' => Ok(Self::Binary(data)),
            b'c' => {
                let close: Close = serde_json::from_slice(&data).map_err(|e| e.to_string())?;
                Ok(Self::Close {
                    code: close.code,
                    reason: close.reason,
                })
            }
            other => Err(format!("an item of unknown kind {:?}", char::from(other))),
        }
    }
}

/// A client's text message, for the inbox.
pub(super) fn text(text: &str) -> Vec<u8> {
    tagged(b't', text.as_bytes())
}

/// A client's binary message, for the inbox.
pub(super) fn binary(data: &[u8]) -> Vec<u8> {
    tagged(b'b', data)
}

/// The end of the connection, for the inbox: the app's `websocket.disconnect`.
pub(super) fn disconnect(code: u16, reason: &str) -> Vec<u8> {
    let close = Close {
        code,
        reason: reason.to_owned(),
    };
    // A struct of a number and a string always serializes.
    tagged(b'd', &serde_json::to_vec(&close).unwrap_or_default())
}

fn tagged(kind: u8, data: &[u8]) -> Vec<u8> {
    let mut item = Vec::with_capacity(data.len() + 1);
    item.push(kind);
    item.extend_from_slice(data);
    item
}

/// `reason` cut to what a close frame holds, at a character's boundary.
pub(super) fn close_reason(reason: &str) -> String {
    if reason.len() <= MAX_REASON {
        return reason.to_owned();
    }
    let mut end = MAX_REASON - '…'.len_utf8();
    while !reason.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &reason[..end])
}

/// A code a close frame may carry (RFC 6455 7.4): the app's if it may, 1011
/// (an unexpected condition) otherwise, e.g. for 1005 or 1006, which only
/// describe a connection and are never sent.
pub(super) fn close_code(code: u16) -> u16 {
    match code {
        1000..=1003 | 1007..=1014 | 3000..=4999 => code,
        _ => 1011,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_apps_messages_are_read_from_their_first_byte() {
        let accept = br#"a{"subprotocol": "chat", "headers": [["x-v", "caf\u00e9"]], "ran_ms": 7}"#;
        assert_eq!(
            FromApp::parse(accept.to_vec()).unwrap(),
            FromApp::Accept {
                subprotocol: Some("chat".into()),
                headers: vec![(
                    HeaderName::from_static("x-v"),
                    HeaderValue::from_bytes(b"caf\xe9").unwrap()
                )],
                ran: Duration::from_millis(7),
            }
        );
        assert_eq!(
            FromApp::parse(b"thi\n".to_vec()).unwrap(),
            FromApp::Text("hi\n".into())
        );
        assert_eq!(
            FromApp::parse(b"b\x00\xff".to_vec()).unwrap(),
            FromApp::Binary(vec![0, 255])
        );
        assert_eq!(
            FromApp::parse(br#"c{"code": 4001, "reason": "bye"}"#.to_vec()).unwrap(),
            FromApp::Close {
                code: 4001,
                reason: "bye".into()
            }
        );
        for (bad, says) in [
            (&b""[..], "an empty item"),
            (b"t\xff", "not UTF-8"),
            (b"x", "unknown kind 'x'"),
        ] {
            let err = FromApp::parse(bad.to_vec()).unwrap_err();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn the_clients_messages_and_the_end_are_tagged_the_same_way() {
        assert_eq!(text("héllo"), "théllo".as_bytes());
        assert_eq!(binary(&[1, 2]), [b'b', 1, 2]);
        assert_eq!(
            disconnect(1001, "going"),
            br#"d{"code":1001,"reason":"going"}"#
        );
    }

    #[test]
    fn close_frames_carry_only_what_they_may() {
        assert_eq!(close_reason("short"), "short");
        let long = close_reason(&"é".repeat(100));
        assert!(long.len() <= MAX_REASON && long.ends_with('…'), "{long}");
        assert_eq!(
            [1000, 1005, 1006, 1009, 2999, 4001, 5000].map(close_code),
            [1000, 1011, 1011, 1009, 1011, 4001, 1011]
        );
    }
}

//! Sealing values at rest: AES-256-GCM under the configured encryption key,
//! each sealed value tagged with the id of the key that sealed it, and bound
//! to its row by associated data so a ciphertext copied elsewhere does not
//! open.
#![forbid(unsafe_code)]

mod key;
mod keyring;

pub use key::{Key, KeyError, KeyId};
pub use keyring::{Keyring, OpenError, Sealed};

//! The lower-case words people read for the API's enum values: the REST
//! JSON, the CLI and the dashboard show `CONTAINER_STATE_RUNNING` as
//! `"running"`, as they did when the wire carried text.
//!
//! A word is the value's proto name after its enum's prefix, in lower case,
//! so a value added to a proto has its word without an edit here; the
//! unspecified value's word is `""` (an attempt that still runs has no
//! outcome). The generated messages keep enum fields as `i32` (prost's
//! way: a number sent by a newer peer survives), so the REST JSON reaches
//! these through [`serialize`] and [`deserialize`], named for each enum
//! field in `build.rs`.

use serde::de::{self, Deserializer, Unexpected};
use serde::{Deserialize, Serializer};

use crate::v1;

/// A proto enum whose values are shown as words.
pub trait Words: Copy + Default + Into<i32> + TryFrom<i32> {
    /// The value's proto name (prost's `as_str_name`).
    fn proto_name(self) -> &'static str;

    /// The value of a proto name (prost's `from_str_name`).
    fn from_proto_name(name: &str) -> Option<Self>;

    /// The prefix every value's name starts with: the enum's name in upper
    /// snake case and `_`, taken from the unspecified value's name.
    fn prefix() -> &'static str {
        let unspecified = Self::default().proto_name();
        unspecified
            .strip_suffix("UNSPECIFIED")
            .unwrap_or(unspecified)
    }

    /// The value's word: `"running"` for `CONTAINER_STATE_RUNNING`, `""`
    /// for the unspecified value.
    fn word(self) -> String {
        if Into::<i32>::into(self) == 0 {
            return String::new();
        }
        let name = self.proto_name();
        name.strip_prefix(Self::prefix())
            .unwrap_or(name)
            .to_ascii_lowercase()
    }

    /// The value a word names, the unspecified one for `""`; None for any
    /// other text (upper case and `"unspecified"` included).
    fn from_word(word: &str) -> Option<Self> {
        if word.is_empty() {
            return Some(Self::default());
        }
        let name = format!("{}{}", Self::prefix(), word.to_ascii_uppercase());
        Self::from_proto_name(&name)
            .filter(|value| Into::<i32>::into(*value) != 0 && value.word() == word)
    }

    /// The word of a field's number, or the number itself where it names
    /// no value (a newer peer's), so nothing is shown as blank by mistake.
    fn word_of(value: i32) -> String {
        match Self::try_from(value) {
            Ok(known) => known.word(),
            Err(_) => value.to_string(),
        }
    }
}

macro_rules! words {
    ($($name:ident),* $(,)?) => {
        $(
            impl Words for v1::$name {
                fn proto_name(self) -> &'static str {
                    self.as_str_name()
                }

                fn from_proto_name(name: &str) -> Option<Self> {
                    Self::from_str_name(name)
                }
            }
        )*
    };
}

words!(
    FinalTaskState,
    TaskState,
    AttemptOutcome,
    TaskResultState,
    ContainerEventState,
    WorkerStatus,
    ContainerState,
    MachineState,
);

/// Writes an enum field as its word. A number that names no value of `T`
/// is an error rather than a guess: the controlplane writes only values it
/// knows.
///
/// # Errors
///
/// When `value` is not a value of `T`, or the serializer fails.
#[allow(clippy::trivially_copy_pass_by_ref)] // serde passes fields by reference
pub fn serialize<T: Words, S: Serializer>(value: &i32, serializer: S) -> Result<S::Ok, S::Error> {
    match T::try_from(*value) {
        Ok(known) => serializer.serialize_str(&known.word()),
        Err(_) => Err(serde::ser::Error::custom(format!(
            "{value} is no value of the enum whose names start {}",
            T::prefix()
        ))),
    }
}

/// Reads an enum field from its word (`""` for unspecified) or, as
/// grpc-gateway's JSON allows, from its number.
///
/// # Errors
///
/// When the text is no word of `T` or the number no value of it.
pub fn deserialize<'de, T: Words, D: Deserializer<'de>>(deserializer: D) -> Result<i32, D::Error> {
    #[derive(Deserialize)]
    #[serde(untagged)]
    enum WordOrNumber {
        Word(String),
        Number(i64),
    }
    match WordOrNumber::deserialize(deserializer)? {
        WordOrNumber::Word(word) => T::from_word(&word).map(Into::into).ok_or_else(|| {
            de::Error::invalid_value(Unexpected::Str(&word), &expected::<T>().as_str())
        }),
        WordOrNumber::Number(number) => i32::try_from(number)
            .ok()
            .filter(|n| T::try_from(*n).is_ok())
            .ok_or_else(|| {
                de::Error::invalid_value(Unexpected::Signed(number), &expected::<T>().as_str())
            }),
    }
}

/// What a field of `T` accepts, for an error: its words.
fn expected<T: Words>() -> String {
    let words: Vec<String> = (1..)
        .map_while(|n| T::try_from(n).ok())
        .map(Words::word)
        .collect();
    format!("one of \"\", {}", words.join(", "))
}

#[cfg(test)]
mod tests;

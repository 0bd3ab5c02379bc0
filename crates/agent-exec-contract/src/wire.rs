//! Serde helpers that make Rust values encode exactly as Go's `encoding/json` does.
//!
//! Three Go behaviours matter for the contract's types:
//!
//! * **`time.Time` with `omitempty` is never omitted.** `omitempty` only drops false, 0,
//!   nil and empty strings/slices/maps; a struct (and `time.Time` is one) is always
//!   written. The zero time is written as `"0001-01-01T00:00:00Z"`. So an absent
//!   deadline is `None` in Rust and encodes as that string, and that string decodes
//!   back to `None` (Go's `IsZero`). Times are RFC 3339 with nanoseconds and trailing
//!   zeros trimmed (Go's `RFC3339Nano`), `Z` for UTC — `time`'s `Rfc3339` writes the same.
//! * **`[]byte` is standard base64 with padding** (and a nil `[]byte` is `null`).
//! * **nil slices and maps are `null`.** A Go peer may send `null` for any slice or map,
//!   so every such field decodes `null` as empty. We *write* empty slices as `[]`, not
//!   `null`: Go decodes both to an empty slice, and `[]` is what a non-Go reader expects.
//!
//! What is deliberately not reproduced: Go escapes `<`, `>` and `&` inside strings as
//! `\u003c` etc.; serde_json does not. The two encodings are equal JSON values, which
//! is the level at which the contract promises compatibility.
//!
//! Durations: no field of the Go contract is a `time.Duration` (which Go would encode
//! as an integer of nanoseconds). Relative limits (`--deadline 90s`) are turned into an
//! absolute RFC 3339 deadline before they reach the wire, so the only time on the wire
//! is RFC 3339, as the spec asks.

use std::collections::BTreeMap;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Deserializer, Serializer};
use time::OffsetDateTime;
use time::format_description::well_known::Rfc3339;

/// Go's zero `time.Time`, as `encoding/json` writes it.
pub const GO_ZERO_TIME: &str = "0001-01-01T00:00:00Z";

/// `null` (a Go nil slice or map) or a missing field decodes as the type's default.
pub fn null_as_default<'de, D, T>(de: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(de)?.unwrap_or_default())
}

/// `Option<OffsetDateTime>` as a Go `time.Time`: `None` is the zero time.
pub mod go_time {
    use super::*;

    pub fn serialize<S: Serializer>(
        value: &Option<OffsetDateTime>,
        ser: S,
    ) -> Result<S::Ok, S::Error> {
        match value {
            None => ser.serialize_str(GO_ZERO_TIME),
            Some(t) => {
                let text = t.format(&Rfc3339).map_err(serde::ser::Error::custom)?;
                ser.serialize_str(&text)
            }
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        de: D,
    ) -> Result<Option<OffsetDateTime>, D::Error> {
        // Go decodes `null` into a time.Time as "leave it zero".
        let Some(text) = Option::<String>::deserialize(de)? else {
            return Ok(None);
        };
        let parsed = OffsetDateTime::parse(&text, &Rfc3339).map_err(|e| {
            serde::de::Error::custom(format!("deadline {text:?} is not RFC 3339: {e}"))
        })?;
        if parsed.unix_timestamp_nanos() == zero_instant_nanos() {
            return Ok(None);
        }
        Ok(Some(parsed))
    }

    /// Go's `IsZero` compares the instant, whatever the offset it was written with.
    fn zero_instant_nanos() -> i128 {
        // 0001-01-01T00:00:00Z, seconds from the Unix epoch.
        -62_135_596_800 * 1_000_000_000
    }
}

/// `map[string][]byte`: values in standard base64; `null` map or value is empty.
pub mod go_bytes_map {
    use super::*;
    use serde::ser::SerializeMap;

    pub fn serialize<S: Serializer>(
        value: &BTreeMap<String, Vec<u8>>,
        ser: S,
    ) -> Result<S::Ok, S::Error> {
        // BTreeMap iterates in byte order of the keys, which is also Go's map key order.
        let mut map = ser.serialize_map(Some(value.len()))?;
        for (name, bytes) in value {
            map.serialize_entry(name, &STANDARD.encode(bytes))?;
        }
        map.end()
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(
        de: D,
    ) -> Result<BTreeMap<String, Vec<u8>>, D::Error> {
        let raw: Option<BTreeMap<String, Option<String>>> = Option::deserialize(de)?;
        let mut out = BTreeMap::new();
        for (name, encoded) in raw.unwrap_or_default() {
            let bytes = match encoded {
                None => Vec::new(),
                Some(text) => STANDARD.decode(text.as_bytes()).map_err(|e| {
                    serde::de::Error::custom(format!("files[{name:?}] is not base64: {e}"))
                })?,
            };
            out.insert(name, bytes);
        }
        Ok(out)
    }
}

/// Declares a Go string-typed enum (`type X string` + constants) as a Rust enum that
/// keeps unknown values in `Other` so a newer peer's value survives a round trip.
macro_rules! go_string_enum {
    (
        $(#[$meta:meta])*
        pub enum $name:ident { $( $(#[$vmeta:meta])* $variant:ident = $text:literal, )* }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $( $(#[$vmeta])* $variant, )*
            /// A value this build does not know, kept verbatim.
            Other(String),
        }

        impl $name {
            /// Every value this build knows, in the Go file's order.
            pub const KNOWN: &'static [$name] = &[$($name::$variant),*];

            /// The wire string.
            pub fn as_str(&self) -> &str {
                match self {
                    $( $name::$variant => $text, )*
                    $name::Other(s) => s.as_str(),
                }
            }

            /// Parses a wire string; unknown values become `Other`.
            pub fn from_wire(text: &str) -> Self {
                match text {
                    $( $text => $name::$variant, )*
                    other => $name::Other(other.to_owned()),
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }

        impl serde::Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
                ser.serialize_str(self.as_str())
            }
        }

        impl<'de> serde::Deserialize<'de> for $name {
            fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Self, D::Error> {
                let text = String::deserialize(de)?;
                Ok($name::from_wire(&text))
            }
        }
    };
}

pub(crate) use go_string_enum;

//! Reading a `ContractRequest` a Go caller wrote with `encoding/json`, for
//! `agent-exec run --request FILE|-`: the same decoding as [`crate::types`] (Go's zero
//! time is no deadline, `null` slices are empty, unknown fields are ignored as Go
//! ignores them), plus what a hand-over from outside needs — a size cap checked before
//! parsing, nothing after the object, and an error that *names the field*
//! (`budget.deadline: …`) so the caller can find the mistake.
//!
//! Decision: the field path comes from `serde_path_to_error` around the types' own
//! `Deserialize`, not from a second hand-written decoder, so the request has one
//! decoding in one place. Not done here: the checks that need the machine (does the
//! workspace exist, is the execution id one the journal accepts); the CLI makes them
//! and names the same fields.

use crate::types::ContractRequest;

/// The largest request accepted (prompts and context can be long; 64 MiB is far
/// above any real one and still bounded).
pub const MAX_REQUEST_BYTES: usize = 64 * 1024 * 1024;

/// A request that cannot be used, with the field at fault (`""` for the whole).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{}", describe(.field, .message))]
pub struct RequestJsonError {
    /// Dotted path of the field, as the Go tags spell it (`budget.deadline`,
    /// `context[2].role`); empty when the request as a whole is at fault.
    pub field: String,
    pub message: String,
}

fn describe(field: &str, message: &str) -> String {
    if field.is_empty() {
        message.to_owned()
    } else {
        format!("{field}: {message}")
    }
}

impl RequestJsonError {
    fn whole(message: impl Into<String>) -> Self {
        RequestJsonError {
            field: String::new(),
            message: message.into(),
        }
    }
}

/// Decodes one request. Never panics; every refusal names the field.
pub fn decode_request(bytes: &[u8]) -> Result<ContractRequest, RequestJsonError> {
    if bytes.len() > MAX_REQUEST_BYTES {
        return Err(RequestJsonError::whole(format!(
            "the request is {} bytes; at most {MAX_REQUEST_BYTES} are accepted",
            bytes.len()
        )));
    }
    // Serde would also read a struct from an array of its fields; Go reads only an
    // object, and so do we.
    let first = bytes.iter().find(|b| !b.is_ascii_whitespace());
    if first.is_some_and(|b| *b != b'{') {
        return Err(RequestJsonError::whole(
            "the request must be a JSON object (Go's ContractRequest)",
        ));
    }
    let mut de = serde_json::Deserializer::from_slice(bytes);
    let request: ContractRequest = serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        RequestJsonError {
            // The root prints as ".".
            field: if path == "." { String::new() } else { path },
            message: e.into_inner().to_string(),
        }
    })?;
    de.end().map_err(|e| {
        RequestJsonError::whole(format!("something follows the request object: {e}"))
    })?;
    if let Some(schema) = &request.output_schema
        && !schema.is_object()
    {
        return Err(RequestJsonError {
            field: "output_schema".into(),
            message: format!("must be a JSON Schema object, not {}", kind_of(schema)),
        });
    }
    Ok(request)
}

fn kind_of(value: &serde_json::Value) -> &'static str {
    match value {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

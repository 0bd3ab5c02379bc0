//! Loading records from disk: YAML parsing with safe options, and the file rules of
//! data model §1.

use serde::de::DeserializeOwned;

use crate::diagnostic::{Diagnostic, codes};

/// Longest parser message we pass on; longer ones are cut (they may quote input).
const MAX_PARSER_MESSAGE_CHARS: usize = 240;

/// The parser options every registry read uses.
///
/// - `strict_booleans`: only `true`/`false` are booleans, so `no`, `on`, `y` stay strings.
/// - `leading_zero_numbers_as_strings`: `0755` stays the string `0755`.
/// - alias limits: a "billion laughs" document is stopped after a few thousand replayed
///   events instead of expanding exponentially (records have no business using aliases
///   heavily; 1,000 expansions of one anchor is generous).
/// - no snippets: a diagnostic carries line and column; the CLI prints the source line
///   itself, so the message never embeds the file body.
pub(crate) fn yaml_options() -> serde_saphyr::Options {
    let mut options = serde_saphyr::Options::default();
    options.strict_booleans = true;
    options.leading_zero_numbers_as_strings = true;
    options.with_snippet = false;
    options.alias_limits.max_total_replayed_events = 20_000;
    options.alias_limits.max_alias_expansions_per_anchor = 1_000;
    options.alias_limits.max_replay_stack_depth = 16;
    options
}

/// Parse text into `T`, mapping a parser error to a `YAML_INVALID` / `RECORD_INVALID`
/// diagnostic with line and column.
pub(crate) fn parse_typed<T: DeserializeOwned>(text: &str) -> Result<T, Diagnostic> {
    serde_saphyr::from_str_with_options::<T>(text, yaml_options()).map_err(|e| parse_error(&e))
}

/// Parse text into a JSON value (unknown fields and key order kept).
pub(crate) fn parse_document(text: &str) -> Result<serde_json::Value, Diagnostic> {
    parse_typed::<serde_json::Value>(text)
}

/// Turn a parser error into a diagnostic: syntax problems are `YAML_INVALID`, shape
/// problems (wrong type, missing field) `RECORD_INVALID`.
pub(crate) fn parse_error(err: &serde_saphyr::Error) -> Diagnostic {
    let bare = err.without_snippet();
    let mut message = bare.to_string();
    // The rendered form may end with its own " at line X column Y"; we keep it (it is
    // also in `line`/`column`) but cap the length, since messages may quote input.
    if message.chars().count() > MAX_PARSER_MESSAGE_CHARS {
        message = message
            .chars()
            .take(MAX_PARSER_MESSAGE_CHARS)
            .collect::<String>()
            + "…";
    }
    let code = if is_shape_error(&message) {
        codes::RECORD_INVALID
    } else {
        codes::YAML_INVALID
    };
    let mut d = Diagnostic::error(code, message);
    if let Some(loc) = err.location() {
        let line = u32::try_from(loc.line()).unwrap_or(u32::MAX);
        let column = u32::try_from(loc.column()).unwrap_or(u32::MAX);
        if line > 0 {
            d = d.at_position(line, column);
            if !d.message.contains("line") {
                d.message = format!("{} (line {line}, column {column})", d.message);
            }
        }
    }
    d
}

fn is_shape_error(message: &str) -> bool {
    [
        "invalid type",
        "missing field",
        "unknown variant",
        "invalid value",
        "invalid length",
    ]
    .iter()
    .any(|p| message.contains(p))
}

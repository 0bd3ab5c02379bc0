//! The bridge's wire: one JSON object per line each way, read from bytes that may
//! be anything (the plugin is trusted, but a bridge that panics on a bad line
//! would leave every judged call of the session unanswered).
//!
//! In: `{"id": N, "method": "...", "params": {...}}` (`hello` may carry
//! `"protocol"` at the top level, as the shared design writes it). Out, exactly one
//! of: `{"id": N, "result": ...}`, `{"id": N, "error": {"code", "message",
//! "details"?}}`, or — mid-call, for a call that needs the user —
//! `{"id": N, "approval": {"toolName", "reason"}}`.

use serde_json::{Map, Value, json};

/// The longest line read, in bytes. A tool call's arguments ride in one line; a
/// long `write` is large, 16 MiB is far beyond any (the hook's bound, too).
pub const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

/// One request from the plugin.
#[derive(Debug, Clone, PartialEq)]
pub struct Request {
    /// The plugin's id for the call, echoed on every answer to it.
    pub id: u64,
    /// The method name.
    pub method: String,
    /// The parameters (an empty object when absent).
    pub params: Map<String, Value>,
    /// `hello`'s protocol number, top level or in `params`.
    pub protocol: Option<u64>,
}

/// A line that is not a request, with the id when one could be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// The id, if the line was an object with a numeric `id`.
    pub id: Option<u64>,
    /// What is wrong, for the error answer.
    pub message: String,
}

/// Read one line (without its newline). Never panics.
pub fn parse_line(line: &[u8]) -> Result<Request, BadLine> {
    let value: Value = serde_json::from_slice(line).map_err(|error| BadLine {
        id: None,
        message: format!("not a JSON line: {error}"),
    })?;
    let Value::Object(mut object) = value else {
        return Err(BadLine {
            id: None,
            message: "a request must be a JSON object".to_owned(),
        });
    };
    let id = object.get("id").and_then(Value::as_u64);
    let bad = |message: &str| BadLine {
        id,
        message: message.to_owned(),
    };
    let Some(id) = id else {
        return Err(bad("`id` must be a non-negative integer"));
    };
    let method = match object.remove("method") {
        Some(Value::String(method)) => method,
        _ => return Err(bad("`method` must be a string")),
    };
    let params = match object.remove("params") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(params)) => params,
        Some(_) => return Err(bad("`params` must be an object")),
    };
    let protocol = object
        .get("protocol")
        .or_else(|| params.get("protocol"))
        .and_then(Value::as_u64);
    Ok(Request {
        id,
        method,
        params,
        protocol,
    })
}

/// The id of a line too long to parse, when it starts `{"id":N` (as the plugin's
/// `JSON.stringify` of `{id, method, params}` does).
pub fn leading_id(line: &[u8]) -> Option<u64> {
    let rest = line.strip_prefix(br#"{"id":"#)?;
    let digits = rest.iter().take_while(|byte| byte.is_ascii_digit()).count();
    std::str::from_utf8(rest.get(..digits)?).ok()?.parse().ok()
}

/// A success answer.
pub fn result(id: u64, value: Value) -> String {
    json!({"id": id, "result": value}).to_string()
}

/// A failure answer; `id` is `null` when the line had none.
pub fn error(id: Option<u64>, code: &str, message: &str, details: Option<Value>) -> String {
    let mut error = json!({"code": code, "message": message});
    if let (Some(details), Some(object)) = (details, error.as_object_mut()) {
        object.insert("details".to_owned(), details);
    }
    json!({"id": id, "error": error}).to_string()
}

/// The mid-call question: the plugin puts `reason` to the user through the host's
/// approval service and answers with `approval_answer` under the same id.
pub fn approval(id: u64, tool_name: &str, reason: &str) -> String {
    json!({"id": id, "approval": {"toolName": tool_name, "reason": reason}}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_requests_and_names_what_is_wrong() {
        let request = parse_line(br#"{"id":3,"method":"hello","protocol":1}"#).unwrap();
        assert_eq!(request.id, 3);
        assert_eq!(request.method, "hello");
        assert_eq!(request.protocol, Some(1));
        assert!(request.params.is_empty());
        let nested = parse_line(br#"{"id":4,"method":"hello","params":{"protocol":2}}"#);
        assert_eq!(nested.unwrap().protocol, Some(2));
        assert_eq!(parse_line(b"[]").unwrap_err().id, None);
        assert_eq!(parse_line(b"\xff").unwrap_err().id, None);
        let no_method = parse_line(br#"{"id":5}"#).unwrap_err();
        assert_eq!(no_method.id, Some(5));
        assert!(no_method.message.contains("method"));
        let bad_params = parse_line(br#"{"id":6,"method":"x","params":[]}"#).unwrap_err();
        assert_eq!(bad_params.id, Some(6));
        assert_eq!(
            parse_line(br#"{"id":-1,"method":"x"}"#).unwrap_err().id,
            None
        );
    }

    #[test]
    fn a_leading_id_is_read_from_a_cut_line() {
        assert_eq!(
            leading_id(br#"{"id":42,"method":"judge","params":{"argu"#),
            Some(42)
        );
        assert_eq!(leading_id(br#"{"method":"judge","id":42"#), None);
        assert_eq!(leading_id(br#"{"id":"x""#), None);
        assert_eq!(leading_id(b"{\"id\":99999999999999999999999"), None);
    }

    #[test]
    fn answers_are_one_line_each() {
        assert_eq!(result(1, json!({"a": 1})), r#"{"id":1,"result":{"a":1}}"#);
        assert_eq!(
            error(None, "BAD_LINE", "x\ny", None),
            r#"{"id":null,"error":{"code":"BAD_LINE","message":"x\ny"}}"#
        );
        assert!(!approval(2, "read", "a\nb").contains('\n'));
    }
}

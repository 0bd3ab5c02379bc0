//! The `facet` tool's arguments, read in one place by both sides that see them:
//! the MCP server (which validates and echoes) and the hook (which records the
//! change on `PostToolUse`, because only the hook knows the host's session id).
//!
//! `{"action": "status" | "add" | "remove" | "reset", "paths": [string]}` —
//! `paths` is required and non-empty for `add` and `remove`, and must be absent
//! or empty for `status` and `reset`.

use facet_core::FacetAction;
use mcp_shape::ArgumentIssue;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The host-qualified name under which Claude Code and DeepSeek Harness expose the
/// tool when the server is registered as `facet`. Configurable with
/// `--facet-tool` / `FACET_TOOL_NAME` for any other registration name.
pub const DEFAULT_HOST_TOOL_NAME: &str = "mcp__facet__facet";

/// The name the MCP server gives its tool.
pub const TOOL_NAME: &str = "facet";

/// What the tool is for, as every face (MCP server, dsh plugin) describes it; each
/// face adds one sentence saying who records the change.
pub const PURPOSE: &str = "The facet: this session's scope, one folder of the project. `status` shows it; \
     `add` grants paths outside it for the rest of the session — only when you actually \
     need them, and the user is asked first; `remove` withdraws grants; `reset` drops \
     them all.";

/// The `action` argument, as the model reads it.
pub const ACTION_DESCRIPTION: &str = "`status` shows the facet; `add` grants paths outside it for the rest of the \
     session (the user is asked first); `remove` withdraws grants; `reset` drops every grant.";

/// The `paths` argument, as the model reads it.
pub const PATHS_DESCRIPTION: &str = "Files or folders, for `add` and `remove`. Relative paths are taken against the \
     session's working directory.";

/// What a `facet` call asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Show the binding: the facet root, the grants, the mode.
    Status,
    /// Grant paths outside the facet for the rest of the session (needs the user).
    Add,
    /// Withdraw grants.
    Remove,
    /// Drop every grant: back to the session's own folder.
    Reset,
}

impl Action {
    /// The wire spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Status => "status",
            Self::Add => "add",
            Self::Remove => "remove",
            Self::Reset => "reset",
        }
    }
}

/// The tool's input, as its JSON schema describes it to the model.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FacetArguments {
    /// What to do (see [`ACTION_DESCRIPTION`]).
    #[schemars(description = ACTION_DESCRIPTION)]
    pub action: Action,
    /// The paths of `add` and `remove` (see [`PATHS_DESCRIPTION`]).
    #[serde(default)]
    #[schemars(description = PATHS_DESCRIPTION)]
    pub paths: Vec<String>,
}

/// The wire action of a validated call.
pub fn action_of(call: &FacetAction) -> Action {
    match call {
        FacetAction::Status => Action::Status,
        FacetAction::Add(_) => Action::Add,
        FacetAction::Remove(_) => Action::Remove,
        FacetAction::Reset => Action::Reset,
    }
}

/// The paths of a validated call (empty for `status` and `reset`).
pub fn paths_of(call: &FacetAction) -> &[String] {
    match call {
        FacetAction::Add(paths) | FacetAction::Remove(paths) => paths,
        FacetAction::Status | FacetAction::Reset => &[],
    }
}

/// Read and validate the tool's arguments. Every problem is reported, each naming
/// its field, so the model can correct the call in one go.
///
/// Stricter than `facet_core::FacetAction::parse` (which, like the seed, skips
/// what it cannot read): this is the input-schema check of the MCP tool, and the
/// hook uses the same reader so it records exactly the calls the server accepted.
pub fn parse_arguments(arguments: &Value) -> Result<FacetAction, Vec<ArgumentIssue>> {
    let Some(object) = arguments.as_object() else {
        return Err(vec![ArgumentIssue::new("", "must be an object")]);
    };
    let mut issues = Vec::new();
    for key in object.keys() {
        if key != "action" && key != "paths" {
            issues.push(ArgumentIssue::new(
                key.clone(),
                "is not an argument of facet (it takes `action` and `paths`)",
            ));
        }
    }
    let action = match object.get("action") {
        None => {
            issues.push(ArgumentIssue::new("action", "is required"));
            None
        }
        Some(Value::String(text)) => match text.as_str() {
            "status" => Some(Action::Status),
            "add" => Some(Action::Add),
            "remove" => Some(Action::Remove),
            "reset" => Some(Action::Reset),
            _ => {
                issues.push(ArgumentIssue::new(
                    "action",
                    "must be one of status, add, remove, reset",
                ));
                None
            }
        },
        Some(_) => {
            issues.push(ArgumentIssue::new(
                "action",
                "must be a string: one of status, add, remove, reset",
            ));
            None
        }
    };
    let mut paths = Vec::new();
    match object.get("paths") {
        None | Some(Value::Null) => {}
        Some(Value::Array(items)) => {
            for (index, item) in items.iter().enumerate() {
                match item.as_str().map(str::trim) {
                    Some("") => {
                        issues.push(ArgumentIssue::new(format!("paths[{index}]"), "is empty"))
                    }
                    Some(path) if path.contains('\0') => issues.push(ArgumentIssue::new(
                        format!("paths[{index}]"),
                        "contains a NUL byte",
                    )),
                    Some(path) => paths.push(path.to_owned()),
                    None => issues.push(ArgumentIssue::new(
                        format!("paths[{index}]"),
                        "must be a string",
                    )),
                }
            }
        }
        Some(_) => issues.push(ArgumentIssue::new("paths", "must be an array of strings")),
    }
    if let Some(action) = action {
        match action {
            Action::Add | Action::Remove if paths.is_empty() && issues.is_empty() => {
                issues.push(ArgumentIssue::new(
                    "paths",
                    format!("must name at least one path for `{}`", action.as_str()),
                ));
            }
            Action::Status | Action::Reset if !paths.is_empty() => {
                issues.push(ArgumentIssue::new(
                    "paths",
                    format!("is not taken by `{}`", action.as_str()),
                ));
            }
            _ => {}
        }
    }
    match action {
        Some(action) if issues.is_empty() => Ok(match action {
            Action::Status => FacetAction::Status,
            Action::Add => FacetAction::Add(paths),
            Action::Remove => FacetAction::Remove(paths),
            Action::Reset => FacetAction::Reset,
        }),
        _ => Err(issues),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_valid_calls() {
        assert_eq!(
            parse_arguments(&json!({"action": "add", "paths": [" ../shared "]})),
            Ok(FacetAction::Add(vec!["../shared".into()]))
        );
        assert_eq!(
            parse_arguments(&json!({"action": "status"})),
            Ok(FacetAction::Status)
        );
    }

    #[test]
    fn names_every_problem() {
        let issues =
            parse_arguments(&json!({"action": "grow", "paths": [1, ""], "x": 1})).unwrap_err();
        let fields: Vec<_> = issues.iter().map(|issue| issue.path.as_str()).collect();
        assert_eq!(fields, vec!["x", "action", "paths[0]", "paths[1]"]);
        let issues = parse_arguments(&json!({"action": "add"})).unwrap_err();
        assert_eq!(issues[0].path, "paths");
        let issues = parse_arguments(&json!({"action": "reset", "paths": ["a"]})).unwrap_err();
        assert_eq!(issues[0].path, "paths");
        assert_eq!(parse_arguments(&json!([])).unwrap_err()[0].path, "");
    }
}

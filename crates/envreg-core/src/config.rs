//! `envreg.yaml`, the registry config (data model §9), with its defaults.
//!
//! A missing file means all defaults. A present but broken file also yields the
//! defaults plus a `CONFIG_INVALID` error diagnostic: loading never fails, and the
//! defaults are the fail-closed choice (approval required, conservative limits).
//!
//! Plain data: [`Config::parse`] is defined in [`crate::load`], next to the parser
//! settings it uses, so this module depends on no parser.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The whole config, defaults applied.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Config {
    pub defaults: Defaults,
    pub write_policy: WritePolicy,
    pub limits: Limits,
    pub skills: SkillsConfig,
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Defaults {
    /// Step 3 of the default-environment order (contract §1.4).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub environment_id: Option<String>,
}

/// Who approves writes and when (contract §1.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct WritePolicy {
    pub require_approval_for_delete: bool,
    pub require_approval_for_production_save: bool,
    pub approval_channel: ApprovalChannel,
}

impl Default for WritePolicy {
    fn default() -> WritePolicy {
        WritePolicy {
            require_approval_for_delete: true,
            require_approval_for_production_save: true,
            approval_channel: ApprovalChannel::Elicitation,
        }
    }
}

/// `elicitation`: the server asks the client. `host`: the host gates tool calls
/// itself, so a call that reached the registry counts as approved.
//
// (Not in the doc comment above, which is the JSON Schema description committed in
// examples/registry/.schemas/config.json.) The channel says *who* approves (data model
// §12), never whether approval is needed: the core plans the request the same way for
// both; the MCP approver answers it for the host; the CLI, with no host in front of it,
// asks on the terminal either way.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum ApprovalChannel {
    #[default]
    Elicitation,
    Host,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct Limits {
    pub max_records: usize,
    /// Checked against the file size before a byte is parsed.
    pub max_record_bytes: u64,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_records: 10_000,
            max_record_bytes: 262_144,
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase", default)]
pub struct SkillsConfig {
    /// Extra skill folders, relative to the registry root.
    pub dirs: Vec<String>,
}

/// The config file name at the registry root.
pub const CONFIG_FILE: &str = "envreg.yaml";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_match_data_model() {
        let c = Config::parse("").unwrap();
        assert_eq!(c.limits.max_records, 10_000);
        assert_eq!(c.limits.max_record_bytes, 262_144);
        assert!(c.write_policy.require_approval_for_delete);
        assert!(c.write_policy.require_approval_for_production_save);
        assert_eq!(
            c.write_policy.approval_channel,
            ApprovalChannel::Elicitation
        );
        assert!(c.defaults.environment_id.is_none());
    }

    #[test]
    fn partial_config_keeps_other_defaults() {
        let c = Config::parse(
            "defaults: { environmentId: test-a }\nwritePolicy: { approvalChannel: host }\nlimits: { maxRecordBytes: 100 }\nskills: { dirs: [ops/skills] }\n",
        )
        .unwrap();
        assert_eq!(c.defaults.environment_id.as_deref(), Some("test-a"));
        assert_eq!(c.write_policy.approval_channel, ApprovalChannel::Host);
        assert!(c.write_policy.require_approval_for_delete);
        assert_eq!(c.limits.max_record_bytes, 100);
        assert_eq!(c.limits.max_records, 10_000);
        assert_eq!(c.skills.dirs, vec!["ops/skills".to_owned()]);
    }

    #[test]
    fn broken_config_is_a_diagnostic() {
        let d = Config::parse("limits: { maxRecords: many }\n").unwrap_err();
        assert_eq!(d.code, "CONFIG_INVALID");
        assert_eq!(d.file.as_deref(), Some("envreg.yaml"));
    }
}

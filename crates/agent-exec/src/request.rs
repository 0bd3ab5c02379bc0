//! Building a `ContractRequest` from the command line: one place for `run` and
//! `submit`, so both read the same flags the same way.

use std::path::Path;

use agent_exec_contract::{
    Capability, ContractBudget, ContractRequest, ToolPolicy, WorkspaceHandle,
};
use anyhow::{Context as _, anyhow, bail};

use crate::cli::RequestArgs;
use crate::duration;

/// Ids are data: printable, no whitespace or control characters, bounded.
pub fn check_execution_id(id: &str) -> anyhow::Result<()> {
    if id.is_empty() || id.len() > 128 || id.chars().any(|c| c.is_control() || c.is_whitespace()) {
        bail!("invalid --execution-id {id:?}: 1 to 128 printable characters without spaces");
    }
    Ok(())
}

pub fn parse_required(names: &[String]) -> anyhow::Result<Vec<Capability>> {
    let mut required = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let capability = Capability::from_wire(name);
        if let Capability::Other(_) = capability {
            let known: Vec<_> = Capability::KNOWN.iter().map(Capability::as_str).collect();
            bail!(
                "unknown capability {name:?} in --require; one of: {}",
                known.join(", ")
            );
        }
        if !required.contains(&capability) {
            required.push(capability);
        }
    }
    Ok(required)
}

/// The request for `r`, its workspace root `root` (already made absolute by the caller:
/// canonical for `run`, as given for `submit`, whose workspace is on the worker).
pub fn build(r: &RequestArgs, root: &Path) -> anyhow::Result<ContractRequest> {
    let prompt = match (&r.prompt, &r.prompt_file) {
        (Some(text), _) => text.clone(),
        (None, Some(file)) => std::fs::read_to_string(file)
            .with_context(|| format!("cannot read --prompt-file {}", file.display()))?,
        (None, None) => bail!("give --prompt TEXT or --prompt-file F"),
    };
    let root = root
        .to_str()
        .ok_or_else(|| anyhow!("--workspace {} is not valid UTF-8", root.display()))?
        .to_owned();
    let deadline = match &r.deadline {
        None => None,
        Some(text) => {
            let d = duration::parse(text).map_err(|e| anyhow!("--deadline: {e}"))?;
            // Checked: a huge value is a usage error, never an overflow panic.
            let too_long = || anyhow!("--deadline {text}: too long (the date would overflow)");
            let d = time::Duration::try_from(d).map_err(|_| too_long())?;
            Some(
                time::OffsetDateTime::now_utc()
                    .checked_add(d)
                    .ok_or_else(too_long)?,
            )
        }
    };
    let required = parse_required(&r.require)?;
    let execution_id = match &r.execution_id {
        Some(id) => {
            check_execution_id(id)?;
            id.clone()
        }
        None => uuid::Uuid::now_v7().to_string(),
    };
    Ok(ContractRequest {
        execution_id,
        prompt,
        targets: r.targets.clone(),
        workspace: WorkspaceHandle {
            root,
            writable: Vec::new(),
        },
        budget: ContractBudget {
            deadline,
            ..Default::default()
        },
        required,
        tool_policy: ToolPolicy {
            profile: r.tool_profile.clone().unwrap_or_default(),
            allowlist: r.allow_tools.clone(),
        },
        ..Default::default()
    })
}

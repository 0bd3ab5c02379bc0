//! Building a `ContractRequest` from the command line: one place for `run` and
//! `submit`, so both read the same flags — or the same `--request` JSON — the same way.
//! Every problem is a usage error before anything runs or is queued.

use std::path::Path;

use agent_exec_contract::{
    Capability, ContractBudget, ContractRequest, ToolPolicy, WorkspaceHandle,
};
use anyhow::{Context as _, anyhow, bail};

use crate::cli::RequestArgs;
use crate::duration;

/// Where the workspace named by the request lives, which decides how it is checked.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WorkspaceAt {
    /// `run`: on this machine; made canonical, and it must be a directory.
    Here,
    /// `submit`: on the worker; made absolute as given (this machine cannot see it).
    Worker,
}

/// The request `r` describes: `--request` (Go's JSON, checked field by field), else the
/// flags; then the `output_schema` extension checked and turned into a requirement.
pub fn build(r: &RequestArgs, at: WorkspaceAt) -> anyhow::Result<ContractRequest> {
    let mut request = match &r.request {
        Some(source) => from_json(source, at)?,
        None => from_flags(r, at)?,
    };
    if let Some(schema) = &request.output_schema {
        // A schema that is itself invalid is refused here, before anything runs (the
        // runtime compiles it again for the check of the answer).
        agent_exec_runtime::structured::check_schema(schema).map_err(|e| anyhow!("{e}"))?;
        // A schema is a requirement: only a backend that verified structured output
        // is asked.
        if !request.required.contains(&Capability::StructuredOutput) {
            request.required.push(Capability::StructuredOutput);
        }
    }
    Ok(request)
}

/// Ids are data: printable, no whitespace or control characters, bounded. The
/// message names no flag: the caller says where the id came from.
pub fn check_execution_id(id: &str) -> anyhow::Result<()> {
    if id.is_empty() || id.len() > 128 || id.chars().any(|c| c.is_control() || c.is_whitespace()) {
        bail!("{id:?} is not an execution id: 1 to 128 printable characters without spaces");
    }
    Ok(())
}

/// `--deadline DURATION` as the absolute deadline it means from now.
pub fn deadline_from_now(text: &str) -> anyhow::Result<time::OffsetDateTime> {
    let d = duration::parse(text).map_err(|e| anyhow!("--deadline: {e}"))?;
    // Checked: a huge value is a usage error, never an overflow panic.
    let too_long = || anyhow!("--deadline {text}: too long (the date would overflow)");
    let d = time::Duration::try_from(d).map_err(|_| too_long())?;
    time::OffsetDateTime::now_utc()
        .checked_add(d)
        .ok_or_else(too_long)
}

pub fn parse_required(names: &[String]) -> anyhow::Result<Vec<Capability>> {
    let mut required = Vec::new();
    for name in names.iter().map(|n| n.trim()).filter(|n| !n.is_empty()) {
        let capability = Capability::from_wire(name);
        if let Capability::Other(_) = capability {
            bail!(
                "unknown capability {name:?} in --require; one of: {}",
                known_capabilities()
            );
        }
        if !required.contains(&capability) {
            required.push(capability);
        }
    }
    Ok(required)
}

fn known_capabilities() -> String {
    let known: Vec<_> = Capability::KNOWN.iter().map(Capability::as_str).collect();
    known.join(", ")
}

fn from_flags(r: &RequestArgs, at: WorkspaceAt) -> anyhow::Result<ContractRequest> {
    let prompt = match (&r.prompt, &r.prompt_file) {
        (Some(text), _) => text.clone(),
        (None, Some(file)) => std::fs::read_to_string(file)
            .with_context(|| format!("cannot read --prompt-file {}", file.display()))?,
        (None, None) => bail!("give --prompt TEXT or --prompt-file F"),
    };
    let workspace = r
        .workspace
        .as_ref()
        .ok_or_else(|| anyhow!("give --workspace DIR (or --request)"))?;
    let root = workspace_root(workspace, at, "--workspace")?;
    let deadline = r.deadline.as_deref().map(deadline_from_now).transpose()?;
    let required = parse_required(&r.require)?;
    let execution_id = match &r.execution_id {
        Some(id) => {
            check_execution_id(id).map_err(|e| anyhow!("invalid --execution-id: {e}"))?;
            id.clone()
        }
        None => uuid::Uuid::now_v7().to_string(),
    };
    let output_schema = match &r.output_schema {
        None => None,
        Some(file) => {
            let text = std::fs::read(file)
                .with_context(|| format!("cannot read --output-schema {}", file.display()))?;
            let schema: serde_json::Value = serde_json::from_slice(&text)
                .map_err(|e| anyhow!("--output-schema {}: not JSON: {e}", file.display()))?;
            Some(schema)
        }
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
        output_schema,
        ..Default::default()
    })
}

/// The workspace root as the request will carry it, named in UTF-8: canonical and an
/// existing directory for a run here, absolute as given for a worker's.
fn workspace_root(dir: &Path, at: WorkspaceAt, what: &str) -> anyhow::Result<String> {
    let root = match at {
        WorkspaceAt::Here => {
            let root =
                std::fs::canonicalize(dir).with_context(|| format!("{what} {}", dir.display()))?;
            if !root.is_dir() {
                bail!("{what} {} is not a directory", root.display());
            }
            root
        }
        WorkspaceAt::Worker => {
            std::path::absolute(dir).map_err(|e| anyhow!("{what} {}: {e}", dir.display()))?
        }
    };
    Ok(root
        .to_str()
        .ok_or_else(|| anyhow!("{what} {} is not valid UTF-8", root.display()))?
        .to_owned())
}

/// `--request FILE|-`: Go's `ContractRequest` JSON. A malformed request is a usage
/// error naming the field (`budget.deadline: …`), and so is a field that cannot be
/// honoured (a relative or missing `workspace.root`, an unknown capability).
fn from_json(source: &str, at: WorkspaceAt) -> anyhow::Result<ContractRequest> {
    use std::io::Read as _;
    let limit = agent_exec_contract::MAX_REQUEST_BYTES as u64 + 1;
    let mut bytes = Vec::new();
    let (name, read) = if source == "-" {
        (
            "stdin".to_owned(),
            std::io::stdin().lock().take(limit).read_to_end(&mut bytes),
        )
    } else {
        let file = std::fs::File::open(source)
            .with_context(|| format!("cannot read --request {source}"))?;
        (source.to_owned(), file.take(limit).read_to_end(&mut bytes))
    };
    read.with_context(|| format!("cannot read --request {name}"))?;
    let bad = |field: &str, message: String| anyhow!("--request {name}: {field}: {message}");
    let mut request = agent_exec_contract::decode_request(&bytes)
        .map_err(|e| anyhow!("--request {name}: {e}"))?;
    if request.execution_id.is_empty() {
        return Err(bad(
            "execution_id",
            "empty; the caller chooses the id (and reuses it for a step retry)".into(),
        ));
    }
    check_execution_id(&request.execution_id).map_err(|e| bad("execution_id", e.to_string()))?;
    if request.prompt.is_empty() {
        return Err(bad("prompt", "empty".into()));
    }
    let root = Path::new(&request.workspace.root);
    if !root.is_absolute() {
        return Err(bad(
            "workspace.root",
            format!("{:?} is not an absolute path", request.workspace.root),
        ));
    }
    request.workspace.root = workspace_root(root, at, "workspace.root")
        .map_err(|e| anyhow!("--request {name}: {e:#}"))?;
    for (i, capability) in request.required.iter().enumerate() {
        if let Capability::Other(unknown) = capability {
            return Err(bad(
                &format!("required[{i}]"),
                format!(
                    "unknown capability {unknown:?}; one of: {}",
                    known_capabilities()
                ),
            ));
        }
    }
    Ok(request)
}

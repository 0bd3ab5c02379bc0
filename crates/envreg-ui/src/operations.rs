//! Operations for a cell: every standard operation and every operation some binding
//! names, each asked of [`Registry::resolve_operation`] as an agent would ask it —
//! which skill, at what match level, with which policy — and a refusal shown as the
//! error the agent would get (`BINDING_CONFLICT` with its candidates, `POLICY_DENIED`,
//! `SKILL_UNAVAILABLE`, …). A model only; `page.rs` draws it.

use std::collections::BTreeSet;

use envreg_core::model::STANDARD_OPERATIONS;
use envreg_core::operation::OperationResolution;
use envreg_core::{EnvError, RecordKind, Registry};

#[derive(Debug, Clone)]
pub struct Operation {
    pub operation: String,
    pub standard: bool,
    pub outcome: Result<OperationResolution, EnvError>,
}

/// The operations of a cell (or of one deployment in it), standard ones first, then
/// the bound ones by id.
pub fn build(
    registry: &Registry,
    environment: &str,
    service: &str,
    deployment: Option<&str>,
) -> Result<Vec<Operation>, EnvError> {
    envreg_core::id::check_id("environmentId", environment)?;
    envreg_core::id::check_id("serviceId", service)?;
    if let Some(d) = deployment {
        envreg_core::id::check_id("deploymentId", d)?;
    }
    let snapshot = registry.snapshot();
    if snapshot.environment(environment).is_none() {
        return Err(EnvError::not_found(RecordKind::Environment, environment));
    }
    if snapshot.service(service).is_none() {
        return Err(EnvError::not_found(RecordKind::Service, service));
    }
    let bound: BTreeSet<&str> = snapshot
        .records(RecordKind::OperationBinding)
        .filter_map(|r| r.as_operation_binding())
        .map(|b| b.operation.as_str())
        .filter(|op| !STANDARD_OPERATIONS.contains(op))
        .collect();
    let names = STANDARD_OPERATIONS
        .iter()
        .map(|op| (*op, true))
        .chain(bound.into_iter().map(|op| (op, false)));
    Ok(names
        .map(|(op, standard)| Operation {
            operation: op.to_owned(),
            standard,
            outcome: registry.resolve_operation(
                None,
                op,
                Some(environment),
                Some(service),
                deployment,
            ),
        })
        .collect())
}

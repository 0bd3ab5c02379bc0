//! A cell opened: the Service Context `env_resolve` answers for one service in one
//! environment, with per-value provenance. A model only; `page.rs` draws it.
//!
//! A cell is asked exactly as an agent would ask: [`Registry::resolve`] with the
//! environment and the service, no deployment. When that answers
//! `DEPLOYMENT_AMBIGUOUS` the error is kept (it is why an agent would have to ask) and
//! each candidate is resolved with its deployment id, so both are on the page.
//! No deployment at all is the agent's `DEPLOYMENT_NOT_FOUND`, shown as such.

use envreg_core::resolve::ServiceContext;
use envreg_core::{EnvError, ErrorCode, Registry};

/// One deployment's answer.
#[derive(Debug, Clone)]
pub struct Resolved {
    pub deployment: String,
    pub outcome: Result<ServiceContext, EnvError>,
}

/// What the cell page shows.
#[derive(Debug, Clone)]
pub struct Cell {
    pub environment: String,
    pub service: String,
    /// The error resolve gives for the cell as a whole, when it gives one
    /// (`DEPLOYMENT_AMBIGUOUS`, `DEPLOYMENT_NOT_FOUND`, a resolution failure).
    pub cell_error: Option<EnvError>,
    /// The contexts shown: the one answer, or each candidate's.
    pub contexts: Vec<Resolved>,
}

/// Resolve a cell, or one deployment of it. An unknown environment or service (or a
/// deployment that is not in this cell) is the registry's own error.
pub fn build(
    registry: &Registry,
    environment: &str,
    service: &str,
    deployment: Option<&str>,
) -> Result<Cell, EnvError> {
    envreg_core::id::check_id("environmentId", environment)?;
    envreg_core::id::check_id("serviceId", service)?;
    if let Some(d) = deployment {
        envreg_core::id::check_id("deploymentId", d)?;
    }
    let snapshot = registry.snapshot();
    if snapshot.environment(environment).is_none() {
        return Err(EnvError::not_found(
            envreg_core::RecordKind::Environment,
            environment,
        ));
    }
    if snapshot.service(service).is_none() {
        return Err(EnvError::not_found(
            envreg_core::RecordKind::Service,
            service,
        ));
    }
    let resolve = |d: Option<&str>| {
        envreg_core::resolve::resolve_in_snapshot(&snapshot, Some(environment), service, d, || {
            Err(EnvError::invalid_argument("no environment"))
        })
    };
    if let Some(d) = deployment {
        let outcome = resolve(Some(d));
        if let Err(e) = &outcome
            && e.code == ErrorCode::InvalidArgument
        {
            // The deployment belongs to another cell: the registry's own sentence.
            return Err(e.clone());
        }
        return Ok(Cell {
            environment: environment.to_owned(),
            service: service.to_owned(),
            cell_error: None,
            contexts: vec![Resolved {
                deployment: d.to_owned(),
                outcome,
            }],
        });
    }
    let (cell_error, contexts) = match resolve(None) {
        Ok(ctx) => (
            None,
            vec![Resolved {
                deployment: ctx.deployment.id.clone(),
                outcome: Ok(ctx),
            }],
        ),
        Err(e) if e.code == ErrorCode::DeploymentAmbiguous => {
            let contexts = snapshot
                .deployments_of(environment, service)
                .iter()
                .map(|d| Resolved {
                    deployment: d.clone(),
                    outcome: resolve(Some(d)),
                })
                .collect();
            (Some(e), contexts)
        }
        Err(e) => {
            // A single deployment that does not resolve: keep its id for the links.
            let contexts = snapshot
                .deployments_of(environment, service)
                .iter()
                .map(|d| Resolved {
                    deployment: d.clone(),
                    outcome: Err(e.clone()),
                })
                .collect();
            (Some(e), contexts)
        }
    };
    Ok(Cell {
        environment: environment.to_owned(),
        service: service.to_owned(),
        cell_error,
        contexts,
    })
}

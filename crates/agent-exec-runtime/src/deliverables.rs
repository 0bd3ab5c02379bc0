//! Reading deliverables (`targets`) back from the workspace, through the
//! `containment` crate: only a target whose canonical location is inside the root is
//! read, with `O_NOFOLLOW` on the canonical path and a re-check of what was opened.
//! A target that is, or passes through, a symbolic link leading out of the root is
//! refused with `agent.path_outside_workspace`, and none of its bytes are returned.

use std::collections::BTreeMap;
use std::io::ErrorKind;
use std::path::Path;

use agent_exec_contract::{Error, ErrorCode, SideEffects};

/// Reads every target under `root`. The first refusal wins: an outside target
/// (path_outside_workspace) before a missing one (missing_deliverable), since
/// reporting the escape matters more. `side_effects` is what the caller already
/// knows about the attempt.
pub fn read_targets(
    root: &Path,
    targets: &[String],
    side_effects: SideEffects,
) -> Result<BTreeMap<String, Vec<u8>>, Error> {
    let root = containment::Root::new(root).map_err(|e| {
        Error::new(
            ErrorCode::PathOutsideWorkspace,
            format!("workspace root is unusable for deliverables: {e}"),
            side_effects,
        )
    })?;
    let mut files = BTreeMap::new();
    let mut missing: Option<Error> = None;
    for target in targets {
        match root.read(target, root.path()) {
            Ok(bytes) => {
                files.insert(target.clone(), bytes);
            }
            Err(containment::Error::OutsideRoot {
                target: resolved, ..
            }) => {
                return Err(Error::new(
                    ErrorCode::PathOutsideWorkspace,
                    format!(
                        "target `{target}` resolves to {} outside the workspace root {}; \
                         it was not read",
                        resolved.display(),
                        root.path().display()
                    ),
                    side_effects,
                ));
            }
            Err(containment::Error::Open { source, .. })
                if source.kind() == ErrorKind::NotFound =>
            {
                missing.get_or_insert_with(|| {
                    Error::new(
                        ErrorCode::MissingDeliverable,
                        format!("target `{target}` was not produced in the workspace"),
                        side_effects,
                    )
                });
            }
            Err(e) => {
                missing.get_or_insert_with(|| {
                    Error::new(
                        ErrorCode::MissingDeliverable,
                        format!("target `{target}` could not be read: {e}"),
                        side_effects,
                    )
                });
            }
        }
    }
    match missing {
        Some(err) => Err(err),
        None => Ok(files),
    }
}

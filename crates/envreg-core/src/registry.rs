//! [`Registry`]: the handle every caller holds. Interim skeleton; bodies land next.

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use crate::config::Config;
use crate::error::EnvError;
use crate::kind::RecordKind;
use crate::read::{FindOutput, GetOutput, ListOutput};
use crate::session::{ContextOutput, SessionId};
use crate::snapshot::Snapshot;
use crate::validate::ValidateOutput;
use crate::write::{DeleteOutput, DeletePlan, SaveOutput, SavePlan};

/// An open registry. `Send + Sync`; share it behind an `Arc`.
#[derive(Debug)]
pub struct Registry {
    root: PathBuf,
    current: Mutex<Arc<Snapshot>>,
}

impl Registry {
    pub fn open(root: impl Into<PathBuf>) -> Result<Registry, EnvError> {
        let root = root.into();
        Ok(Registry {
            root,
            current: Mutex::new(Arc::new(Snapshot::empty())),
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }

    pub fn config(&self) -> Arc<Config> {
        self.snapshot().config.clone()
    }

    pub fn snapshot(&self) -> Arc<Snapshot> {
        match self.current.lock() {
            Ok(g) => g.clone(),
            Err(p) => p.into_inner().clone(),
        }
    }

    pub fn list(
        &self,
        _kind: Option<RecordKind>,
        _query: Option<&str>,
    ) -> Result<ListOutput, EnvError> {
        Err(EnvError::not_implemented("list"))
    }

    pub fn get(&self, _kind: RecordKind, _id: &str) -> Result<GetOutput, EnvError> {
        Err(EnvError::not_implemented("get"))
    }

    pub fn find(&self, _query: &str) -> Result<FindOutput, EnvError> {
        Err(EnvError::not_implemented("find"))
    }

    pub fn validate(&self) -> ValidateOutput {
        ValidateOutput {
            ok: true,
            counts: Default::default(),
            diagnostics: Vec::new(),
        }
    }

    pub fn plan_save(
        &self,
        _kind: RecordKind,
        _record: serde_json::Value,
        _dry_run: bool,
    ) -> Result<SavePlan, EnvError> {
        Err(EnvError::not_implemented("save"))
    }

    pub fn commit_save(&self, _plan: SavePlan) -> Result<SaveOutput, EnvError> {
        Err(EnvError::not_implemented("save"))
    }

    pub fn plan_delete(
        &self,
        _kind: RecordKind,
        _id: &str,
        _confirm: bool,
    ) -> Result<DeletePlan, EnvError> {
        Err(EnvError::not_implemented("delete"))
    }

    pub fn commit_delete(&self, _plan: DeletePlan) -> Result<DeleteOutput, EnvError> {
        Err(EnvError::not_implemented("delete"))
    }

    pub fn get_context(&self, session: &SessionId) -> ContextOutput {
        ContextOutput {
            session_id: session.to_string(),
            default_environment_id: None,
            persisted: false,
            warnings: Vec::new(),
        }
    }

    pub fn set_context(
        &self,
        _session: &SessionId,
        _env: Option<&str>,
    ) -> Result<ContextOutput, EnvError> {
        Err(EnvError::not_implemented("set_context"))
    }

    pub fn default_environment(
        &self,
        _session: Option<&SessionId>,
        explicit: Option<&str>,
    ) -> Result<String, EnvError> {
        explicit
            .map(str::to_owned)
            .ok_or_else(|| EnvError::not_implemented("default_environment"))
    }
}

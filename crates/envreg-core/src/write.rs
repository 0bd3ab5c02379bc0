//! Writes: `env_save` and `env_delete`, split into plan and commit (contract §3).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::approval::ApprovalRequest;
use crate::diagnostic::Diagnostic;
use crate::kind::RecordKind;

/// `env_save` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SaveOutput {
    pub id: String,
    pub kind: RecordKind,
    /// `true` only when no file existed before.
    pub created: bool,
    pub dry_run: bool,
    /// Broken references and other findings about the saved record.
    pub warnings: Vec<Diagnostic>,
}

/// Something that still refers to a record about to be deleted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Blocker {
    /// The referring record.
    pub kind: RecordKind,
    pub id: String,
    /// The referring field, e.g. `environmentRef`.
    pub path: String,
    pub message: String,
}

/// `env_delete` result.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DeleteOutput {
    pub id: String,
    pub kind: RecordKind,
    pub deleted: bool,
    pub blockers: Vec<Blocker>,
}

/// A validated save, ready to commit once approved.
#[derive(Debug, Clone)]
pub struct SavePlan {
    pub(crate) kind: RecordKind,
    pub(crate) id: String,
    pub(crate) dry_run: bool,
    pub(crate) created: bool,
    pub(crate) warnings: Vec<Diagnostic>,
    pub(crate) approval: Option<ApprovalRequest>,
}

impl SavePlan {
    /// `Some` when contract §1.3 and `writePolicy` require approval before commit.
    pub fn approval(&self) -> Option<ApprovalRequest> {
        self.approval.clone()
    }
    pub fn kind(&self) -> RecordKind {
        self.kind
    }
    pub fn id(&self) -> &str {
        &self.id
    }
    pub fn dry_run(&self) -> bool {
        self.dry_run
    }
    /// Whether the file does not exist yet (as of planning).
    pub fn creates(&self) -> bool {
        self.created
    }
    pub fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }
}

/// A checked delete, ready to commit once approved.
#[derive(Debug, Clone)]
pub struct DeletePlan {
    pub(crate) kind: RecordKind,
    pub(crate) id: String,
    pub(crate) confirm: bool,
    pub(crate) blockers: Vec<Blocker>,
    pub(crate) approval: Option<ApprovalRequest>,
}

impl DeletePlan {
    /// `Some` when `confirm` is true and `writePolicy.requireApprovalForDelete`.
    pub fn approval(&self) -> Option<ApprovalRequest> {
        self.approval.clone()
    }
    pub fn kind(&self) -> RecordKind {
        self.kind
    }
    pub fn id(&self) -> &str {
        &self.id
    }
    pub fn confirm(&self) -> bool {
        self.confirm
    }
    pub fn blockers(&self) -> &[Blocker] {
        &self.blockers
    }
}

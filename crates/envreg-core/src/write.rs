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
    pub(crate) document: SaveDocument,
}

impl SavePlan {
    /// `Some` when contract §1.3 and `writePolicy` require approval before commit;
    /// always `None` for a dry run, which writes nothing. Whatever
    /// `writePolicy.approvalChannel` says: the approver decides what that means.
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

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::{Map, Value};

use crate::config::Config;
use crate::diagnostic::Severity;
use crate::error::{EnvError, ErrorCode};
use crate::model::RecordBody;
use crate::snapshot::Snapshot;

/// The lock file that serializes writers across processes (hidden: never a record).
pub const LOCK_FILE: &str = ".envreg.lock";
/// Where old versions go before a replace or delete.
pub const BACKUP_DIR: &str = ".backups";

/// Extra fields a plan carries to its commit.
#[derive(Debug, Clone)]
pub(crate) struct SaveDocument {
    /// The record as given, minus host timestamps.
    pub map: Map<String, Value>,
}

static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Write `bytes` to `dir/name` so that a crash at any instant leaves either the old
/// file or the new one: temp file in the same folder (a dot-file, so the loader never
/// reads it), `fsync`, `rename` over the target, `fsync` of the folder. The temp name is
/// unique per process and call, for writers that hold no lock (session files).
pub fn write_atomically(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    publish_unlocked(dir, name, bytes, Publish::Replace)
}

/// [`write_atomically`] for a file that must not exist yet (`envreg init`): the same
/// temp file and `fsync`, then published with `link` instead of `rename`. `link` fails
/// with [`std::io::ErrorKind::AlreadyExists`] when the name is taken, even by a writer
/// racing us, so an existing file is never replaced; `rename` would replace it. The
/// temp file is removed either way. Readers see no file or the whole file, never part.
///
/// Not done: a fallback for file systems without hard links (FAT, some network mounts)
/// — there this fails rather than degrade to a non-atomic write.
pub fn create_atomically(dir: &Path, name: &str, bytes: &[u8]) -> std::io::Result<()> {
    publish_unlocked(dir, name, bytes, Publish::CreateNew)
}

/// The lock-free writers' common path: a temp name unique per process and call,
/// created exclusively, then published as `how` says.
fn publish_unlocked(dir: &Path, name: &str, bytes: &[u8], how: Publish) -> std::io::Result<()> {
    let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
    let temp = dir.join(format!(".{name}.tmp-{}-{n}", std::process::id()));
    let open = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .clone();
    publish_via(&temp, &open, dir, name, bytes, how)
}

/// [`write_atomically`] for writers holding the registry's [`WriteLock`]: the temp name
/// is fixed per target (`.<name>.tmp`), so a writer killed mid-save leaves at most one
/// leftover per record, which the next save replaces. Only one writer holds the lock,
/// so no two writers ever share that temp file.
///
/// The leftover is unlinked and the temp file created anew (`O_EXCL`), never opened
/// where it stands: a leftover that is a symbolic link (git stores them) would
/// otherwise be written through, truncating whatever it points at, and then renamed
/// over the record. `O_EXCL` also refuses a link planted between the unlink and the
/// create.
pub fn write_atomically_locked(
    _held: &WriteLock,
    dir: &Path,
    name: &str,
    bytes: &[u8],
) -> std::io::Result<()> {
    let temp = dir.join(format!(".{name}.tmp"));
    match std::fs::remove_file(&temp) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let open = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .clone();
    publish_via(&temp, &open, dir, name, bytes, Publish::Replace)
}

/// How a fully written, synced temp file takes its final name.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Publish {
    /// `rename` over whatever is there.
    Replace,
    /// `link`, which refuses an existing name; then drop the temp name.
    CreateNew,
}

fn publish_via(
    temp: &Path,
    open: &std::fs::OpenOptions,
    dir: &Path,
    name: &str,
    bytes: &[u8],
    publish: Publish,
) -> std::io::Result<()> {
    let result = (|| {
        let mut file = open.open(temp)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        drop(file);
        match publish {
            Publish::Replace => std::fs::rename(temp, dir.join(name))?,
            Publish::CreateNew => {
                let linked = std::fs::hard_link(temp, dir.join(name));
                std::fs::remove_file(temp)?;
                linked?;
            }
        }
        sync_dir(dir)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(temp);
    }
    result
}

/// `fsync` a folder so a rename or unlink in it is durable.
pub fn sync_dir(dir: &Path) -> std::io::Result<()> {
    std::fs::File::open(dir)?.sync_all()
}

/// The cross-process write lock: an exclusive `flock` on `<root>/.envreg.lock`, held
/// until dropped. Readers never take it (they see whole files thanks to rename). The
/// lock file is opened only inside the registry (a link out is refused, not created).
#[derive(Debug)]
pub struct WriteLock {
    _file: std::fs::File,
}

impl WriteLock {
    pub fn acquire(root: &Path) -> Result<WriteLock, EnvError> {
        let inside = crate::files::open_root(root).map_err(|_| {
            EnvError::storage(
                "open the write lock",
                LOCK_FILE,
                &std::io::Error::from(std::io::ErrorKind::NotFound),
            )
        })?;
        let file = inside
            .open(
                LOCK_FILE,
                inside.path(),
                std::fs::OpenOptions::new()
                    .read(true)
                    .write(true)
                    .create(true)
                    .truncate(false),
            )
            .map_err(|e| match e {
                containment::Error::OutsideRoot { .. } => crate::files::refused_write(
                    LOCK_FILE,
                    &crate::files::Unread::Outside(
                        "it is a symbolic link that leads out of the registry".to_owned(),
                    ),
                ),
                containment::Error::Open { source, .. }
                | containment::Error::Unreadable { source, .. } => {
                    EnvError::storage("open the write lock", LOCK_FILE, &source)
                }
                _ => EnvError::storage(
                    "open the write lock",
                    LOCK_FILE,
                    &std::io::Error::from(std::io::ErrorKind::InvalidInput),
                ),
            })?;
        file.lock()
            .map_err(|e| EnvError::storage("take the write lock", LOCK_FILE, &e))?;
        Ok(WriteLock { _file: file })
    }
}

fn now_utc() -> time::OffsetDateTime {
    let now = time::OffsetDateTime::now_utc();
    now.replace_nanosecond(0).unwrap_or(now)
}

fn rfc3339(t: time::OffsetDateTime) -> String {
    t.format(&time::format_description::well_known::Rfc3339)
        .unwrap_or_else(|_| "1970-01-01T00:00:00Z".to_owned())
}

fn compact_stamp(t: time::OffsetDateTime) -> String {
    format!(
        "{:04}{:02}{:02}T{:02}{:02}{:02}Z",
        t.year(),
        u8::from(t.month()),
        t.day(),
        t.hour(),
        t.minute(),
        t.second()
    )
}

fn record_invalid(issues: Vec<Value>) -> EnvError {
    let first = issues
        .first()
        .and_then(|i| i.get("message"))
        .and_then(Value::as_str)
        .unwrap_or("record is invalid")
        .to_owned();
    let more = if issues.len() > 1 {
        format!(" (and {} more issues)", issues.len() - 1)
    } else {
        String::new()
    };
    EnvError::new(ErrorCode::RecordInvalid, format!("{first}{more}"))
        .with_details(serde_json::json!({ "issues": issues }))
}

fn issue(path: Option<&str>, message: impl Into<String>) -> Value {
    let mut v = serde_json::json!({ "message": message.into() });
    if let Some(p) = path {
        v["path"] = Value::String(p.to_owned());
    }
    v
}

/// Deserialize a JSON record into the typed model of its kind, with the field paths of
/// the keys the model does not know (see `load::parse_typed_tracking`).
fn typed_body(
    kind: crate::RecordKind,
    value: Value,
) -> Result<(RecordBody, Vec<String>), serde_json::Error> {
    use crate::RecordKind as K;
    let mut unknown = Vec::new();
    let body = match kind {
        K::Environment => RecordBody::Environment(typed_via_yaml_rules(value, &mut unknown)?),
        K::Service => RecordBody::Service(typed_via_yaml_rules(value, &mut unknown)?),
        K::Deployment => RecordBody::Deployment(typed_via_yaml_rules(value, &mut unknown)?),
        K::RuleProfile => RecordBody::RuleProfile(typed_via_yaml_rules(value, &mut unknown)?),
        K::OperationBinding => {
            RecordBody::OperationBinding(typed_via_yaml_rules(value, &mut unknown)?)
        }
    };
    Ok((body, unknown))
}

fn typed_via_yaml_rules<T: serde::de::DeserializeOwned>(
    value: Value,
    unknown: &mut Vec<String>,
) -> Result<T, serde_json::Error> {
    serde_ignored::deserialize(value, |path| {
        unknown.push(crate::load::field_path(&path));
    })
}

/// Render the document that will be written: the given fields in the given order, then
/// the host timestamps.
fn render_yaml(
    map: &Map<String, Value>,
    created_at: &str,
    updated_at: &str,
) -> Result<(String, Value), EnvError> {
    let mut doc = map.clone();
    doc.insert("createdAt".to_owned(), Value::String(created_at.to_owned()));
    doc.insert("updatedAt".to_owned(), Value::String(updated_at.to_owned()));
    let doc = Value::Object(doc);
    let yaml = serde_saphyr::to_string(&doc)
        .map_err(|_| EnvError::internal("the record could not be rendered as YAML"))?;
    Ok((yaml, doc))
}

impl crate::Registry {
    /// Validate a save and decide whether it needs approval; writes nothing.
    pub fn plan_save(
        &self,
        kind: crate::RecordKind,
        record: Value,
        dry_run: bool,
    ) -> Result<SavePlan, EnvError> {
        let Value::Object(mut map) = record else {
            return Err(record_invalid(vec![issue(
                None,
                "record must be an object (a mapping of fields)",
            )]));
        };
        let id = match map.get("id") {
            Some(Value::String(id)) => id.clone(),
            Some(_) => {
                return Err(record_invalid(vec![issue(
                    Some("id"),
                    "id must be a string",
                )]));
            }
            None => return Err(record_invalid(vec![issue(Some("id"), "id is required")])),
        };
        crate::id::check_id("record.id", &id)?;
        // Host timestamps are ours to set; supplied values are ignored (contract §3.1).
        map.remove("createdAt");
        map.remove("updatedAt");
        let (body, unknown) = typed_body(kind, Value::Object(map.clone()))
            .map_err(|e| record_invalid(vec![issue(None, e.to_string())]))?;
        // Unknown keys are kept and warned about; in a binding's match or policy they
        // are refused (fail closed), as the loader would refuse the file.
        let unknown = crate::record_checks::unknown_fields(
            crate::record_checks::FieldOwner::Record(kind),
            &unknown,
            None,
        );
        let issues: Vec<Value> = crate::validate::check_record(&body, None)
            .into_iter()
            .chain(unknown.iter().cloned())
            .filter(|d| d.severity == Severity::Error)
            .map(|d| issue(d.path.as_deref(), d.message))
            .collect();
        if !issues.is_empty() {
            return Err(record_invalid(issues));
        }
        let snapshot = self.snapshot();
        let config = snapshot.config().clone();
        let created = self.files_for_id(kind, &id).is_empty();
        check_record_limit(&snapshot, &config, created)?;
        // Size is checked on the exact bytes that would be written.
        let stamp = rfc3339(now_utc());
        let (yaml, _) = render_yaml(&map, &stamp, &stamp)?;
        check_size(&yaml, &config)?;
        let rel = format!("{}/{id}.yaml", kind.dir_name());
        let mut warnings = save_warnings(&snapshot, &body, &rel);
        warnings.extend(unknown.into_iter().map(|d| d.in_file(rel.clone())));
        // A dry run writes nothing (contract §3.1), so the table asks nothing for it.
        let approval = save_approval(&config, &snapshot, &body, dry_run);
        Ok(SavePlan {
            kind,
            id,
            dry_run,
            created,
            warnings,
            approval,
            document: SaveDocument { map },
        })
    }

    /// Write a planned save (unless it is a dry run): lock, back up, atomic write,
    /// reload. Returns the contract's `env_save` value.
    pub fn commit_save(&self, plan: SavePlan) -> Result<SaveOutput, EnvError> {
        if plan.dry_run {
            return Ok(SaveOutput {
                id: plan.id,
                kind: plan.kind,
                created: plan.created,
                dry_run: true,
                warnings: plan.warnings,
            });
        }
        let kind = plan.kind;
        let id = plan.id.as_str();
        let lock = WriteLock::acquire(self.inside().path())?;
        let snapshot = self.snapshot();
        let config = snapshot.config().clone();
        // The folder at its canonical target, only inside the registry; below it every
        // name is one of ours, so no further link is followed (rename and unlink act on
        // the name itself, temp files are created with O_EXCL).
        let dir = crate::files::folder_to_write(self.inside(), kind.dir_name())?;
        let final_name = format!("{id}.yaml");
        let rel = format!("{}/{final_name}", kind.dir_name());
        std::fs::create_dir_all(&dir)
            .map_err(|e| EnvError::storage("create the folder", kind.dir_name(), &e))?;
        let existing: Vec<String> = [format!("{id}.yaml"), format!("{id}.yml")]
            .into_iter()
            .filter(|name| std::fs::symlink_metadata(dir.join(name)).is_ok())
            .collect();
        let created = existing.is_empty();
        check_record_limit(&snapshot, &config, created)?;
        let now = now_utc();
        let created_at = existing
            .iter()
            .find_map(|name| old_created_at(self.inside(), &format!("{}/{name}", kind.dir_name())))
            .unwrap_or_else(|| rfc3339(now));
        let (yaml, doc) = render_yaml(&plan.document.map, &created_at, &rfc3339(now))?;
        check_size(&yaml, &config)?;
        // Never write what would not read back identically.
        if crate::load::parse_document(&yaml).ok().as_ref() != Some(&doc) {
            return Err(EnvError::internal(
                "the record does not survive a YAML round trip; nothing was written",
            ));
        }
        for name in &existing {
            self.back_up(&lock, kind, id, name, now)?;
        }
        write_atomically_locked(&lock, &dir, &final_name, yaml.as_bytes())
            .map_err(|e| EnvError::storage("write", &rel, &e))?;
        // A save writes `.yaml`; an old `.yml` of the same id would now be a duplicate.
        for name in existing.iter().filter(|n| **n != final_name) {
            std::fs::remove_file(dir.join(name)).map_err(|e| {
                EnvError::storage("remove", &format!("{}/{name}", kind.dir_name()), &e)
            })?;
            sync_dir(&dir).map_err(|e| EnvError::storage("sync", kind.dir_name(), &e))?;
        }
        let mut touched = vec![(kind, final_name.clone())];
        touched.extend(existing.into_iter().map(|n| (kind, n)));
        let snapshot = self.reload_files(&touched);
        let Some(saved) = snapshot.get(kind, id) else {
            return Err(EnvError::internal(format!(
                "{rel} was written but did not load; see env_validate"
            )));
        };
        let warnings = save_warnings(&snapshot, &saved.body, &rel);
        Ok(SaveOutput {
            id: plan.id.clone(),
            kind,
            created,
            dry_run: false,
            warnings,
        })
    }

    fn back_up(
        &self,
        lock: &WriteLock,
        kind: crate::RecordKind,
        id: &str,
        name: &str,
        now: time::OffsetDateTime,
    ) -> Result<(), EnvError> {
        let rel_src = format!("{}/{name}", kind.dir_name());
        // The old file is read only inside the registry: a record file that links out is
        // neither copied into .backups nor replaced; a human removes the link.
        let bytes = crate::files::read_capped(self.inside(), &rel_src, u64::MAX, &mut None)
            .map_err(|why| crate::files::refused_write(&rel_src, &why))?;
        let rel_dir = format!("{BACKUP_DIR}/{}", kind.dir_name());
        let backup_dir = crate::files::folder_to_write(self.inside(), &rel_dir)?;
        std::fs::create_dir_all(&backup_dir)
            .map_err(|e| EnvError::storage("create", &rel_dir, &e))?;
        let stamp = compact_stamp(now);
        let mut backup_name = format!("{id}.{stamp}.yaml");
        let mut n = 1;
        while backup_dir.join(&backup_name).exists() {
            backup_name = format!("{id}.{stamp}-{n}.yaml");
            n += 1;
        }
        write_atomically_locked(lock, &backup_dir, &backup_name, &bytes)
            .map_err(|e| EnvError::storage("write", &format!("{rel_dir}/{backup_name}"), &e))
    }

    /// Check a delete: the record must exist; `blockers` lists what refers to it.
    pub fn plan_delete(
        &self,
        kind: crate::RecordKind,
        id: &str,
        confirm: bool,
    ) -> Result<DeletePlan, EnvError> {
        crate::id::check_id("id", id)?;
        let snapshot = self.snapshot();
        if snapshot.get(kind, id).is_none() && self.files_for_id(kind, id).is_empty() {
            return Err(EnvError::not_found(kind, id));
        }
        let blockers = blockers_of(&snapshot, kind, id);
        let approval = crate::approval::required(
            &snapshot.config().write_policy,
            &crate::approval::WriteCall::Delete { kind, id, confirm },
        );
        Ok(DeletePlan {
            kind,
            id: id.to_owned(),
            confirm,
            blockers,
            approval,
        })
    }

    /// Carry out a planned delete. `confirm: false` only reports blockers; `confirm:
    /// true` refuses with `RECORD_IN_USE` while anything refers to the record, else
    /// backs up and unlinks.
    pub fn commit_delete(&self, plan: DeletePlan) -> Result<DeleteOutput, EnvError> {
        let (kind, id) = (plan.kind, plan.id.as_str());
        if !plan.confirm {
            return Ok(DeleteOutput {
                id: plan.id.clone(),
                kind,
                deleted: false,
                blockers: plan.blockers,
            });
        }
        let lock = WriteLock::acquire(self.inside().path())?;
        let snapshot = self.snapshot();
        let blockers = blockers_of(&snapshot, kind, id);
        if !blockers.is_empty() {
            let list: Vec<String> = blockers
                .iter()
                .map(|b| format!("{} {} ({})", b.kind, b.id, b.path))
                .collect();
            return Err(EnvError::new(
                ErrorCode::RecordInUse,
                format!(
                    "{kind} {id} is still referenced by {}; change those first",
                    list.join(", ")
                ),
            )
            .with_details(serde_json::json!({ "blockers": blockers })));
        }
        let dir = crate::files::folder_to_write(self.inside(), kind.dir_name())?;
        let names: Vec<String> = [format!("{id}.yaml"), format!("{id}.yml")]
            .into_iter()
            .filter(|name| std::fs::symlink_metadata(dir.join(name)).is_ok())
            .collect();
        if names.is_empty() {
            return Err(EnvError::not_found(kind, id));
        }
        let now = now_utc();
        for name in &names {
            self.back_up(&lock, kind, id, name, now)?;
        }
        for name in &names {
            std::fs::remove_file(dir.join(name)).map_err(|e| {
                EnvError::storage("remove", &format!("{}/{name}", kind.dir_name()), &e)
            })?;
        }
        sync_dir(&dir).map_err(|e| EnvError::storage("sync", kind.dir_name(), &e))?;
        let touched: Vec<(crate::RecordKind, String)> =
            names.into_iter().map(|n| (kind, n)).collect();
        self.reload_files(&touched);
        Ok(DeleteOutput {
            id: plan.id.clone(),
            kind,
            deleted: true,
            blockers: Vec::new(),
        })
    }
}

fn check_record_limit(snapshot: &Snapshot, config: &Config, created: bool) -> Result<(), EnvError> {
    let max = config.limits.max_records;
    if created && snapshot.total() >= max {
        return Err(EnvError::new(
            ErrorCode::RecordLimitExceeded,
            format!(
                "the registry already holds {} records; limits.maxRecords is {max}",
                snapshot.total()
            ),
        )
        .with_details(serde_json::json!({ "maxRecords": max })));
    }
    Ok(())
}

fn check_size(yaml: &str, config: &Config) -> Result<(), EnvError> {
    let max = config.limits.max_record_bytes;
    if yaml.len() as u64 > max {
        return Err(EnvError::new(
            ErrorCode::RecordTooLarge,
            format!(
                "the record is {} bytes as YAML; limits.maxRecordBytes is {max}",
                yaml.len()
            ),
        )
        .with_details(serde_json::json!({ "bytes": yaml.len(), "maxRecordBytes": max })));
    }
    Ok(())
}

fn old_created_at(root: &containment::Root, rel: &str) -> Option<String> {
    let bytes = crate::files::read_capped(root, rel, 16 << 20, &mut None).ok()?;
    let text = String::from_utf8(bytes).ok()?;
    let doc = crate::load::parse_document(&text).ok()?;
    let at = doc.get("createdAt")?.as_str()?;
    time::OffsetDateTime::parse(at, &time::format_description::well_known::Rfc3339).ok()?;
    Some(at.to_owned())
}

/// Findings about a record being saved, all reported as warnings: the write is not
/// rolled back for them (contract §3.1).
fn save_warnings(snapshot: &Snapshot, body: &RecordBody, rel: &str) -> Vec<crate::Diagnostic> {
    let mut out = crate::validate::broken_references(snapshot, body, rel);
    if let RecordBody::Environment(env) = body {
        out.extend(crate::validate::credential_warnings(env, rel));
    }
    for d in &mut out {
        d.severity = Severity::Warning;
    }
    out
}

/// Contract §1.3 for a save: the facts the table needs (is the record production,
/// before *or* after the save), then [`crate::approval::required`].
///
/// Decision: `approvalChannel: host` does not drop the request. The channel names who
/// gates the call (data model §12: the MCP host); the MCP approver answers for the host,
/// while the CLI, which has no host in front of it, still asks on the terminal.
fn save_approval(
    config: &Config,
    snapshot: &Snapshot,
    body: &RecordBody,
    dry_run: bool,
) -> Option<ApprovalRequest> {
    let (kind, id, production) = match body {
        RecordBody::Environment(e) => (
            crate::RecordKind::Environment,
            e.id.as_str(),
            e.tier == crate::model::Tier::Production || snapshot.is_production(&e.id),
        ),
        RecordBody::Deployment(d) => {
            let was = snapshot
                .deployment(&d.id)
                .is_some_and(|old| snapshot.is_production(&old.environment_ref));
            (
                crate::RecordKind::Deployment,
                d.id.as_str(),
                was || snapshot.is_production(&d.environment_ref),
            )
        }
        _ => return None,
    };
    crate::approval::required(
        &config.write_policy,
        &crate::approval::WriteCall::Save {
            kind,
            id,
            production,
            dry_run,
        },
    )
}

/// Every record field that refers to `kind`/`id`.
pub(crate) fn blockers_of(snapshot: &Snapshot, kind: crate::RecordKind, id: &str) -> Vec<Blocker> {
    let mut out = Vec::new();
    for from_kind in crate::RecordKind::ALL {
        for rec in snapshot.records(from_kind) {
            for (path, target_kind, target) in crate::validate::references_of(&rec.body) {
                if target_kind == kind && target == id && !(from_kind == kind && rec.id() == id) {
                    out.push(Blocker {
                        kind: from_kind,
                        id: rec.id().to_owned(),
                        message: format!("{from_kind} {} refers to it in {path}", rec.id()),
                        path,
                    });
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn atomic_write_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        write_atomically(dir.path(), "a.yaml", b"one").unwrap();
        write_atomically(dir.path(), "a.yaml", b"two").unwrap();
        assert_eq!(std::fs::read(dir.path().join("a.yaml")).unwrap(), b"two");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn failed_write_cleans_up_and_reports() {
        let dir = tempfile::tempdir().unwrap();
        // The target name is a non-empty folder: rename must fail.
        std::fs::create_dir_all(dir.path().join("a.yaml/x")).unwrap();
        assert!(write_atomically(dir.path(), "a.yaml", b"x").is_err());
        let names: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.file_name())
            .collect();
        assert_eq!(names, ["a.yaml"]);
    }

    #[test]
    fn create_atomically_never_replaces_and_leaves_no_temp() {
        let dir = tempfile::tempdir().unwrap();
        create_atomically(dir.path(), "a.yaml", b"one").unwrap();
        assert_eq!(std::fs::read(dir.path().join("a.yaml")).unwrap(), b"one");
        let err = create_atomically(dir.path(), "a.yaml", b"two").unwrap_err();
        assert_eq!(err.kind(), std::io::ErrorKind::AlreadyExists);
        assert_eq!(std::fs::read(dir.path().join("a.yaml")).unwrap(), b"one");
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn backup_stamp_format() {
        let t = time::macros::datetime!(2026-11-01 09:08:07 UTC);
        assert_eq!(compact_stamp(t), "20261101T090807Z");
        assert_eq!(rfc3339(t), "2026-11-01T09:08:07Z");
    }
}

//! The skill catalog (data model §7): which Agent Skills exist on this machine.
//!
//! An operation binding names a skill; `env_resolve_operation` reports whether that
//! skill is installed. The catalog is found the way DeepSeek Harness's filesystem
//! skill provider finds skills, in this order (the first location holding a skill
//! wins, so a project can shadow a user-wide skill):
//!
//! | location | `source` |
//! |---|---|
//! | `<project>/.dsh/skills` | `project-dsh` |
//! | `<project>/.agents/skills` | `project-agents` |
//! | `<project>/.claude/skills` | `project-claude` |
//! | each `skills.dirs` entry of `envreg.yaml`, relative to the registry | `custom` |
//! | `$DSH_HOME/skills` (`DSH_HOME` defaults to `~/.dsh`) | `user-dsh` |
//! | `~/.agents/skills` | `user-agents` |
//! | `~/.claude/skills` | `user-claude` |
//!
//! A skill is `<dir>/<name>/SKILL.md` or `<dir>/<name>.md` whose text starts with YAML
//! front matter (`---` … `---`) holding `description` and, optionally, `name` (the
//! folder or file stem when absent). A Markdown file without front matter (a
//! `README.md` beside the skills) is not a skill and is skipped silently.
//!
//! # What "project" means
//! The project is the nearest folder, starting at the registry folder itself and
//! walking up, that holds a `.git` entry (a directory, or a file for worktrees and
//! submodules): the registry is meant to live in git next to the code it describes, so
//! the repository is the project. A registry outside any git repository takes its
//! parent folder as the project. (Decision: we do not shell out to `git rev-parse`;
//! "no execution" is a cross-tool rule, and looking for `.git` gives the same answer
//! for every layout we support.)
//!
//! # Complete, missing, unknown
//! - A skill found in any location is `available: true`.
//! - The catalog is *complete* when at least one location exists, every existing
//!   location could be listed, and every configured `skills.dirs` entry exists. A
//!   skill missing from a complete catalog is `SKILL_UNAVAILABLE` (fail closed).
//! - Otherwise (no location exists at all, a folder is unreadable, a configured folder
//!   is missing) the answer is `available: "unknown"` with a
//!   `SKILL_REGISTRY_UNAVAILABLE` warning that names the reason; the call succeeds.
//!
//! # Invariants
//! - A skill name is data, never a path: names containing `/`, `\`, `..` or starting
//!   with `.` are never looked up on disk; they are simply not in the catalog.
//! - Lookups first probe `<dir>/<name>/SKILL.md` and `<dir>/<name>.md` (a few `stat`s),
//!   and list folders only when the probe fails, so the common case stays cheap and
//!   nothing is cached that could go stale.
//! - Only the first [`MAX_SKILL_FILE_BYTES`] bytes of a skill file are read.
//! - Skill folders found in the registry's own tree are read only inside it (issue 14
//!   §1, through [`containment`]): the three project locations only inside the project,
//!   a `skills.dirs` entry that lies inside the registry only inside the registry. A
//!   skill file or folder there that is a symbolic link out is not read; it is reported
//!   as a problem, which makes the catalog incomplete (`unknown`, fail closed). A
//!   `skills.dirs` entry the user configured outside the registry (absolute, or climbing
//!   out with `..`), and the user-level locations, are the user's choice and stay
//!   unconfined. Decision: the project (the git repository) is the boundary for the
//!   project locations, because that is what the registry's contributors push to.

use std::fs;
use std::io::{self, Read};
use std::path::{Path, PathBuf};

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Only this much of a skill file is read to find its front matter.
pub const MAX_SKILL_FILE_BYTES: u64 = 64 * 1024;

/// Where a skill was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum SkillSource {
    ProjectDsh,
    ProjectAgents,
    ProjectClaude,
    Custom,
    UserDsh,
    UserAgents,
    UserClaude,
}

impl SkillSource {
    pub fn as_str(self) -> &'static str {
        match self {
            SkillSource::ProjectDsh => "project-dsh",
            SkillSource::ProjectAgents => "project-agents",
            SkillSource::ProjectClaude => "project-claude",
            SkillSource::Custom => "custom",
            SkillSource::UserDsh => "user-dsh",
            SkillSource::UserAgents => "user-agents",
            SkillSource::UserClaude => "user-claude",
        }
    }
}

/// One folder that may hold skills.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillLocation {
    pub source: SkillSource,
    pub dir: PathBuf,
    /// Named in `envreg.yaml`: its absence makes the catalog incomplete.
    pub configured: bool,
}

/// The inputs the catalog is built from; [`SkillRoots::discover`] fills them from the
/// registry and the process environment, tests fill them by hand.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillRoots {
    /// The project folder (see the module docs); `None` skips the project locations.
    pub project: Option<PathBuf>,
    /// `skills.dirs`, already joined to the registry root.
    pub custom: Vec<PathBuf>,
    /// `$DSH_HOME`, else `~/.dsh`.
    pub dsh_home: Option<PathBuf>,
    /// The user's home folder.
    pub home: Option<PathBuf>,
    /// The registry folder: `custom` entries inside it are confined to it.
    pub registry: Option<PathBuf>,
}

impl SkillRoots {
    /// Roots for a registry at `registry_root` with `skills.dirs` entries `custom_dirs`
    /// (relative entries are joined to the registry root), reading `DSH_HOME` and the
    /// home folder from the environment.
    pub fn discover<P: AsRef<Path>>(registry_root: &Path, custom_dirs: &[P]) -> SkillRoots {
        let home = dirs::home_dir();
        let dsh_home = std::env::var_os("DSH_HOME")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.as_ref().map(|h| h.join(".dsh")));
        SkillRoots {
            project: Some(project_root(registry_root)),
            custom: custom_dirs
                .iter()
                .map(|d| registry_root.join(d.as_ref()))
                .collect(),
            dsh_home,
            home,
            registry: Some(registry_root.to_path_buf()),
        }
    }

    /// The locations in lookup order.
    pub fn locations(&self) -> Vec<SkillLocation> {
        let mut out = Vec::new();
        let mut push = |source, dir: PathBuf, configured| {
            out.push(SkillLocation {
                source,
                dir,
                configured,
            })
        };
        if let Some(project) = &self.project {
            push(SkillSource::ProjectDsh, project.join(".dsh/skills"), false);
            push(
                SkillSource::ProjectAgents,
                project.join(".agents/skills"),
                false,
            );
            push(
                SkillSource::ProjectClaude,
                project.join(".claude/skills"),
                false,
            );
        }
        for dir in &self.custom {
            push(SkillSource::Custom, dir.clone(), true);
        }
        if let Some(dsh_home) = &self.dsh_home {
            push(SkillSource::UserDsh, dsh_home.join("skills"), false);
        }
        if let Some(home) = &self.home {
            push(SkillSource::UserAgents, home.join(".agents/skills"), false);
            push(SkillSource::UserClaude, home.join(".claude/skills"), false);
        }
        out
    }
}

/// The project folder of a registry: the nearest folder at or above it holding `.git`,
/// else its parent (else the registry folder itself, for a registry at `/`).
pub fn project_root(registry_root: &Path) -> PathBuf {
    let absolute = if registry_root.is_absolute() {
        registry_root.to_path_buf()
    } else {
        std::env::current_dir()
            .map(|cwd| cwd.join(registry_root))
            .unwrap_or_else(|_| registry_root.to_path_buf())
    };
    for dir in absolute.ancestors() {
        if dir.join(".git").symlink_metadata().is_ok() {
            return dir.to_path_buf();
        }
    }
    absolute.parent().map(Path::to_path_buf).unwrap_or(absolute)
}

/// A skill present in the catalog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillEntry {
    pub name: String,
    pub description: String,
    pub source: SkillSource,
    pub file: PathBuf,
}

/// The answer to "is skill `name` installed?".
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SkillLookup {
    Found(SkillEntry),
    /// Not in a complete catalog. `searched` lists every folder looked in.
    Missing {
        searched: Vec<PathBuf>,
    },
    /// The catalog is incomplete, so absence proves nothing. `reasons` are sentences
    /// for the `SKILL_REGISTRY_UNAVAILABLE` warning.
    Unknown {
        reasons: Vec<String>,
    },
}

/// The skill catalog over a fixed list of locations. Holds no cached listing: each
/// lookup reads the disk, so a skill installed a second ago is seen.
#[derive(Debug, Clone)]
pub struct SkillCatalog {
    locations: Vec<SkillLocation>,
    /// Per location, the folder its files must stay inside.
    confines: Vec<Confine>,
}

/// Where one location's files may lead.
#[derive(Debug, Clone)]
enum Confine {
    /// Anywhere: a user-level location, or one the user configured outside the registry.
    Free,
    /// Only inside this folder (the project, or the registry).
    Within(containment::Root),
    /// Should be confined, but the folder could not be made a root: nothing is read.
    Broken(String),
}

impl Confine {
    fn within(folder: &Path) -> Confine {
        match crate::files::open_root(folder) {
            Ok(root) => Confine::Within(root),
            // Nothing there, so nothing below it to read (the catalog is built per call).
            Err(_)
                if fs::symlink_metadata(folder)
                    .is_err_and(|e| e.kind() == io::ErrorKind::NotFound) =>
            {
                Confine::Free
            }
            Err(_) => Confine::Broken(format!(
                "{} cannot be examined, so no skill below it is read",
                folder.display()
            )),
        }
    }
}

/// `path` with `.` and `..` applied lexically, made absolute first.
fn lexical(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut out = PathBuf::new();
    for part in absolute.components() {
        match part {
            std::path::Component::ParentDir => {
                out.pop();
            }
            std::path::Component::CurDir => {}
            other => out.push(other),
        }
    }
    out
}

fn confines_of(roots: &SkillRoots, locations: &[SkillLocation]) -> Vec<Confine> {
    let registry = roots.registry.as_deref().map(lexical);
    locations
        .iter()
        .map(|location| match location.source {
            SkillSource::ProjectDsh | SkillSource::ProjectAgents | SkillSource::ProjectClaude => {
                match &roots.project {
                    Some(project) => Confine::within(project),
                    None => Confine::Free,
                }
            }
            SkillSource::Custom => match &registry {
                Some(registry) if lexical(&location.dir).starts_with(registry) => {
                    Confine::within(registry)
                }
                _ => Confine::Free,
            },
            SkillSource::UserDsh | SkillSource::UserAgents | SkillSource::UserClaude => {
                Confine::Free
            }
        })
        .collect()
}

/// The error a confined read reports: names the file or folder, never its content.
fn leads_out(path: &Path) -> io::Error {
    io::Error::other(format!(
        "{} is or passes through a symbolic link that leads out of the folder it was found in; not read",
        path.display()
    ))
}

/// A full listing: every valid skill (first location wins per name) and the reasons
/// the listing is incomplete, if any.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillListing {
    pub skills: Vec<SkillEntry>,
    pub problems: Vec<String>,
    /// True when at least one location exists.
    pub any_location: bool,
}

impl SkillListing {
    /// Complete: absence from this listing proves a skill is not installed.
    pub fn is_complete(&self) -> bool {
        self.any_location && self.problems.is_empty()
    }
}

impl SkillCatalog {
    pub fn new(roots: &SkillRoots) -> SkillCatalog {
        let locations = roots.locations();
        let confines = confines_of(roots, &locations);
        SkillCatalog {
            locations,
            confines,
        }
    }

    /// A catalog over explicit locations, none of them confined.
    pub fn from_locations(locations: Vec<SkillLocation>) -> SkillCatalog {
        let confines = vec![Confine::Free; locations.len()];
        SkillCatalog {
            locations,
            confines,
        }
    }

    pub fn locations(&self) -> &[SkillLocation] {
        &self.locations
    }

    /// Looks a skill up by name.
    pub fn lookup(&self, name: &str) -> SkillLookup {
        if is_safe_skill_name(name) {
            // Fast path: the skill lives under its own name, as it nearly always does.
            for (location, confine) in self.locations.iter().zip(&self.confines) {
                for file in [
                    location.dir.join(name).join("SKILL.md"),
                    location.dir.join(format!("{name}.md")),
                ] {
                    if let Ok(Some(entry)) = read_skill(&file, location.source, name, confine)
                        && entry.name == name
                    {
                        return SkillLookup::Found(entry);
                    }
                }
            }
        }
        // Slow path: list everything, which also tells whether absence is conclusive
        // (and finds a skill whose front-matter name differs from its folder).
        let listing = self.list();
        if let Some(entry) = listing.skills.iter().find(|s| s.name == name) {
            return SkillLookup::Found(entry.clone());
        }
        if listing.is_complete() {
            SkillLookup::Missing {
                searched: self.locations.iter().map(|l| l.dir.clone()).collect(),
            }
        } else {
            let mut reasons = listing.problems;
            if !listing.any_location {
                reasons.push(format!(
                    "no skill folder exists (looked in {})",
                    self.locations
                        .iter()
                        .map(|l| l.dir.display().to_string())
                        .collect::<Vec<_>>()
                        .join(", ")
                ));
            }
            SkillLookup::Unknown { reasons }
        }
    }

    /// Lists every skill in every location.
    pub fn list(&self) -> SkillListing {
        let mut listing = SkillListing::default();
        for (location, confine) in self.locations.iter().zip(&self.confines) {
            let dir = &location.dir;
            let outside = match confine {
                Confine::Free => None,
                Confine::Within(root) => match root.contains(dir, root.path()) {
                    Ok(containment::Verdict::Inside(_)) => None,
                    Ok(containment::Verdict::Outside(_)) => Some(leads_out(dir)),
                    Err(e) => Some(io::Error::other(format!("{}: {e}", dir.display()))),
                },
                Confine::Broken(why) => Some(io::Error::other(why.clone())),
            };
            if let Some(e) = outside {
                // The folder exists (as a link) but is not ours to list.
                listing.any_location = true;
                listing.problems.push(format!(
                    "skills folder {} is not listed: {}",
                    dir.display(),
                    io_reason(&e)
                ));
                continue;
            }
            let entries = match fs::read_dir(dir) {
                Ok(entries) => entries,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    if location.configured {
                        listing.problems.push(format!(
                            "configured skills folder {} does not exist",
                            dir.display()
                        ));
                    }
                    continue;
                }
                Err(e) => {
                    listing.any_location = true;
                    listing.problems.push(format!(
                        "skills folder {} is unreadable: {}",
                        dir.display(),
                        io_reason(&e)
                    ));
                    continue;
                }
            };
            listing.any_location = true;
            let mut names: Vec<(String, PathBuf)> = Vec::new();
            for entry in entries {
                let entry = match entry {
                    Ok(entry) => entry,
                    Err(e) => {
                        listing.problems.push(format!(
                            "skills folder {} could not be listed: {}",
                            dir.display(),
                            io_reason(&e)
                        ));
                        break;
                    }
                };
                let file_name = entry.file_name();
                let Some(file_name) = file_name.to_str() else {
                    continue;
                };
                if file_name.starts_with('.') {
                    continue;
                }
                let path = entry.path();
                if path.is_dir() {
                    names.push((file_name.to_owned(), path.join("SKILL.md")));
                } else if let Some(stem) = file_name.strip_suffix(".md") {
                    names.push((stem.to_owned(), path));
                }
            }
            // Deterministic order regardless of the file system's.
            names.sort();
            for (stem, file) in names {
                match read_skill(&file, location.source, &stem, confine) {
                    Ok(Some(entry)) => {
                        if !listing.skills.iter().any(|s| s.name == entry.name) {
                            listing.skills.push(entry);
                        }
                    }
                    Ok(None) => {}
                    Err(e) => listing.problems.push(format!(
                        "skill file {} is unreadable: {}",
                        file.display(),
                        io_reason(&e)
                    )),
                }
            }
        }
        listing
    }
}

/// Skill names that may be joined to a folder: no separators, no `..`, no leading dot.
pub fn is_safe_skill_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 128
        && !name.starts_with('.')
        && !name.contains("..")
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b':'))
}

fn io_reason(e: &io::Error) -> String {
    if e.get_ref().is_some() {
        // One of our own sentences (a confined read refused), not an OS error.
        return e.to_string();
    }
    match e.kind() {
        io::ErrorKind::PermissionDenied => "permission denied".to_owned(),
        io::ErrorKind::NotADirectory => "not a folder".to_owned(),
        _ => e.kind().to_string(),
    }
}

#[derive(Deserialize)]
struct FrontMatter {
    name: Option<String>,
    description: Option<String>,
}

/// Reads one candidate skill file. `Ok(None)`: absent, or not a skill (no front matter,
/// no description, front matter that does not parse). `Err`: present but unreadable.
fn read_skill(
    file: &Path,
    source: SkillSource,
    stem: &str,
    confine: &Confine,
) -> io::Result<Option<SkillEntry>> {
    let opened = match confine {
        Confine::Free => fs::File::open(file),
        Confine::Within(root) => open_confined(root, file),
        Confine::Broken(why) => Err(io::Error::other(why.clone())),
    };
    let handle = match opened {
        Ok(handle) => handle,
        Err(e)
            if matches!(
                e.kind(),
                io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
            ) =>
        {
            return Ok(None);
        }
        Err(e) => return Err(e),
    };
    let mut bytes = Vec::new();
    handle.take(MAX_SKILL_FILE_BYTES).read_to_end(&mut bytes)?;
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Ok(None);
    };
    let Some(front) = front_matter(text) else {
        return Ok(None);
    };
    let Ok(meta) =
        serde_saphyr::from_str_with_options::<FrontMatter>(front, crate::load::yaml_options())
    else {
        return Ok(None);
    };
    let Some(description) = meta.description.filter(|d| !d.trim().is_empty()) else {
        return Ok(None);
    };
    let name = meta
        .name
        .filter(|n| !n.trim().is_empty())
        .unwrap_or_else(|| stem.to_owned());
    Ok(Some(SkillEntry {
        name: name.trim().to_owned(),
        description,
        source,
        file: file.to_path_buf(),
    }))
}

/// Open `file` only if its canonical target is inside `root` (`O_NOFOLLOW`, re-checked).
fn open_confined(root: &containment::Root, file: &Path) -> io::Result<fs::File> {
    root.open(file, root.path(), fs::OpenOptions::new().read(true))
        .map_err(|e| match e {
            containment::Error::OutsideRoot { .. } => leads_out(file),
            containment::Error::Open { source, .. }
            | containment::Error::Unreadable { source, .. } => source,
            containment::Error::NotADirectory { .. } => {
                io::Error::from(io::ErrorKind::NotADirectory)
            }
            other => io::Error::other(format!("{}: {other}", file.display())),
        })
}

/// The YAML between a leading `---` line and the next `---` line.
fn front_matter(text: &str) -> Option<&str> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let rest = text
        .strip_prefix("---\n")
        .or_else(|| text.strip_prefix("---\r\n"))?;
    let mut offset = 0;
    for line in rest.split_inclusive('\n') {
        if line.trim_end() == "---" {
            return Some(&rest[..offset]);
        }
        offset += line.len();
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(path: &Path, text: &str) {
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn skill(name: &str) -> String {
        format!("---\nname: {name}\ndescription: Does {name}.\n---\n# {name}\n")
    }

    struct Layout {
        _tmp: tempfile::TempDir,
        roots: SkillRoots,
    }

    fn layout() -> Layout {
        let tmp = tempfile::tempdir().unwrap();
        let base = tmp.path().to_path_buf();
        let roots = SkillRoots {
            project: Some(base.join("project")),
            custom: vec![base.join("project/registry/ops/skills")],
            dsh_home: Some(base.join("home/.dsh")),
            home: Some(base.join("home")),
            registry: Some(base.join("project/registry")),
        };
        fs::create_dir_all(base.join("project/registry/ops/skills")).unwrap();
        Layout { _tmp: tmp, roots }
    }

    #[test]
    fn locations_follow_the_documented_order() {
        let roots = SkillRoots {
            project: Some("/p".into()),
            custom: vec!["/p/reg/ops".into()],
            dsh_home: Some("/h/.dsh".into()),
            home: Some("/h".into()),
            registry: Some("/p/reg".into()),
        };
        let got: Vec<(&str, PathBuf)> = roots
            .locations()
            .into_iter()
            .map(|l| (l.source.as_str(), l.dir))
            .collect();
        assert_eq!(
            got,
            vec![
                ("project-dsh", "/p/.dsh/skills".into()),
                ("project-agents", "/p/.agents/skills".into()),
                ("project-claude", "/p/.claude/skills".into()),
                ("custom", "/p/reg/ops".into()),
                ("user-dsh", "/h/.dsh/skills".into()),
                ("user-agents", "/h/.agents/skills".into()),
                ("user-claude", "/h/.claude/skills".into()),
            ]
        );
    }

    #[test]
    fn finds_folder_and_file_skills_with_their_source() {
        let l = layout();
        let project = l.roots.project.clone().unwrap();
        write(
            &project.join(".dsh/skills/redeploy-k8s/SKILL.md"),
            &skill("redeploy-k8s"),
        );
        write(
            &l.roots
                .home
                .clone()
                .unwrap()
                .join(".agents/skills/collect.md"),
            &skill("collect"),
        );
        write(&l.roots.custom[0].join("health/SKILL.md"), &skill("health"));
        let catalog = SkillCatalog::new(&l.roots);
        match catalog.lookup("redeploy-k8s") {
            SkillLookup::Found(e) => {
                assert_eq!(e.source, SkillSource::ProjectDsh);
                assert_eq!(e.description, "Does redeploy-k8s.");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(
            catalog.lookup("collect"),
            SkillLookup::Found(SkillEntry {
                source: SkillSource::UserAgents,
                ..
            })
        ));
        assert!(matches!(
            catalog.lookup("health"),
            SkillLookup::Found(SkillEntry {
                source: SkillSource::Custom,
                ..
            })
        ));
        let names: Vec<String> = catalog.list().skills.into_iter().map(|s| s.name).collect();
        assert_eq!(names, vec!["redeploy-k8s", "health", "collect"]);
    }

    #[test]
    fn project_location_shadows_user_location() {
        let l = layout();
        write(
            &l.roots
                .home
                .clone()
                .unwrap()
                .join(".claude/skills/x/SKILL.md"),
            &skill("x"),
        );
        write(
            &l.roots.project.clone().unwrap().join(".agents/skills/x.md"),
            &skill("x"),
        );
        assert!(matches!(
            SkillCatalog::new(&l.roots).lookup("x"),
            SkillLookup::Found(SkillEntry {
                source: SkillSource::ProjectAgents,
                ..
            })
        ));
    }

    #[test]
    fn front_matter_name_wins_over_the_folder_name() {
        let l = layout();
        write(
            &l.roots.custom[0].join("folder/SKILL.md"),
            &skill("real-name"),
        );
        let catalog = SkillCatalog::new(&l.roots);
        assert!(matches!(catalog.lookup("real-name"), SkillLookup::Found(_)));
        assert!(matches!(
            catalog.lookup("folder"),
            SkillLookup::Missing { .. }
        ));
    }

    #[test]
    fn name_defaults_to_the_stem_and_odd_values_stay_text() {
        let l = layout();
        write(
            &l.roots.custom[0].join("no.md"),
            "---\ndescription: yes\n---\nbody\n",
        );
        match SkillCatalog::new(&l.roots).lookup("no") {
            SkillLookup::Found(e) => assert_eq!(e.description, "yes"),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn markdown_without_front_matter_or_description_is_not_a_skill() {
        let l = layout();
        write(&l.roots.custom[0].join("README.md"), "# Skills\n");
        write(&l.roots.custom[0].join("half.md"), "---\nname: half\n---\n");
        write(
            &l.roots.custom[0].join("open.md"),
            "---\nname: open\ndescription: x\n",
        );
        let catalog = SkillCatalog::new(&l.roots);
        for name in ["README", "half", "open"] {
            assert!(
                matches!(catalog.lookup(name), SkillLookup::Missing { .. }),
                "{name}"
            );
        }
        assert!(catalog.list().skills.is_empty());
    }

    #[test]
    fn missing_from_a_complete_catalog_is_missing() {
        let l = layout();
        match SkillCatalog::new(&l.roots).lookup("nope") {
            SkillLookup::Missing { searched } => assert_eq!(searched.len(), 7),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn no_location_at_all_is_unknown() {
        let tmp = tempfile::tempdir().unwrap();
        let roots = SkillRoots {
            project: Some(tmp.path().join("p")),
            custom: vec![],
            dsh_home: None,
            home: Some(tmp.path().join("h")),
            registry: None,
        };
        match SkillCatalog::new(&roots).lookup("x") {
            SkillLookup::Unknown { reasons } => {
                assert!(reasons[0].contains("no skill folder exists"), "{reasons:?}")
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn missing_configured_folder_is_unknown() {
        let l = layout();
        let mut roots = l.roots.clone();
        roots
            .custom
            .push(l._tmp.path().join("project/registry/typo"));
        match SkillCatalog::new(&roots).lookup("x") {
            SkillLookup::Unknown { reasons } => {
                assert!(reasons[0].contains("typo"), "{reasons:?}");
                assert!(reasons[0].contains("does not exist"), "{reasons:?}");
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn a_location_that_is_a_file_is_unknown() {
        let l = layout();
        write(
            &l.roots.project.clone().unwrap().join(".dsh/skills"),
            "oops",
        );
        assert!(matches!(
            SkillCatalog::new(&l.roots).lookup("x"),
            SkillLookup::Unknown { .. }
        ));
    }

    #[test]
    fn path_like_names_are_never_joined() {
        let l = layout();
        // A skill file reachable only through `..` must not be found.
        write(
            &l.roots.project.clone().unwrap().join("secret.md"),
            &skill("secret"),
        );
        let catalog = SkillCatalog::new(&l.roots);
        for name in ["../secret", "../../secret", "/etc/passwd", ".hidden", "a/b"] {
            assert!(
                matches!(catalog.lookup(name), SkillLookup::Missing { .. }),
                "{name}"
            );
        }
    }

    #[test]
    fn project_is_the_git_top_level_else_the_parent() {
        let tmp = tempfile::tempdir().unwrap();
        let repo = tmp.path().join("repo");
        fs::create_dir_all(repo.join(".git")).unwrap();
        fs::create_dir_all(repo.join("ops/registry")).unwrap();
        assert_eq!(project_root(&repo.join("ops/registry")), repo);
        let loose = tmp.path().join("loose/registry");
        fs::create_dir_all(&loose).unwrap();
        // tmp itself is not in a git repo on a normal machine; if it is, the ancestor
        // holding `.git` is the answer, which is the documented rule too.
        let expected = loose
            .ancestors()
            .find(|d| d.join(".git").exists())
            .map(Path::to_path_buf)
            .unwrap_or_else(|| tmp.path().join("loose"));
        assert_eq!(project_root(&loose), expected);
    }

    #[test]
    fn front_matter_edges() {
        assert_eq!(front_matter("---\na: 1\n---\nx"), Some("a: 1\n"));
        assert_eq!(front_matter("---\r\na: 1\r\n---\r\n"), Some("a: 1\r\n"));
        assert_eq!(front_matter("\u{feff}---\n---\n"), Some(""));
        assert_eq!(front_matter("# title\n---\n"), None);
        assert_eq!(front_matter("---\nnever closed"), None);
    }
}

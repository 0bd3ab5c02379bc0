//! Where the project's top level is, so a session started there is left unscoped.

use std::path::Path;

/// The marker that always counts: a `.git` entry (a directory, or the file a worktree
/// or submodule has).
pub const GIT_MARKER: &str = ".git";

/// Whether `directory` (canonical) is the project's top level: the nearest ancestor
/// (itself included) holding `.git` or one of `markers` is `directory` itself.
///
/// The nearest one wins, so a nested repository's top is its own top. A directory in
/// no project at all is not a top level: it stays scoped, the conservative answer.
pub fn is_project_top(directory: &Path, markers: &[String]) -> bool {
    project_top(directory, markers).is_some_and(|top| top == directory)
}

/// The project's top level for `directory` (canonical): the nearest ancestor, itself
/// included, holding `.git` or one of `markers`; `None` outside any project.
pub fn project_top<'a>(directory: &'a Path, markers: &[String]) -> Option<&'a Path> {
    let has_marker = |dir: &Path| {
        std::iter::once(GIT_MARKER)
            .chain(markers.iter().map(String::as_str))
            .filter(|marker| is_plain_name(marker))
            .any(|marker| std::fs::symlink_metadata(dir.join(marker)).is_ok())
    };
    directory.ancestors().find(|dir| has_marker(dir))
}

/// A marker is a file name, never a path: `../x` or `/etc/passwd` would let a
/// configuration reach outside the directory being examined.
fn is_plain_name(marker: &str) -> bool {
    !marker.is_empty() && marker != "." && marker != ".." && !marker.contains(['/', '\0'])
}

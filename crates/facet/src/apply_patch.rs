//! File paths named by a Codex `apply_patch` body.
//!
//! Codex edits files through `apply_patch`, whose hook `tool_input` is
//! `{"command": "<patch text>"}`. The patch names every file it touches in a
//! header line:
//!
//! ```text
//! *** Begin Patch
//! *** Add File: src/new.rs
//! *** Update File: src/old.rs
//! *** Move to: src/renamed.rs
//! *** Delete File: src/gone.rs
//! *** End Patch
//! ```
//!
//! ## Decisions
//! - Every header is judged, including `Move to` (a rename writes its target)
//!   and `Delete File` (a deletion is a write). Nothing else in the body names a
//!   file.
//! - Header lines are recognised after trimming surrounding whitespace, as
//!   Codex's own lenient parser does. A content line of an added file starts
//!   with `+`, so it can never be mistaken for a header. A context line of an
//!   update hunk that happens to read `*** Add File: x` after its leading
//!   space would be judged too: an extra path judged fails closed, a path
//!   missed would fail open, so the tolerant reading is the safe one.
//! - The same headers inside a shell command (`apply_patch <<'EOF' … EOF`, which
//!   Codex itself intercepts and applies as a patch) are found by the same scan;
//!   the caller decides whether to look at shell commands at all.

/// The header prefixes that name a file, in the grammar's spelling.
const FILE_HEADERS: [&str; 4] = [
    "*** Add File:",
    "*** Update File:",
    "*** Delete File:",
    "*** Move to:",
];

/// Every path a patch body names, in order, as written (trimmed). Empty names are
/// skipped: a header without a path names nothing we could judge, and Codex
/// rejects such a patch itself.
pub fn patch_paths(body: &str) -> Vec<String> {
    body.lines()
        .filter_map(|line| {
            let line = line.trim();
            FILE_HEADERS
                .iter()
                .find_map(|header| line.strip_prefix(header))
                .map(str::trim)
                .filter(|path| !path.is_empty())
                .map(str::to_owned)
        })
        .collect()
}

/// Whether a shell command carries an `apply_patch` body (Codex applies those as
/// patches, not as shell).
pub fn looks_like_patch(command: &str) -> bool {
    command.contains("*** Begin Patch")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_every_header_kind() {
        let body = "*** Begin Patch\n*** Add File: a/new.txt\n+hello\n*** Update File: ../outside.rs\n*** Move to: /abs/renamed.rs\n@@\n-x\n+y\n*** Delete File: gone.md\n*** End Patch\n";
        assert_eq!(
            patch_paths(body),
            vec!["a/new.txt", "../outside.rs", "/abs/renamed.rs", "gone.md"]
        );
    }

    #[test]
    fn added_content_is_not_a_header() {
        let body =
            "*** Begin Patch\n*** Add File: notes.md\n+*** Add File: /etc/shadow\n*** End Patch";
        assert_eq!(patch_paths(body), vec!["notes.md"]);
    }

    #[test]
    fn tolerates_indentation_crlf_and_heredoc_wrapping() {
        let body = "apply_patch <<'EOF'\r\n  *** Begin Patch\r\n  *** Update File:   src/x.rs  \r\n*** End Patch\r\nEOF";
        assert!(looks_like_patch(body));
        assert_eq!(patch_paths(body), vec!["src/x.rs"]);
    }

    #[test]
    fn empty_names_are_skipped() {
        assert!(patch_paths("*** Add File:   \n*** Delete File:").is_empty());
        assert!(patch_paths("").is_empty());
    }
}

//! Finding a program as the kernel's `execve` through a shell would: a name with a
//! `/` is a path, anything else is looked up on `PATH`. Used by every backend's
//! `verify` and by the verification key, so "not found" reads the same everywhere.

/// Finds `program` as the kernel's exec would: a path if it has a `/`, else on PATH.
pub(crate) fn find_program(program: &str) -> Result<std::path::PathBuf, ProgramNotFound> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |path: &std::path::Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = std::path::PathBuf::from(program);
        return if executable(&path) {
            Ok(path)
        } else {
            Err(ProgramNotFound::NotExecutable(program.to_owned()))
        };
    }
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
        .ok_or_else(|| ProgramNotFound::NotOnPath(program.to_owned()))
}

/// Why [`find_program`] found nothing to run; says where it looked and what to do.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ProgramNotFound {
    /// A path (it has a `/`) that is no executable file.
    #[error("program `{0}` does not exist or is not executable")]
    NotExecutable(String),
    /// A name found in no `PATH` folder.
    #[error("program `{0}` not found on PATH; install it or give its full path in argv")]
    NotOnPath(String),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn not_found_says_where_it_looked_in_the_same_words() {
        assert_eq!(
            find_program("/nonexistent/agent").unwrap_err().to_string(),
            "program `/nonexistent/agent` does not exist or is not executable"
        );
        assert_eq!(
            find_program("agent-exec-no-such-program")
                .unwrap_err()
                .to_string(),
            "program `agent-exec-no-such-program` not found on PATH; install it or give its \
             full path in argv"
        );
    }
}

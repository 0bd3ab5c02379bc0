//! Finding a program as a run will: [`agent_exec_runtime::spawn::find_program`] (the
//! one search, `execvp`'s rules) on agent-exec's own `PATH`. Used by every backend's
//! `verify` and by the verification key, so "not found" reads the same everywhere.

use agent_exec_runtime::spawn::Missing;

/// Finds `program` as the kernel's exec would: a path if it has a `/`, else on PATH.
pub(crate) fn find_program(program: &str) -> Result<std::path::PathBuf, ProgramNotFound> {
    let path_var = std::env::var_os("PATH");
    agent_exec_runtime::spawn::find_program(program.as_ref(), path_var.as_deref(), None).map_err(
        |missing| match missing {
            Missing::NoSuchFile | Missing::NotExecutable => {
                ProgramNotFound::NotExecutable(program.to_owned())
            }
            Missing::EmptyName | Missing::NotOnPath | Missing::OnPathNotExecutable => {
                ProgramNotFound::NotOnPath(program.to_owned())
            }
        },
    )
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

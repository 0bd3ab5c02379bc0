//! Finding a program as the kernel's `execve` through a shell would: a name with a
//! `/` is a path, anything else is looked up on `PATH`. Used by every backend's
//! `verify` and by the verification key, so "not found" reads the same everywhere.

/// Finds `program` as the kernel's exec would: a path if it has a `/`, else on PATH.
pub(crate) fn find_program(program: &str) -> Result<std::path::PathBuf, String> {
    use std::os::unix::fs::PermissionsExt as _;
    let executable = |path: &std::path::Path| {
        std::fs::metadata(path).is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
    };
    if program.contains('/') {
        let path = std::path::PathBuf::from(program);
        return if executable(&path) {
            Ok(path)
        } else {
            Err(format!(
                "program `{program}` does not exist or is not executable"
            ))
        };
    }
    let path_var = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path_var)
        .map(|dir| dir.join(program))
        .find(|candidate| executable(candidate))
        .ok_or_else(|| {
            format!(
                "program `{program}` not found on PATH; install it or give its full path in argv"
            )
        })
}

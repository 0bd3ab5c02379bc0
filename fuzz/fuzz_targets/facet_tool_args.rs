//! facet-core's decision on arbitrary tool arguments: the first bytes pick the tool,
//! the mode, the approval channel and whether a focus narrows the facet; the rest is
//! parsed as JSON (or, when it is not JSON, used as a bare string argument). Judging,
//! reading a `facet` action, listing requested paths and parsing the same bytes as a
//! configuration file or a project's `.facet.toml` must never panic.
//! The CI twin is crates/facet-core/tests/it/args_never_panic.rs.
#![no_main]

use facet_core::{FacetAction, Mode, Policy, Session};
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let [tool_byte, flags, rest @ ..] = data else {
        return;
    };
    let policy = Policy::default();
    let mut names: Vec<String> = policy.tools().names().map(str::to_string).collect();
    names.extend([
        "facet".to_string(),
        "mcp__facet__facet".to_string(),
        "bash".to_string(),
    ]);
    let tool = &names[usize::from(*tool_byte) % names.len()];
    let mode = [Mode::Ask, Mode::Deny, Mode::Off][usize::from(flags & 3) % 3];
    let can_ask = flags & 4 != 0;
    let args: Value = serde_json::from_slice(rest)
        .unwrap_or_else(|_| Value::String(String::from_utf8_lossy(rest).into_owned()));
    let Ok(cwd) = std::fs::canonicalize(std::env::temp_dir()) else {
        return;
    };
    let mut session = Session::new("fuzz", cwd.clone(), true, mode);
    if flags & 8 != 0 {
        session.focus = Some(cwd.join("facet-fuzz-focus"));
    }
    let _ = policy.judge(tool, &args, &cwd, &session, can_ask);
    // The same value as the arguments of every configured path argument.
    for name in [
        "file_path",
        "path",
        "pattern",
        "glob",
        "notebook_path",
        "focus",
    ] {
        let wrapped = serde_json::json!({ name: args.clone() });
        let _ = policy.judge(tool, &wrapped, &cwd, &session, can_ask);
    }
    let _ = FacetAction::parse(&args);
    let _ = facet_core::session::requested_paths(&args);
    // The user's configuration file is outside input too.
    if let Ok(text) = std::str::from_utf8(rest) {
        let _ = facet_core::Config::from_toml(text, std::path::Path::new("fuzz.toml"));
        // So is a project's `.facet.toml`.
        let _ = facet_core::standing::ProjectFile::parse(text);
    }
});

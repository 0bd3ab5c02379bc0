//! Issue 14 §1 through the official Python MCP SDK client: a registry whose files link
//! to outside files holding a canary; no tool result (any of the ten tools, successes
//! and errors, over stdio and streamable HTTP) carries it. See tests/py/canary.py. On
//! the old code `env_get` returned the outside record whole.

use crate::support;

#[test]
fn no_tool_result_carries_outside_content_over_stdio() {
    let output = support::run_python("canary.py", &["stdio"]);
    assert!(support::assert_all_passed(&output) >= 1);
}

#[test]
fn no_tool_result_carries_outside_content_over_streamable_http() {
    let output = support::run_python("canary.py", &["http"]);
    assert!(support::assert_all_passed(&output) >= 1);
}

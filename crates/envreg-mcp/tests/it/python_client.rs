//! The official Python MCP SDK client against `envreg-mcp`, over stdio and over
//! streamable HTTP: tools listed as the contract says, every tool called on a copy of
//! examples/registry with every `structuredContent` validated against its
//! `outputSchema`, every error path's code, approval by elicitation accepted, declined,
//! cancelled and absent, and the `host` approval channel. See tests/py/suite.py.

use crate::support;

#[test]
fn python_client_over_stdio() {
    let output = support::run_python("suite.py", &["stdio"]);
    assert!(support::assert_all_passed(&output) >= 15);
}

#[test]
fn python_client_over_streamable_http() {
    let output = support::run_python("suite.py", &["http"]);
    assert!(support::assert_all_passed(&output) >= 15);
}

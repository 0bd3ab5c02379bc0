//! 50 streamable-HTTP sessions call `env_set_context` and `env_resolve` in parallel for
//! 20 seconds: no error, and no session ever sees another's default environment.
//! One test on purpose (it is the suite's longest); see tests/py/concurrency.py.

use crate::support;

#[test]
fn fifty_http_sessions_for_twenty_seconds_without_error_or_leak() {
    let output = support::run_python("concurrency.py", &["50", "20"]);
    support::assert_all_passed(&output);
}

//! agent-exec-journal's integration tests, as one binary: each module was a test file
//! of its own, and every test binary links the crate and its dependencies again
//! (ARCHITECTURE.md, "Tests"). The "killed runner" tests start this binary again as a
//! child running one test by its full name (`test_support::test_name`).

mod common;

mod postgres;
mod sqlite;

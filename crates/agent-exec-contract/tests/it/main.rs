//! agent-exec-contract's integration tests, as one binary: each module was a test file
//! of its own, and every test binary links the crate and its dependencies again
//! (ARCHITECTURE.md, "Tests"). Nothing here needs a process to itself.

mod proptest_wire;
mod request_json;
mod resolver;
mod verification_cache;
mod wire;

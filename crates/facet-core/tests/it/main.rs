//! facet-core's integration tests, as one binary: each module was a test file of its
//! own, and every test binary links the crate and its dependencies again
//! (ARCHITECTURE.md, "Tests"). All of them are pure functions of their input and the
//! folders they make; nothing here needs a process to itself.

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod args_never_panic;
mod judge;
mod judge_agrees_with_containment;
mod seed_oracle;
mod sentences;
mod store;

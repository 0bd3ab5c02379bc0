//! containment's integration tests, as one binary: each module was a test file of its
//! own, and every test binary links the crate and its dependencies again
//! (ARCHITECTURE.md, "Tests"). Nothing here needs a process to itself.

mod cases;
mod kernel_oracle;
mod open_regular;
mod permission;

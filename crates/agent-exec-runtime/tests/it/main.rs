//! agent-exec-runtime's integration tests that may share a process, as one binary:
//! each module was a test file of its own, and every test binary links the crate and its
//! dependencies again (ARCHITECTURE.md, "Tests"). Their backends are in-test ones.
//!
//! Binaries of their own, on purpose:
//! * `process_tree.rs` makes its process a child subreaper: every orphan of a test
//!   beside it would be re-parented to it, and claimed by its trees.
//! * `cgroup_escape.rs` is a subreaper too, and its programs move processes between
//!   cgroups inside their run cgroup.
//! * `process_group_escapes.rs` must *not* be a subreaper (its escapees must go to
//!   init, as in a host that never asked for one).
//! * `runner_leftovers.rs` terminates every tree of its process's identity: any other
//!   test's tree running beside it would be killed.

mod executor;
mod proptest_structured;
mod resume;
mod spawn;

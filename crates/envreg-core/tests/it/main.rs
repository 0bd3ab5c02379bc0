//! envreg-core's integration tests, as one binary: each module was a test file of its
//! own, and every test binary links the crate and its dependencies again
//! (ARCHITECTURE.md, "Tests"). Nothing here needs a process to itself: the one test
//! that needs an environment variable set (`store::credential_missing_…`) re-runs
//! itself in a child process rather than call `std::env::set_var` beside the others.

mod example_registry;
mod find_ranking;
mod module_graph;
mod outside_links;
mod resolve_example_registry;
mod schema;
mod store;
mod tool_calls;

//! dsh-live's own integration tests, as one binary: each module was a test file of its
//! own, and every test binary links the crate and its dependencies again
//! (ARCHITECTURE.md, "Tests"). Each run of dsh has its own scratch home; nothing here
//! needs a process to itself.

mod bridge_client;
mod install_script;
mod smoke;

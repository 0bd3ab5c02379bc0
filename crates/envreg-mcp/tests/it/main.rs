//! envreg-mcp's integration tests, as one binary: each module was a test file of its
//! own, and every test binary links the crate and its dependencies again
//! (ARCHITECTURE.md, "Tests"). The servers and clients they start are child processes
//! with their own `TMPDIR`; nothing here needs a process to itself. The Python
//! clients stay in `tests/py/`.

mod support;

mod bad_input;
mod concurrency;
mod inspector;
mod outside_links;
mod python_client;
mod raw_wire;
mod relative_registry;

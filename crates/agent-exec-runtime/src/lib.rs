//! The execution runtime: attempts, deadlines, process trees, deliverables.

//! The agent-exec command-line tool.

fn main() {}

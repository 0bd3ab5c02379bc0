//! The facet binary: hook, MCP server and the user's panel.

fn main() {}

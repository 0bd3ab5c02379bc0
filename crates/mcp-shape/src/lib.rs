//! MCP result shaping shared by every MCP server of the project.

//! The envreg tools served over MCP (stdio and streamable HTTP).

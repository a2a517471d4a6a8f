"""The keys that tell a fixture's MCP lines (a server's listing, a call and its result) apart
from the model's lines: a fixture reader checks them on every line, and only a fixture that has
such a line loads the MCP replay."""

SERVER_KEY = "mcp_server"
CALL_KEY = "mcp_call"

"""MCP: a server's configuration, its live connection, and the tools a run's servers offer."""

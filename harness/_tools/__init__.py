"""Tools: the `Tool` seam (`_base`) and the one registry of built-in tools, then the tools."""

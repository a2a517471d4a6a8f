"""Fixtures and fake clocks: scripted models, recording, MCP replay, test clocks."""

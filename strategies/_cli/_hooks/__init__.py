"""Stop hooks: an adapter per agent (`_agents`), the one decision (`_core`), the commands."""

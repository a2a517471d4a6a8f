"""Files others name: bounded reads, JSONL, paths kept in the workspace, protected paths."""

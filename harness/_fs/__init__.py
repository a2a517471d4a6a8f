"""Files others name: bounded reads, JSONL, paths kept in the workspace, protected paths, the
folders the harness owns (never through a link) and the folders that are not work."""

"""Child processes and threads that cannot outlive their caller, and the reaper."""

"""The turn loop: the `Harness` facade, a run, its shared state, and the session's turns."""

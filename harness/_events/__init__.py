"""Events: every kind, registered and decoded by name (`_base`), sinks, stream, reader."""

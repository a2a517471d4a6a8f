"""Sinks that leave the process: OpenTelemetry spans and notifications."""

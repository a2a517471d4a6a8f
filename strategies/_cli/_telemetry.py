"""`harness run --otel`: a tracer provider set up from the standard ``OTEL_*`` variables."""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

from harness import ConfigurationError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider


def tracer_provider_from_env(environ: Mapping[str, str] | None = None) -> TracerProvider:
    """A tracer provider for the command line (`harness run --otel`), set up from the standard
    ``OTEL_*`` variables.

    ``OTEL_TRACES_EXPORTER`` picks the exporter: ``console`` (the default: one JSON object per
    span on stderr, so stdout keeps the outcome) or ``otlp`` (also chosen when an
    ``OTEL_EXPORTER_OTLP_ENDPOINT`` or ``..._TRACES_ENDPOINT`` is set; it needs
    ``opentelemetry-exporter-otlp-proto-http``, which reads its own ``OTEL_EXPORTER_OTLP_*``
    settings). ``OTEL_SERVICE_NAME`` and ``OTEL_RESOURCE_ATTRIBUTES`` name the service
    (default ``completion-harness``). Call ``shutdown()`` on it when the run is over.
    """
    try:
        from opentelemetry.sdk.resources import Resource
    except ImportError:
        raise ConfigurationError(
            "--otel needs OpenTelemetry: pip install 'completion-harness[otel]'"
        ) from None
    from opentelemetry.sdk.trace import TracerProvider as SdkTracerProvider
    from opentelemetry.sdk.trace.export import (
        BatchSpanProcessor,
        ConsoleSpanExporter,
        SimpleSpanProcessor,
        SpanExporter,
    )

    env = os.environ if environ is None else environ
    chosen = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if not chosen:
        endpoint = env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or env.get(
            "OTEL_EXPORTER_OTLP_ENDPOINT"
        )
        chosen = "otlp" if endpoint else "console"
    attributes = {} if env.get("OTEL_SERVICE_NAME") else {"service.name": "completion-harness"}
    provider = SdkTracerProvider(resource=Resource.create(attributes))
    exporter: SpanExporter
    if chosen == "console":
        exporter = ConsoleSpanExporter(out=sys.stderr)
        provider.add_span_processor(SimpleSpanProcessor(exporter))
    elif chosen == "otlp":
        try:
            from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        except ImportError:
            raise ConfigurationError(
                "OTEL_TRACES_EXPORTER=otlp needs the OTLP exporter: "
                "pip install opentelemetry-exporter-otlp-proto-http"
            ) from None
        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    elif chosen != "none":
        raise ConfigurationError(
            f"OTEL_TRACES_EXPORTER={chosen!r} is not supported here "
            "(expected console, otlp or none)"
        )
    return provider

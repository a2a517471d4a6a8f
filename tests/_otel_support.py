"""An OpenTelemetry SDK tracer provider that keeps its spans in memory, for the tests of the
run's and the board's spans."""

from __future__ import annotations

from typing import Any

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from harness import OtelSink

ORIGIN = 1_700_000_000 * 10**9  # the wall clock's reading when each run starts


class Traced:
    """An SDK tracer provider that keeps every finished span in memory."""

    def __init__(self) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))

    def sink(self, **options: Any) -> OtelSink:
        return OtelSink(self.provider, wall_clock=lambda: ORIGIN, **options)

    @property
    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> list[ReadableSpan]:
        return [s for s in self.spans if s.name == name]

    def one(self, name: str) -> ReadableSpan:
        found = self.named(name)
        assert len(found) == 1, [s.name for s in self.spans]
        return found[0]

    def children(self, parent: ReadableSpan) -> list[ReadableSpan]:
        assert parent.context is not None
        return [
            s
            for s in self.spans
            if s.parent is not None and s.parent.span_id == parent.context.span_id
        ]

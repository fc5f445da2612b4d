"""A created task's trace: the create is its root span (docs/status.md, "Traces").

The gateway starts the trace in the envelope's `traceparent` (continuing a caller's, if it sent one
X-Ray can keep) and names the flow in `tracestate`, so every hop's segment can say which flow it
serves; with tracing on, it writes the create's own segment, which the first hop names as its parent.
"""

from __future__ import annotations

import time
from typing import Any

from asya.tracecontext import Span, enter_span, with_flow
from asya.xray import Segments, segment


def start_trace(headers: dict[str, Any], flow: str | None, traced: bool) -> Span:
    """The create's span, written into the new envelope's headers. `traced`: a caller's trace id that
    X-Ray would refuse is replaced (`asya.tracecontext`)."""
    span = enter_span(headers, restart=traced)
    with_flow(headers, flow)
    return span


def record_create(segments: Segments | None, span: Span, task_id: str, flow: str | None, started: float) -> None:
    """The root segment, sent at once: a gateway request has no batch to wait for. `started`: epoch seconds."""
    if segments is None or not span.sampled:
        return
    annotations = {"task_id": task_id, "actor": "gateway", "flow": flow, "outcome": "created"}
    segments.add(segment(span, "gateway", started, time.time(), annotations))
    segments.flush()

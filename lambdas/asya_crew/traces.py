"""The crew's hop in a task's trace (`asya.xray`): x-sink's or x-sump's segment is a traced task's last,
named for the crew actor, a child of the hop that sent the envelope (docs/status.md, "Traces")."""

from __future__ import annotations

import time
from typing import Any, Protocol

from asya.names import SUMP
from asya.task_record import root_of
from asya.tracecontext import enter_span, flow_of
from asya.xray import Segments, segment

_FAILED = "failed"


class Kept(Protocol):
    """What the crew makes of a record (`asya_crew.crew.Keep`), as far as its trace needs."""

    envelope_id: str
    outcome: str | None
    document: dict[str, Any]
    follow_ups: list[tuple[str, str]]
    final: str | None


def trace_keep(segments: Segments | None, actor: str, keep: Kept, started: float) -> None:
    """Add the record's segment (`started`: epoch seconds), and write its span into the kept envelope's
    `traceparent`: the crew's sends name it as their parent in `AWSTraceHeader`. A record without
    headers (one x-sump keeps however malformed) is in no trace."""
    headers = keep.document.get("headers")
    if segments is None or not isinstance(headers, dict):
        return
    span = enter_span(headers, restart=True)
    if not span.sampled:
        return
    outcome = keep.final or keep.outcome or "passed"
    annotations = {"task_id": root_of(keep.envelope_id, headers), "actor": actor, "flow": flow_of(headers)}
    annotations["outcome"] = outcome
    metadata = {"envelope_id": keep.envelope_id, "sent_to": [to for to, _ in keep.follow_ups]}
    error = actor == SUMP or outcome == _FAILED
    segments.add(segment(span, actor, started, time.time(), annotations, error=error, metadata=metadata))

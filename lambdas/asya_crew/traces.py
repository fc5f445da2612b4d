"""The crew's hop in a task's trace (`asya.xray`): x-sink's or x-sump's segment is a traced task's last,
named for the crew actor, a child of the hop that sent the envelope (docs/status.md, "Traces")."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from asya.names import SUMP
from asya.task_record import root_of
from asya.tracecontext import enter_span, flow_of
from asya.xray import Segments, segment

if TYPE_CHECKING:
    from asya_crew.crew import Keep

_FAILED = "failed"


def trace_keep(segments: Segments | None, actor: str, keep: Keep, started: float) -> None:
    """Add the record's segment (`started`: epoch seconds), and write its span into the kept envelope's
    `traceparent`: the crew's sends name it as their parent in `AWSTraceHeader`. A record without
    headers (one x-sump keeps however malformed) is in no trace."""
    headers = keep.document.get("headers")
    if segments is None or not isinstance(headers, dict):
        return
    span = enter_span(headers, restart=True)
    if not span.sampled:
        return
    failed = actor == SUMP or keep.final == _FAILED
    annotations = {
        "task_id": root_of(keep.envelope_id, headers),
        "actor": actor,
        "flow": flow_of(headers),
        "outcome": keep.final or keep.outcome or "passed",
    }
    metadata = {"envelope_id": keep.envelope_id, "sent_to": [to for to, _ in keep.follow_ups]}
    segments.add(segment(span, actor, started, time.time(), annotations, error=failed, metadata=metadata))

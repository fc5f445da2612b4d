"""The X-Ray segment of one hop (`asya.xray`): named for the actor, annotated with what a search of a
task's trace asks for (its task, actor, flow and the hop's outcome), marked as an error when the hop
failed the envelope or sent it round again to retry."""

from __future__ import annotations

import time
from typing import Any

from asya.envelope import Envelope
from asya.outcomes import HopOutcome
from asya.routing import Outbound
from asya.task_record import root_of
from asya.tracecontext import Span, flow_of
from asya.xray import Segments, segment

_ERRORS = frozenset(
    {HopOutcome.RETRIED, HopOutcome.FAILED, HopOutcome.SUMPED, HopOutcome.JOIN_FAILED, HopOutcome.REFUSED}
)
# not a hop of the trace: it belongs to the delivery that holds it, has already run, or is a retry's lap
# round its queue before it is due (which goes on with the trace context it came with)
_UNTRACED = frozenset({HopOutcome.DUPLICATE, HopOutcome.REDELIVERED, HopOutcome.DEFERRED})


def trace_hop(  # noqa: PLR0917 - called once, by `HopRunner._finish`, on every traced hop
    segments: Segments,
    span: Span | None,
    envelope: Envelope | None,
    actor: str,
    outcome: HopOutcome,
    outbound: list[Outbound],
    started: float,
) -> None:
    """Add the hop's segment, unless it has none: a record that did not parse, a trace its caller asked
    not to record (`-00`), a hop that did nothing."""
    if span is not None and envelope is not None and span.sampled and outcome not in _UNTRACED:
        segments.add(hop_segment(span, envelope, actor, outcome=outcome, outbound=outbound, started=started))


def hop_segment(
    span: Span, envelope: Envelope, actor: str, *, outcome: HopOutcome, outbound: list[Outbound], started: float
) -> dict[str, Any]:
    """`started`: the hop's start on `time.perf_counter`'s clock, as the hop's metrics count it."""
    now = time.time()
    error = outcome in _ERRORS
    reason = next((out.decision.reason for out in outbound if out.decision.reason is not None), None)
    annotations: dict[str, Any] = {
        "task_id": root_of(envelope.id, envelope.headers),
        "actor": actor,
        "flow": flow_of(envelope.headers),
        "outcome": str(outcome),
        "reason": reason.value if error and reason is not None else None,
    }
    # where it went, not each output: a fan of 10,000 would pass a segment's 64 kB
    sent_to = sorted({out.destination for out in outbound})
    metadata: dict[str, Any] = {"envelope_id": envelope.id, "outputs": len(outbound), "sent_to": sent_to}
    if envelope.status is not None:
        metadata["attempt"] = envelope.status.attempt
    return segment(span, actor, now - (time.perf_counter() - started), now, annotations, error=error, metadata=metadata)

"""W3C trace context (`traceparent`) carried in envelope headers and continued at every hop.

Each hop is a span of the task's trace: at its start (`enter_span`) it takes a span id of its own,
keeps the one it came with as its parent, and writes its own into the envelope's `traceparent`, so the
handler and every output it sends carry it (a fan-out's branches all name the hop that made them). Ids
only need to be unique, not secret, so they come from `random` (as in the OpenTelemetry SDK) rather
than a system call per hop. Written here rather than taken from OpenTelemetry: the whole job is one
header format, and the SDK would add far more to every actor's cold start than it does.

A new trace's id starts with the epoch seconds in 8 hex digits, as X-Ray's ids do (`1-<8>-<24>`),
so that the same id is a W3C trace id and an X-Ray one (`asya.xray`). X-Ray refuses a trace whose
first 8 digits are not a time of the last 30 days, which a random W3C id almost never is: a traced
hop (`restart=True`) that gets such an id starts a new trace and names the old one (`Span.caller`).
Every send carries the envelope's trace to SQS as `AWSTraceHeader` too (`trace_header`).
"""

from __future__ import annotations

import random
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from asya.headers import TRACEPARENT, TRACESTATE

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_NO_TRACE, _NO_SPAN = "0" * 32, "0" * 16
XRAY_PAST_SECONDS = 30 * 86_400  # X-Ray keeps no trace whose id's time is older
XRAY_FUTURE_SECONDS = 300  # nor one from further ahead than a clock's drift
STATE_KEY = "asya"  # the mesh's own entry of `tracestate`: the task's flow
_ABSENT: Any = object()  # a header the envelope did not have


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs twice as much, once a hop
class Span:
    """A hop's place in its trace: `parent` is the span that sent the envelope (None: a new trace);
    `caller` the trace id it came with when that could not be an X-Ray trace (`restart`)."""

    trace_id: str
    span_id: str
    parent: str | None
    flags: str = "01"
    caller: str | None = None
    incoming: Any = _ABSENT  # the `traceparent` the envelope came with, whatever it was

    @property
    def traceparent(self) -> str:
        return f"00-{self.trace_id}-{self.span_id}-{self.flags}"

    def restore(self, headers: dict[str, Any]) -> None:
        """Put back in `headers` the trace context the envelope came with: a lap round its queue is no hop."""
        if self.incoming is _ABSENT:
            headers.pop(TRACEPARENT, None)
        else:
            headers[TRACEPARENT] = self.incoming

    @property
    def sampled(self) -> bool:
        """Whether the trace is recorded: a caller that sent `-00` asked for no segments."""
        return bool(int(self.flags, 16) & 1)


def new_trace_id(now: float | None = None) -> str:
    """A trace id that X-Ray takes too: the epoch seconds, then 96 random bits."""
    return f"{int(time.time() if now is None else now):08x}{random.getrandbits(96):024x}"


def new_span_id() -> str:
    return f"{random.getrandbits(64):016x}"


def xray_ready(trace_id: str, now: float | None = None) -> bool:
    """Whether X-Ray takes a trace under this id: its first 8 hex digits a time of the last 30 days."""
    seconds = int(trace_id[:8], 16)
    moment = time.time() if now is None else now
    return moment - XRAY_PAST_SECONDS <= seconds <= moment + XRAY_FUTURE_SECONDS


def enter_span(headers: dict[str, Any], *, restart: bool = False) -> Span:
    """The hop's span, written into `headers` as their `traceparent`; a new trace if they have none
    (or, with `restart`, one X-Ray would refuse)."""
    came = headers.get(TRACEPARENT, _ABSENT)
    match = _TRACEPARENT.match(str(came)) if came is not _ABSENT else None
    if match is None or match.group(2) == _NO_TRACE:
        span = Span(new_trace_id(), new_span_id(), None, incoming=came)
    elif restart and not xray_ready(match.group(2)):
        span = Span(new_trace_id(), new_span_id(), None, match.group(4), caller=match.group(2), incoming=came)
    else:
        trace_id, parent, flags = match.group(2, 3, 4)
        span = Span(trace_id, new_span_id(), None if parent == _NO_SPAN else parent, flags, incoming=came)
    headers[TRACEPARENT] = span.traceparent
    return span


def xray_id(trace_id: str) -> str:
    """The X-Ray form of a W3C trace id (`new_trace_id`): `1-<8 hex>-<24 hex>`."""
    return f"1-{trace_id[:8]}-{trace_id[8:]}"


def trace_header(traceparent: Any) -> str | None:
    """SQS's `AWSTraceHeader` for an envelope's `traceparent`: the same trace, the sending hop as parent;
    None when X-Ray could not keep that trace (no trace context, or an id it refuses)."""
    match = _TRACEPARENT.match(str(traceparent))
    if match is None or not xray_ready(match.group(2)):
        return None
    sampled = int(match.group(4), 16) & 1
    return f"Root={xray_id(match.group(2))};Parent={match.group(3)};Sampled={sampled}"


def traceparent_of(wire: Mapping[str, Any]) -> Any:
    """An outgoing envelope's `traceparent`, if it has headers (x-sump's copy of a body that did not parse
    may not)."""
    headers = wire.get("headers")
    return headers.get(TRACEPARENT) if isinstance(headers, dict) else None


def continue_trace(headers: dict[str, Any]) -> dict[str, Any]:
    """Headers for the next hop: the trace context the hop's span wrote (`enter_span`); a new trace if none."""
    return {**headers, TRACEPARENT: next_traceparent(headers.get(TRACEPARENT, ""))}


def next_traceparent(current: Any) -> str:
    """The `traceparent` an output carries after `current` (the header's value): the hop's own, which
    names it as the next hop's parent, or a new trace's if it is not one."""
    text = str(current)
    match = _TRACEPARENT.match(text)
    if match is None or match.group(2) == _NO_TRACE:
        return f"00-{new_trace_id()}-{new_span_id()}-01"
    return text


def flow_of(headers: dict[str, Any]) -> str | None:
    """The task's flow as the gateway wrote it into `tracestate` (`with_flow`), if it did."""
    for member in str(headers.get(TRACESTATE, "")).split(","):
        key, _, value = member.strip().partition("=")
        if key == STATE_KEY and value:
            return value
    return None


def with_flow(headers: dict[str, Any], flow: str | None) -> None:
    """Name the task's flow in `tracestate`, first (W3C: the newest entry leads), so every hop's span
    can say which flow it serves: a route flow's envelopes carry no other trace of its name. The key is
    the mesh's own: a caller's `asya=` entry is dropped, flow or none (None: a task started on a route),
    so a caller cannot name its task's segments for a flow it never ran."""
    if TRACESTATE not in headers and flow is None:
        return
    others = [m.strip() for m in str(headers.get(TRACESTATE, "")).split(",") if m.strip()]
    kept = [m for m in others if m.partition("=")[0] != STATE_KEY]
    members = ([] if flow is None else [f"{STATE_KEY}={flow}"]) + kept
    if members:
        headers[TRACESTATE] = ",".join(members[:32])  # W3C: at most 32 entries
    else:
        del headers[TRACESTATE]

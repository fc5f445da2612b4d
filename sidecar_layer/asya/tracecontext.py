"""W3C trace context (`traceparent`) carried in envelope headers and continued at every hop.

Each hop keeps the trace id and becomes a new span whose parent is the previous hop, so a trace
tool can stitch a task's hops together. Ids only need to be unique, not secret, so they come from
`random` (as in the OpenTelemetry SDK) rather than a system call per hop. Written here rather than
taken from OpenTelemetry: the whole job is one header format, and the SDK would add far more to
every actor's cold start than it does.
"""

from __future__ import annotations

import random
import re
from typing import Any

from asya.headers import TRACEPARENT

_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")


def continue_trace(headers: dict[str, Any]) -> dict[str, Any]:
    """Headers for the next hop: same trace id and flags, a fresh span id; a new trace if none."""
    return {**headers, TRACEPARENT: next_traceparent(headers.get(TRACEPARENT, ""))}


def next_traceparent(current: Any) -> str:
    """The next hop's `traceparent` after `current` (the header's value): for headers the caller
    builds anyway (a hop's output), without copying them once more as `continue_trace` does."""
    match = _TRACEPARENT.match(str(current))
    if match is None or match.group(2) == "0" * 32:
        trace_id, flags = f"{random.getrandbits(128):032x}", "01"
    else:
        trace_id, flags = match.group(2), match.group(4)
    return f"00-{trace_id}-{random.getrandbits(64):016x}-{flags}"

"""Why an envelope ended where it did: `status.reason`, and (in snake_case) the error payload's `error`."""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Any


class Reason(StrEnum):
    COMPLETED = "Completed"
    POLICY_EXHAUSTED = "PolicyExhausted"
    HANDLER_ERROR = "HandlerError"  # the handler raised and no retry policy applies: `status.error.type` says what
    POLICY_ROUTED = "PolicyRouted"
    TIMEOUT = "Timeout"
    PARSE_ERROR = "ParseError"
    INVALID_ENVELOPE = "InvalidEnvelope"
    ROUTE_MISMATCH = "RouteMismatch"
    UNKNOWN_ACTOR = "UnknownActor"
    HANDLER_TIMEOUT = "HandlerTimeout"
    UNSERIALIZABLE_OUTPUT = "UnserializableOutput"
    OVERSIZED_OUTPUT = "OversizedOutput"
    FAN_OUT_TOO_WIDE = "FanOutTooWide"  # more outputs than the invocation has time left to register and send
    UNJOINED_FAN_OUT = "UnjoinedFanOut"  # a branch's several outputs would share its one place in its join's list
    PAYLOAD_UNREADABLE = "PayloadUnreadable"  # a claim-checked payload could not be read back (`asya.claims`)
    RUNTIME_CRASH = "RuntimeCrash"
    CANCELED = "Canceled"
    PAUSED = "Paused"
    REDRIVEN = "Redriven"  # SQS gave up on a delivery (crash, timeout, out of memory) and redrove it to x-sump
    JOINED = "Joined"  # a branch gathered by its join: its result went on in the joined envelope (`asya.joins`)
    JOIN_FAILED = "JoinFailed"  # more branches of a join failed than its `on_failure` tolerates
    LOOP_LIMIT = "LoopLimit"  # a flow program's loop would go round more than its max_iterations (`asya.flows`)
    FLOW_ERROR = "FlowError"  # a flow program's condition cannot be read on the payload (`asya.flows`)
    UNKNOWN_PROGRAM = "UnknownProgram"  # an `x-asya-flow` program the mesh did not deploy (`asya.flows`)
    NOT_ADMITTED = "NotAdmitted"  # an envelope from outside the mesh that cannot start a task (`asya.admission`)
    NEWER_VERSION = "NewerVersion"  # an envelope of a later format than this sidecar reads (`asya.envelope`)

    @property
    def code(self) -> str:
        """`PolicyExhausted` → `policy_exhausted`."""
        return re.sub(r"(?<!^)(?=[A-Z])", "_", self.value).lower()


def cause(reason: Any, error: Any) -> str:
    """Why it failed, as a person reads it: `HandlerError` says only that the handler raised, so the
    handler's exception type (`error.type`) stands for it; any other reason is said as it is."""
    kind = error.get("type") if isinstance(error, dict) else None
    if reason == Reason.HANDLER_ERROR and kind:
        return str(kind)
    return str(reason or "")

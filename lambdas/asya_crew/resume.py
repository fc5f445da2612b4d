"""x-resume: continues a paused route after the gateway's resume call (docs/status.md).

The gateway has already moved the task from `paused` to `running`, restarted its deadline clock and
merged the human input into the payload; the envelope it sends here is the one x-pause kept, still at
`route.curr == "x-pause"`. x-resume shifts the route past x-pause, as if x-pause had produced an
output frame, and sends the envelope to the next actor (or to x-sink when nothing is left).

A flow program decides where the envelope goes after the pause on the resumed payload itself: one the
gateway sent in S3 (over the claim-check threshold, `asya.claims`) is read back first, and checked in
again as it is sent on.
"""

from __future__ import annotations

from functools import partial

import orjson
from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from asya.abi import Frame
from asya.claims import Claims, referenced, unrestorable
from asya.envelope import Envelope, EnvelopeError, parse_envelope, utc_now
from asya.flows import FlowError, FlowHeaderError, FlowPlace, continue_flow
from asya.headers import FLOW_HEADER, PAUSE_HEADER
from asya.names import PAUSE, RESUME
from asya.reasons import Reason
from asya.routing import Outbound, error_details, fail, forward, to_sump
from asya.telemetry import Telemetry
from asya_crew.crew import CrewSettings, Decide, Keep, crew_handler, pass_to_sump, rejected


def decide(
    record: SQSRecord, telemetry: Telemetry, claims: Claims | None = None, deployed: frozenset[str] | None = None
) -> Keep:
    """`claims`: the mesh's claim checks, if it has a bucket for them; `deployed`: the versions of the
    flow programs the mesh deployed, the only ones x-resume runs (`asya.flows.FlowPlace.of`)."""
    now = utc_now()
    try:
        envelope = parse_envelope(record.body)
    except EnvelopeError as exc:
        return pass_to_sump(rejected(record, RESUME, exc), record)
    if envelope.route.curr != PAUSE:
        message = f"x-resume continues envelopes paused at x-pause; route.curr is {envelope.route.curr!r}"
        return pass_to_sump(
            to_sump(envelope, RESUME, Reason.ROUTE_MISMATCH, error_details(None, message), now).wire, record
        )
    if FLOW_HEADER in envelope.headers and referenced(envelope):
        problem = unrestorable(envelope, claims, "the payload is in S3 but x-resume has no claim bucket")
        if problem is not None:
            unreadable = to_sump(envelope, RESUME, Reason.PAYLOAD_UNREADABLE, error_details(problem), now)
            return pass_to_sump(unreadable.wire, record)
    headers = {key: value for key, value in envelope.headers.items() if key != PAUSE_HEADER}
    frame = Frame(
        payload=envelope.payload, next=list(envelope.route.next), headers=headers, status=envelope.status_wire()
    )
    try:  # a flow program decides on the resumed payload where it goes after the pause (docs/flows.md)
        if deployed is not None:
            FlowPlace.of(envelope.headers, deployed)
        (frame,) = continue_flow(envelope, [frame])
    except FlowHeaderError as exc:
        telemetry.log_failure("the flow header is refused", error_message=str(exc), reason=exc.reason.value)
        return pass_to_sump(to_sump(envelope, RESUME, exc.reason, error_details(exc), now).wire, record)
    except FlowError as exc:
        details = error_details(None, str(exc))
        outbound = fail(
            envelope,
            RESUME,
            reason=Reason.LOOP_LIMIT if exc.loop_limit else Reason.FLOW_ERROR,
            details=details,
            now=now,
        )
        return _sent(envelope, outbound, claims)
    outbound = forward(envelope, frame, 0, PAUSE, now)
    telemetry.count("TasksResumed")
    return _sent(envelope, outbound, claims)


def _sent(envelope: Envelope, outbound: Outbound, claims: Claims | None) -> Keep:
    """The envelope sent on, its payload in S3 again if it is over the threshold."""
    body = orjson.dumps(outbound.wire).decode()
    if claims is not None:
        body = claims.check_in(outbound.wire, body)
    return Keep(envelope.id, None, outbound.wire, [(outbound.destination, body)])


def decider(settings: CrewSettings) -> Decide:
    return partial(decide, claims=settings.claims(), deployed=settings.flow_versions)


lambda_handler = crew_handler(RESUME, decider)

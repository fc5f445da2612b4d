"""x-sump: the final dead end (docs/routing.md). Infrastructure errors, failures from x-sink, and whatever
SQS redrove from an actor's queue after repeated delivery failures (the function crashed, timed out or
ran out of memory) all end here.

Every message is kept at `results/<ns>/<id>/sump.json` with a clear reason, logged as a structured
error and counted (`SumpArrivals` by reason). A redriven message is recorded as failed with reason
`Redriven` and the queue it came from; a body that is not even JSON is kept as it came. The task is
recorded as failed unless it already ended (x-sink records failures before forwarding them here),
except for a branch bound for a join (`asya.joins`): its failure is sent to the join actor, which
records it and counts it for its join.
"""

from __future__ import annotations

from aws_lambda_powertools.utilities.data_classes.sqs_event import SQSRecord

from asya.envelope import EnvelopeError, Phase, parse_envelope, rfc3339, utc_now
from asya.joins import bound_for
from asya.names import SUMP
from asya.reasons import Reason
from asya.routing import error_details, sump_body
from asya.telemetry import Telemetry
from asya_crew.crew import CrewSettings, Decide, Keep, crew_handler, rejected


def decide(record: SQSRecord, telemetry: Telemetry) -> Keep:
    keep = _annotate(record)
    status = keep.document.get("status", {})
    reason = str(status.get("reason", "unknown"))
    telemetry.logger.set_correlation_id(keep.envelope_id)  # the error log below is this envelope's
    telemetry.count("SumpArrivals")  # what the alarm watches
    telemetry.count("SumpArrivals", "reason", reason)  # what the dashboard splits
    telemetry.logger.error(
        "envelope reached x-sump",
        extra={
            "envelope_id": keep.envelope_id,
            "reason": reason,
            "actor": status.get("actor"),
            "error": status.get("error"),
        },
    )
    return keep


def _annotate(record: SQSRecord) -> Keep:
    now = utc_now()
    try:
        envelope = parse_envelope(record.body)
    except EnvelopeError as exc:
        wire = rejected(record, SUMP, exc)
        return Keep(wire["id"], "sump", wire, final=Phase.FAILED.value)
    document = envelope.to_dict()
    status = document.setdefault("status", {})
    if status.get("phase") != Phase.FAILED.value:
        source = record.raw_event.get("attributes", {}).get("DeadLetterQueueSourceArn", "").rsplit(":", 1)[-1]
        where = source or f"the queue of actor {envelope.route.curr!r}"
        message = (
            f"delivery from {where} failed repeatedly (the function crashed, timed out or ran out of memory) "
            f"after {record.attributes.approximate_receive_count} receives"
        )
        status.update(
            phase=Phase.FAILED.value,
            reason=Reason.REDRIVEN.value,
            error=error_details(None, message),
            updated_at=rfc3339(now),
        )
    join = bound_for(envelope.headers)
    if join is not None:  # a branch its join gathers: kept and listed here, its failure counted there
        follow_up = (join.join, sump_body(document, record.body))
        return Keep(envelope.id, "sump", document, [follow_up], final=Phase.FAILED.value, recorded=False)
    return Keep(envelope.id, "sump", document, final=Phase.FAILED.value)


def decider(_settings: CrewSettings) -> Decide:
    return decide


lambda_handler = crew_handler(SUMP, decider)

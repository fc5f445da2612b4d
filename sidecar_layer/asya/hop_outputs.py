"""What a hop's handler outcome becomes, apart from the hop's own checks (`asya.hop`): its outputs
sent on, a failure met by the resiliency policy, a failure a flow program's `except` takes, a flow
program that cannot go on, and a branch that gave its join several outputs. Shared with a Spark
actor's collector, whose batch meets the same policy."""

from __future__ import annotations

import datetime as dt
from typing import Any

from asya import flows, routing
from asya.abi import Frame
from asya.config import SidecarConfig
from asya.envelope import Envelope, parse_rfc3339, utc_now
from asya.headers import FIRST_ATTEMPT_HEADER, FLOW_HEADER
from asya.joins import crowded, one_output, stamp
from asya.outcomes import HopOutcome
from asya.reasons import Reason
from asya.resiliency import Retry, decide
from asya.routing import Outbound, error_details
from asya.telemetry import Telemetry

LOGGED_MESSAGE_CHARS = 300  # of an error's message in a failure's log line; the envelope keeps it whole


def handler_failure(
    config: SidecarConfig, envelope: Envelope, error: Exception, telemetry: Telemetry
) -> tuple[HopOutcome, list[Outbound]]:
    """The resiliency policy's answer to a handler error: a delayed retry on the actor's own queue, or
    a failure (x-sink, or the policy's `on_exhausted` actors), unless the envelope's flow program has
    an `except` for it (`asya.flows.caught`), where the task goes on instead. Also the answer for
    every envelope of a Spark batch whose DataFrame handler raised."""
    actor = config.actor
    now = utc_now()
    policy = config.resiliency.policy_for(error)
    attempt = envelope.status.attempt if envelope.status else 1
    first_attempt = parse_rfc3339(str(envelope.headers.get(FIRST_ATTEMPT_HEADER))) or now
    decision = decide(policy, attempt, first_attempt, now)
    if isinstance(decision, Retry):
        assert policy is not None  # decide() only retries under a policy
        telemetry.count("Retries")
        retry = routing.retry(
            envelope, actor, attempt=decision.attempt, max_attempts=policy.max_attempts, delay=decision.delay, now=now
        )
        return HopOutcome.RETRIED, [retry]
    details = error_details(error)
    telemetry.log_failure("handler failed", **logged_error(details), reason=decision.reason)
    taken = flow_catches(envelope, details, decision.reason, actor, now, telemetry=telemetry)
    if taken is not None:  # the flow's `except` goes on from here (docs/flows.md)
        return HopOutcome.FORWARDED, taken
    failure = routing.fail(
        flows.out_of_program(envelope) if decision.on_exhausted else envelope,
        actor,
        reason=decision.reason,
        details=details,
        now=now,
        on_exhausted=decision.on_exhausted,
    )
    return HopOutcome.FAILED, [failure]


def forwarded(envelope: Envelope, frames: list[Frame], actor: str, now: dt.datetime) -> list[Outbound]:
    """The outputs of a hop that produced `frames` (more than one: a fan-out)."""
    fanned_out = len(frames) > 1
    return [
        routing.forward(envelope, frame, index, actor, now, fanned_out=fanned_out) for index, frame in enumerate(frames)
    ]


def sent_on(
    envelope: Envelope, frames: list[Frame], actor: str, now: dt.datetime, joined_by: frozenset[str]
) -> tuple[HopOutcome, list[Outbound]]:
    """The outputs of a hop whose handler gave `frames`, those of a source (`joined_by`, the joins
    that gather its branches) framed for their join; or x-sump, for a fixed route's branch whose
    several outputs its join would gather as one (`unjoined_fan_out`)."""
    outputs = forwarded(envelope, frames, actor, now)
    in_program = FLOW_HEADER in envelope.headers
    # a program's one output is framed for no join: its route may pass a join it is no branch of (a
    # map's further on), and a join of one gathers it as a join's first arrival would anyway
    if joined_by and (not in_program or len(frames) > 1):
        stamp(envelope, outputs, joined_by)
    unjoined = None if in_program else unjoined_fan_out(envelope, outputs, actor, now)
    if unjoined is not None:
        return HopOutcome.SUMPED, [unjoined]
    return HopOutcome.FORWARDED, outputs


def unjoined_fan_out(envelope: Envelope, outputs: list[Outbound], actor: str, now: dt.datetime) -> Outbound | None:
    """x-sump, failed, for a fixed route's branch whose handler gave several outputs that its join
    would gather as that one branch (no join of their own on the way, `asya.joins.crowded`): the
    branch fails saying why, x-sump hands its ending to the join, whose `on_failure` judges it, so the
    task ends at once instead of running until its deadline with a branch's result lost. Its input is
    kept whole for a redrive once the handler is fixed. (A flow program checks its own: `asya.flows`.)"""
    frame = crowded(envelope.headers, outputs)
    if frame is None:
        return None
    why = f"its branch has one place in {frame.join}'s list: a fan-out inside a branch needs a join of its own"
    details = error_details(None, one_output(actor, len(outputs), why))
    return routing.to_sump(envelope, actor, Reason.UNJOINED_FAN_OUT, details, now)


def flow_catches(
    envelope: Envelope, details: dict[str, Any], reason: Reason, actor: str, now: dt.datetime, *, telemetry: Telemetry
) -> list[Outbound] | None:
    """The outputs of a failure its flow's `except` takes (`asya.flows.caught`), if one does; a flow
    that cannot go on from the `except` fails the envelope with why. A failure taken leaves a line in
    the task's log: the one trace of it once the task has ended (the header that carries it goes with
    the envelopes), which the console's task page shows."""
    try:
        frames = flows.caught(envelope, details, reason.value, actor)
    except flows.FlowError as exc:
        return [flow_failed(envelope, actor, exc, envelope.payload, now, telemetry=telemetry)]
    if frames is None:
        return None
    taken = forwarded(envelope, frames, actor, now)
    telemetry.log_failure("the flow's except takes the failure", **logged_error(details), goes_to=taken[0].destination)
    return taken


def logged_error(details: dict[str, Any]) -> dict[str, Any]:
    """An error's type and message as its failure's log line carries them: the line is what the
    console's task log and Logs Insights show for the hop, so it says what failed, not only that
    something did. The message is the handler's own exception text (the task record holds it too),
    cut short: a message quoting a large input would swell every log line of a failing batch."""
    return {"error_type": details["type"], "error_message": details["message"][:LOGGED_MESSAGE_CHARS]}


def flow_failed(
    envelope: Envelope, actor: str, error: flows.FlowError, payload: Any, now: dt.datetime, *, telemetry: Telemetry
) -> Outbound:
    """x-sink, failed: the flow program cannot go on with `payload` (a loop over its bound, a condition
    it cannot read or that the evaluator's bounds refuse). The error keeps the payload the program was
    deciding on, not the actor's input; the log says why, as the envelope does."""
    reason = Reason.LOOP_LIMIT if error.loop_limit else Reason.FLOW_ERROR
    telemetry.log_failure("the flow program cannot go on", error_message=str(error), reason=reason.value)
    decided = envelope.model_copy(update={"payload": payload})
    return routing.fail(decided, actor, reason=reason, details=error_details(None, str(error)), now=now)

"""Envelopes from outside the mesh: a producer's, sent straight to an actor's queue without the
mesh's seal (`asya.seal`). Each is a new task at its route's start, or it is refused (docs/security.md,
"The queue door").

The gateway refuses the mesh's own headers from its callers and makes every task id itself; a queue
is a second front door, so the same rules hold there. An envelope that did not come from the mesh's
own functions may not be a hop of an existing task: its id must be new, it starts at its route's first
position, at its first attempt, and it sets none of the `x-asya-*` headers (a fan-out's root, a join's
frame, a redrive count, stealth, a flow program's place, a pause).

Admitted, its first hop runs as any other, and that hop's claim makes its task record (`pending` at
first, no one's: only admins see it) with the SQS message it came in (`admitted_by`), in the one write
a hop makes; a redelivery of the same message finds its own record, another message under the same id
is refused (`Claim.TAKEN`). Its outputs go on sealed. If its function dies on it until SQS gives up,
the dead-letter queue brings x-sump the message as it came, unsealed: x-sump ends that task
(`Redriven`) because the record names the same message. A Spark actor's dispatcher instead makes the
record first (`TaskStore.admit`) and puts the envelope back on its queue, sealed, so that a batch
holds the mesh's own envelopes only. Refused, it goes to x-sump under an id of its own
(`sqs-<message id>`), without its headers, so it touches no task.
"""

from __future__ import annotations

import datetime as dt

from asya.envelope import Envelope
from asya.headers import RESERVED_PREFIX
from asya.outcomes import HopOutcome
from asya.reasons import Reason
from asya.routing import Outbound, admitted, error_details, raw_to_sump
from asya.task_store import TaskStore


def admission_problem(envelope: Envelope) -> str | None:
    """Why an envelope from outside the mesh cannot start a task, or None."""
    if envelope.route.prev:
        return "route.prev: an envelope from outside the mesh starts its task at the route's first actor"
    if envelope.parent_id is not None:
        return "parent_id: only the mesh relates one envelope to another (a fan-out's branches)"
    reserved = sorted(name for name in envelope.headers if name.lower().startswith(RESERVED_PREFIX))
    if reserved:
        return f"headers: {', '.join(reserved)}: the mesh's own headers are set by the mesh only"
    if envelope.status is not None and envelope.status.attempt != 1:
        return "status.attempt: an envelope from outside the mesh is its task's first attempt"
    return None


def refused(envelope: Envelope, message_id: str, actor: str, problem: str, now: dt.datetime) -> Outbound:
    """x-sump for an envelope from outside the mesh that cannot start a task: kept under its message's
    id, its route and headers only in the original it quotes, so that it names and ends no task."""
    details = error_details(None, f"not admitted: {problem}")
    return raw_to_sump(
        envelope.to_dict(), message_id, actor, reason=Reason.NOT_ADMITTED, details=details, now=now, foreign=True
    )


def taken(envelope: Envelope) -> str:
    return f"id: {envelope.id!r} is a task the mesh already has; a new task needs a new id"


def admit(
    envelope: Envelope, message_id: str, actor: str, store: TaskStore | None, now: dt.datetime
) -> tuple[HopOutcome, Outbound]:
    """What a Spark actor's dispatcher does with an unsealed envelope, before any batch takes it: its
    record made (`TaskStore.admit`) and the same envelope round its queue again, sealed when it is sent,
    so a batch holds the mesh's own envelopes only; or x-sump. `store`: the task table (None: the mesh
    keeps no task records, so there is no task to take over)."""
    problem = admission_problem(envelope)
    if problem is None and store is not None and not store.admit(envelope.id, message_id):
        problem = taken(envelope)
    if problem is not None:
        return HopOutcome.REFUSED, refused(envelope, message_id, actor, problem, now)
    return HopOutcome.ADMITTED, admitted(envelope, actor)

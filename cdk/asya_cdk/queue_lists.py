"""Which of the mesh's queues each audience sends to, and how many managed policies list them: what
`asya_cdk.queue_grants` grants and `asya_cdk.plan` counts, without the CDK."""

from __future__ import annotations

import math
from collections.abc import Iterable

from asya.names import CREW, PAUSE, SINK, SUMP

# An ARN is at most 118 characters with its quotes (a 35-character account prefix, an 80-character
# queue name): 40 of them and the statement's own stay well under a managed policy's 6,144.
QUEUES_PER_POLICY = 40
ACTOR_CREW = (SINK, SUMP, PAUSE)  # the crew an actor's envelopes may be routed to


def actor_destinations(actors: Iterable[str]) -> list[str]:
    """The queues an actor (or a Spark actor's collector) may send to: every actor's, and the crew's
    it routes to."""
    return sorted({*(a for a in actors if a not in CREW), *ACTOR_CREW})


def every_queue(actors: Iterable[str]) -> list[str]:
    """The queues the gateway and the crew may send to: every actor's and the whole crew's."""
    return sorted({*actors, *CREW})


def queue_policies(actors: Iterable[str]) -> int:
    """How many managed policies grant the mesh's queues: those of the actors' list and the whole list."""
    names = list(actors)
    return sum(math.ceil(len(queues) / QUEUES_PER_POLICY) for queues in (actor_destinations(names), every_queue(names)))

"""The steps recent tasks actually took, for the graph to draw beside the flows' declared ones.

A handler may rewrite its envelope's route (`escalate` in the reviews example is reached only that
way), so the flows alone leave such an actor unconnected. The route of each recent task (fan-out
branches included, which is where such steps usually are) says where it went: the actors it visited
(`route.prev`, then `route.curr`), one step between each two, and, for a task that succeeded, its last
actor to x-sink, which wrote its ending. They are read from the gateway's listing, so the console
draws the same on AWS as locally: the newest `RECENT` tasks of every status (one page of the listing;
a pending task has no route yet and adds no step), at most once every `REFRESH_SECONDS` whoever asks.
A step once read stays drawn while the console runs (up to `KEPT_STEPS` of them), when its tasks are no
longer among the newest and while the gateway does not answer: the graph does not lose an edge
between two loads because a burst of other tasks came in.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Protocol

from asya.envelope import visited
from asya.names import SINK
from asya.task_record import TaskStatus
from asya_local.gateway_client import GatewayError, GatewayUnreachableError

Step = tuple[str, str]
RECENT = 100  # the newest tasks read, of every status, branches included: one page of the listing
REFRESH_SECONDS = 10.0
KEPT_STEPS = 1_000  # steps are pairs of the mesh's actors: far more than a mesh has, a bound all the same


class Listing(Protocol):
    def tasks(self, *, limit: int = ..., roots: bool = ...) -> list[dict[str, Any]]: ...


def steps_of(task: Mapping[str, Any]) -> list[Step]:
    """The steps one task took, in order (its route as recorded, to x-sink when it succeeded)."""
    route = task.get("route")
    if not isinstance(route, dict) or not isinstance(route.get("prev"), list):
        return []
    actors = visited({"prev": route["prev"], "curr": route.get("curr") or ""})
    if task.get("status") == TaskStatus.SUCCEEDED and actors and actors[-1] != SINK:
        actors.append(SINK)
    return list(itertools.pairwise(actors))


def steps_taken(tasks: Iterable[Mapping[str, Any]]) -> frozenset[Step]:
    return frozenset(step for task in tasks for step in steps_of(task) if step[0] != step[1])


class SeenRoutes:
    """The steps the gateway's tasks took while the console ran, read at most once per `refresh` seconds."""

    def __init__(self, gateway: Listing, refresh: float = REFRESH_SECONDS, clock: Callable[[], float] = time.monotonic):
        self.gateway = gateway
        self.refresh = refresh
        self.clock = clock
        self._read: tuple[float, frozenset[Step]] | None = None
        self._lock = threading.Lock()

    def steps(self) -> frozenset[Step]:
        with self._lock:
            now = self.clock()
            if self._read is None or now - self._read[0] >= self.refresh:
                kept = self._read[1] if self._read is not None else frozenset()
                read = self._steps()
                both = kept | read
                self._read = (now, both if len(both) <= KEPT_STEPS else read)
            return self._read[1]

    def _steps(self) -> frozenset[Step]:
        """The newest tasks' steps; none while the gateway does not answer (those kept stay)."""
        try:
            recent = self.gateway.tasks(limit=RECENT, roots=False)
        except (GatewayError, GatewayUnreachableError):
            return frozenset()
        return steps_taken(recent)

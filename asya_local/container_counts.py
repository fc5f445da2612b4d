"""How many tasks each container actor runs, as the console and `asya queues` show it: "2 of 4 tasks"
(running of the most its scaling allows), "0 (scaled to zero)" when none runs or is wanted.

The figures are the ECS service's `runningCount` and `desiredCount` (`ecs:DescribeServices`, one
call per cluster and ten services), on AWS as on the local stack, where the local scaler keeps a
service of the same name at the number of consumer processes it runs (`asya_local.container_scaling`).
Which services to ask for is the stack's `ContainerServices` output (`asya_cdk.container.
container_services`): a mesh without container actors has none and is asked nothing new.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from asya.names import CONTAINER_SERVICES_OUTPUT

DESCRIBED_AT_ONCE = 10  # the most services one DescribeServices names


@dataclass(frozen=True, slots=True)
class ServicePlace:
    """Where a container actor's ECS service is, and the most tasks it may run."""

    cluster: str
    service: str
    max_tasks: int


@dataclass(frozen=True, slots=True)
class TaskCount:
    running: int
    desired: int
    max_tasks: int

    def text(self) -> str:
        """What the console's graph and `asya queues` print; a count still moving says where to."""
        if self.running == 0 and self.desired == 0:
            return "0 (scaled to zero)"
        shown = f"{self.running} of {self.max_tasks} tasks"
        return shown if self.desired == self.running else f"{shown}, {self.desired} wanted"

    def short(self) -> str:
        """The graph's node, a line too narrow for `text`: "2/4 tasks", an arrow while it scales."""
        moving = "↑" if self.desired > self.running else "↓" if self.desired < self.running else ""
        return f"{self.running}/{self.max_tasks}{moving} tasks"


def service_places(outputs: dict[str, str]) -> dict[str, ServicePlace]:
    """The container actors' services, by actor name, from the stack's outputs (none without the output)."""
    found = json.loads(outputs.get(CONTAINER_SERVICES_OUTPUT) or "{}")
    return {
        actor: ServicePlace(str(place["cluster"]), str(place["service"]), int(place["max"]))
        for actor, place in found.items()
    }


def task_counts(ecs: Any, places: dict[str, ServicePlace]) -> dict[str, TaskCount]:
    """Each container actor's tasks running and wanted; an actor whose service ECS does not know
    (not created yet, or removed) is left out rather than shown as scaled to zero."""
    by_cluster: dict[str, dict[str, str]] = {}
    for actor, place in places.items():
        by_cluster.setdefault(place.cluster, {})[place.service] = actor
    counts = {}
    for cluster, actors in by_cluster.items():
        names = sorted(actors)
        for begin in range(0, len(names), DESCRIBED_AT_ONCE):
            answer = ecs.describe_services(cluster=cluster, services=names[begin : begin + DESCRIBED_AT_ONCE])
            for service in answer.get("services", []):
                named = actors.get(service["serviceName"])
                if named is not None:
                    counts[named] = TaskCount(
                        int(service["runningCount"]), int(service["desiredCount"]), places[named].max_tasks
                    )
    return counts

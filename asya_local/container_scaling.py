"""Scaling a container actor's local consumers from zero, by the rule its ECS service follows on AWS.

Every second the scaler reads each container actor's queue. Its backlog is the most messages visible
and in flight over the last minute (or the cool-down, if that is shorter), as the service's alarm reads
SQS's one-minute maximum. While that is above 0 it runs `ceil(backlog / messages_per_task)` consumers,
between `min_tasks` and `max_tasks`, following the backlog up and down. Once the queue has had
nothing visible or in flight for the cool-down, it stops all but `min_tasks`. A consumer it stops
gets SIGTERM and drains its hop (`asya.consumer`). As ECS, it stops only consumers not protected
from scale-in (`asya_local.task_agent`): a protected one, busy with a hop, runs on until its
protection is cleared or lapses, and is stopped at the next tick if still one too many. So a message
after an idle spell waits for a consumer to start, as a task on a cold service does (a few seconds
here, a minute or more on Fargate).

The scaler keeps an ECS service of the actor's name on the local endpoint at the number of consumers
it runs (`ServiceMirror`), so the console and `asya queues` read a local container actor's count as
they read a deployed one's (`asya_local.container_counts`).
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from asya import variables
from asya_local.container_counts import ServicePlace
from asya_local.deployed_functions import ContainerTrigger, LocalFunction
from asya_local.worker_processes import WorkerProcesses

TICK_SECONDS = 1.0
PEAK_SECONDS = 60.0  # the period of the backlog's maximum that the service's alarm reads on AWS


def wanted(trigger: ContainerTrigger, running: int, backlog: int, idle_for: float, cooldown: float) -> int:
    """How many consumers should run: `backlog` is the peak of visible plus in flight; `idle_for` how long
    the queue has had neither."""
    if backlog > 0:
        return min(trigger.max_tasks, max(trigger.min_tasks, math.ceil(backlog / trigger.messages_per_task)))
    return trigger.min_tasks if idle_for >= cooldown else running


@dataclass
class Scaler:
    """`count(name)`, `start(name)` and `stop_one(name)` act on one actor's consumer processes
    (`stop_one` False when every one is protected from scale-in); `on_line(name, text)` tells the
    actor's log what changed."""

    sqs: Any
    triggers: dict[str, ContainerTrigger]
    cooldown: float
    count: Callable[[str], int]
    start: Callable[[str], None]
    stop_one: Callable[[str], bool]
    on_line: Callable[[str, str], None]
    on_count: Callable[[str, int], None] = lambda _name, _count: None  # how many consumers run, after each tick
    _idle_since: dict[str, float] = field(default_factory=dict)
    _seen: dict[str, list[tuple[float, int]]] = field(default_factory=dict)  # (when, backlog) in the peak's period
    _stopped: threading.Event = field(default_factory=threading.Event)
    _said: dict[str, tuple[int, int]] = field(default_factory=dict)  # the last tick's (running, target)
    _kept: dict[str, int] = field(default_factory=dict)  # consumers too many but protected, at the last tick

    def run(self) -> None:
        while not self._stopped.wait(TICK_SECONDS):
            for name in self.triggers:
                try:
                    self.tick(name)
                except Exception as exc:  # noqa: BLE001 - the endpoint is stopping, or a passing error: next tick
                    if not self._stopped.is_set():
                        self.on_line(name, f"scaling skipped: {type(exc).__name__}: {exc}")

    def stop(self) -> None:
        self._stopped.set()

    def tick(self, name: str, now: float | None = None) -> int:
        """Bring `name`'s consumers to what its queue asks for; returns how many that is."""
        now = time.monotonic() if now is None else now
        trigger = self.triggers[name]
        backlog = self.backlog(trigger.queue_url)
        if backlog:
            self._idle_since.pop(name, None)
        idle_for = now - self._idle_since.setdefault(name, now) if not backlog else 0.0
        period = min(PEAK_SECONDS, self.cooldown)
        seen = [(when, count) for when, count in self._seen.get(name, []) if when > now - period]
        self._seen[name] = [*seen, (now, backlog)]
        backlog = max(count for _, count in self._seen[name])
        running = self.count(name)
        target = wanted(trigger, running, backlog, idle_for, self.cooldown)
        if target != running and (running, target) != self._said.get(name):  # once, not each tick one is kept
            self.on_line(name, f"scaling {running} -> {target} consumers (backlog {backlog})")
        self._said[name] = (running, target)
        for _ in range(target - running):
            self.start(name)
        kept = sum(1 for _ in range(running - target) if not self.stop_one(name))
        if kept and kept != self._kept.get(name):
            self.on_line(name, f"{kept} consumers protected from scale-in keep running until their hops end")
        self._kept[name] = kept
        self.on_count(name, target)
        return target

    def backlog(self, queue_url: str) -> int:
        names = ["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"]
        found = self.sqs.get_queue_attributes(QueueUrl=queue_url, AttributeNames=names)["Attributes"]
        return sum(int(found.get(name, 0)) for name in names)


@dataclass
class ServiceMirror:
    """Each container actor's ECS service on the local endpoint (`places`, by the actor's resource
    name), created at the consumers first started and updated when their number changes: moto counts
    a service's desired tasks as running, as the consumers the scaler starts are."""

    ecs: Any
    places: dict[str, ServicePlace]
    _shown: dict[str, int] = field(default_factory=dict)

    def create(self, name: str, count: int) -> None:
        place = self.places[name]
        self.ecs.create_service(
            cluster=place.cluster, serviceName=place.service, taskDefinition=name, desiredCount=count
        )
        self._shown[name] = count

    def __call__(self, name: str, count: int) -> None:
        if name in self._shown and self._shown[name] != count:
            place = self.places[name]
            self.ecs.update_service(cluster=place.cluster, service=place.service, desiredCount=count)
            self._shown[name] = count


def start_scaler(
    sqs: Any,
    functions: list[LocalFunction],
    workers: WorkerProcesses,
    source: Callable[[LocalFunction], str],
    on_line: Callable[[str, str], None],
    *,
    ecs: Any,
    places: dict[str, ServicePlace],
) -> Scaler:
    """A scaler of these container actors' consumers, running in a thread of its own until `stop`;
    `places`: their services by actor name (the stack's `ContainerServices` output)."""
    by_name = {function.name: function for function in functions}
    mirror = ServiceMirror(ecs, {name: places[source(function)] for name, function in by_name.items()})
    triggers = {
        name: function.trigger for name, function in by_name.items() if isinstance(function.trigger, ContainerTrigger)
    }
    scaler = Scaler(
        sqs,
        triggers,
        variables.LOCAL_CONTAINER_COOLDOWN.read(os.environ),
        count=lambda name: workers.running(source(by_name[name])),
        start=lambda name: workers.spawn(by_name[name]),
        stop_one=lambda name: workers.retire(source(by_name[name])),
        on_line=lambda name, text: on_line(source(by_name[name]), text),
        on_count=mirror,
    )
    for name in triggers:
        mirror.create(name, scaler.count(name))
    threading.Thread(target=scaler.run, name="asya-container-scaler", daemon=True).start()
    return scaler

"""What a task's page draws of the mesh (a task of a route flow; a program flow's task has its
program's graph, `asya_local.console.task_program`): only the actors the task can reach, not every
actor of the mesh. Those are its flow's route (or, for a task started with a route of its own, that
route), every actor its route and its branches' routes name (visited, current, to come: a handler that
rewrote the route to `escalate` or x-pause adds it), the actors its failed branches failed at, and
x-sink and x-sump. A summarise task of the reviews example draws split, score, summarise and the
crew's two, not triage, escalate or x-pause.

The flow's steps are drawn as declared; the steps the task and its branches took that the flow does
not declare (a rewritten route) are drawn dashed, as on the mesh's graph (`asya_local.console.graph`).
An actor the task reaches only later (a route rewritten after the page was drawn) is drawn on reload.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from asya_local.console.graph import Layout, layout
from asya_local.console.seen import steps_of
from asya_local.console.topology import Topology

OWN_ROUTE = "route"  # the name a task's own route is drawn under when it names no flow of the mesh


def task_graph(topology: Topology, task: Mapping[str, Any], branches: Iterable[Mapping[str, Any]] = ()) -> Layout:
    """The graph of `task` (and its `branches`, as read for its page)."""
    routes = [task, *branches]
    flow = task.get("flow")
    named = topology.flows.get(flow, ()) if isinstance(flow, str) else ()
    name, declared = (str(flow), named) if named else (OWN_ROUTE, tuple(route_actors(task)))
    failed_at = [branch.get("actor") for branch in task.get("failed_branches") or [] if isinstance(branch, dict)]
    reached = {*declared, *(actor for route in routes for actor in route_actors(route)), *filter(None, failed_at)}
    steps = {step for route in routes for step in steps_of(route)}
    return layout(topology.reaching(reached, {name: declared} if declared else {}), steps)


def route_actors(task: Mapping[str, Any]) -> list[str]:
    """Every actor a task's recorded route names: those it visited, where it is, those to come."""
    route = task.get("route")
    if not isinstance(route, dict):
        return []
    current = [route["curr"]] if route.get("curr") else []
    return [str(actor) for actor in (*(route.get("prev") or []), *current, *(route.get("next") or []))]

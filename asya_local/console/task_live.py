"""A task's page kept live: what the page shows of the task as it stands (the fragments each of its
status events brings), and where the page follows the task from.

The page follows the task straight from the gateway when the gateway lets the page's origin read its
streams (`asya up`'s console: `LocalStack.browser_origins`): the console asks the gateway for a
follow ticket (`asya_gateway.tickets`) and the page opens `new EventSource(follow_url)`, its FLY events
shown as they come and, at each status event, the task's fragments fetched from the console
(`fragments`), which renders them as every page of it. The browser then holds a ticket that lets it
read that one task's events for five minutes, and never the console's credential. Otherwise (`asya
console` on another port, a deployed mesh whose `gateway.cors_origins` does not list the console) the
console relays the gateway's events itself (`/events/tasks/<id>`), as the same fragments."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, Protocol

from flask import render_template, request

from asya.task_record import TERMINAL
from asya_local.console.failure import BRANCH_FAILED
from asya_local.console.task_program import steps_counted
from asya_local.console.topology import Topology
from asya_local.gateway_client import GatewayClient, GatewayError, GatewayUnreachableError

END = "end"  # the last fragment: the task has ended, the page stops following


class Console(Protocol):
    """What of the console (`asya_local.console.app.Console`) a task's page reads here."""

    gateway: GatewayClient
    topology: Topology
    gateway_origins: tuple[str, ...]


def fragments(console: Console, task_id: str, data: dict[str, Any]) -> list[tuple[str, str]]:
    """(event, data) of what the page shows of the task as it stands: why it ended (once it has), its
    state, its route's classes and a program's steps taken; `end` last once it has ended. `data` (a
    status event's view) stands in when the gateway no longer has the task."""
    found = console.gateway.task(task_id) or data  # the whole view: branches, hops, output
    branches = task_branches(console, found)
    ended = found.get("status") in TERMINAL
    shown = [("why", render_template("_task_why.html", task=found, branches=branches))] if ended else []
    shown.append(("task", render_template("_task_state.html", task=found, branches=branches, typed={})))
    shown.append(("route", json.dumps(route_classes(found, branches))))
    if found.get("flow") in console.topology.programs:
        shown.append(("steps", json.dumps(steps_counted(found, branches))))
    return [*shown, (END, "")] if ended else shown


def follow_url(console: Console, task_id: str) -> str | None:
    """Where the page follows the task from the gateway with a ticket; None when the gateway does not
    allow the page's origin (the console relays instead), or gives no ticket (an older gateway)."""
    if request.host_url.rstrip("/") not in console.gateway_origins:
        return None
    try:
        return str(console.gateway.follow_ticket(task_id)["follow_url"])
    except (GatewayError, GatewayUnreachableError, KeyError):
        return None


def task_branches(console: Console, task: dict[str, Any]) -> list[dict[str, Any]]:
    """The first branches of a fan-out root, each as the gateway reports it (a read each, so a few)."""
    found = []
    for branch_id in (task.get("branch_ids") or [])[:12]:
        branch = console.gateway.task(branch_id)
        found.append(branch or {"id": branch_id, "status": "pending"})
    return found


def route_classes(task: dict[str, Any], branches: Iterable[dict[str, Any]] = ()) -> dict[str, str]:
    """For the graph: which actors the task has visited, where it is, and where it goes; for a root that
    fanned out, the actors its branches visited too (its own envelope's route is one branch's: an actor
    only another branch went to, `escalate` say, would otherwise look untouched) and the actors at which
    its branches failed (its own envelope's route may have ended well: `BranchFailed`; a task whose
    join gave up failed at the join)."""
    route = task.get("route") or {}
    classes = dict.fromkeys(route.get("prev", []), "visited")
    classes.update({actor: "next" for actor in route.get("next", []) if actor not in classes})
    failed_branches = [branch for branch in task.get("failed_branches") or [] if branch.get("actor")]
    if route.get("curr"):  # where it is, or ended: a join that gave up failed there, by branches or not
        status = "ended" if task.get("reason") == BRANCH_FAILED else str(task.get("status"))
        classes[route["curr"]] = {"failed": "failed", "paused": "paused", "ended": "visited"}.get(status, "current")
    for branch in branches:
        branch_route = branch.get("route") or {}
        went = [*branch_route.get("prev", []), *([branch_route["curr"]] if branch_route.get("curr") else [])]
        for actor in went:
            if classes.get(actor, "next") == "next":
                classes[actor] = "visited"
    classes.update({branch["actor"]: "failed" for branch in failed_branches})
    return classes

"""What `asya demo` says at its end, in words a newcomer can follow.

Each input became a task. A task starts as one envelope; an actor that returns several outputs fans it
out (one envelope per feed row, per colour variant), and every envelope ends somewhere: after the
flow's last step, earlier at a step that returned nothing for it (a row the cleaning dropped ends
there, done), or failed (x-sump keeps a copy). The crew keeps one result per envelope that ended, so
results outnumber tasks. A task's status is the gateway's: succeeded once every envelope of it ended
well.

A flow program (docs/flows.md) takes each task on its own path: `paths_table` shows which one, and how
many hops (actor invocations) it cost; the program's decisions between them cost none.
"""

from __future__ import annotations

import json
from collections import Counter
from typing import Any

from rich.table import Table

from asya.envelope import visited
from asya_cdk.loaded_mesh import LoadedMesh
from asya_local.screen import status_text
from asya_local.task_text import branches_text, payload_summary

FINAL = ("succeeded", "failed", "canceled")  # x-sink's outcomes; x-sump's `sump` object is a copy
DROPPED = "dropped"  # an envelope that ended at an actor which returned nothing for it (`ending`)


def ending(doc: dict[str, Any]) -> str:
    """How an envelope x-sink kept ended: its outcome, but `dropped` for one that "succeeded" only in
    that its actor returned nothing for it (a row the cleaning dropped), so that no table calls it a
    success beside the ones that ran to the end. Such an envelope reaches x-sink with its route
    unshifted, still at that actor; one that ran to the end comes with no current actor left."""
    outcome = str(doc["outcome"])
    return DROPPED if outcome == "succeeded" and doc["envelope"]["route"].get("curr") else outcome


def results_table(kept: list[dict[str, Any]]) -> Table:
    """One row per envelope kept: its id, its parent's, how it ended, the actors it went through and
    its payload."""
    title = "results: one per envelope that ended (x-sink), and the copies x-sump and x-pause kept"
    table = Table(title=title, title_justify="left")
    for column in ("envelope", "parent", "outcome", "hops", "payload"):
        table.add_column(column, no_wrap=column != "payload", overflow="ellipsis")
    for doc in sorted(kept, key=lambda d: json.dumps(d["envelope"]["payload"], sort_keys=True)):
        envelope = doc["envelope"]
        table.add_row(
            envelope["id"][:8],
            (envelope.get("parent_id") or "")[:8],
            ending(doc),
            " ".join(visited(envelope["route"])),
            payload_summary(envelope["payload"]),
        )
    return table


def flow_words(mesh: LoadedMesh, name: str) -> str:
    """How the demo names the way its flow's tasks go: the route, or for a program flow (whose route in
    the mesh file is empty) the shortest way through its program, said to be one."""
    route = " → ".join(mesh.flow_route(name))
    return f"a program, at its shortest {route}" if name in mesh.programs else route


def tasks_table(tasks: list[dict[str, Any]]) -> Table:
    """One row per task: its id, what the gateway says of it, and the branches it fanned out into."""
    table = Table(title="tasks (one per input)", title_justify="left")
    for column in ("task", "status", "branches"):
        table.add_column(column, no_wrap=True)
    for task in tasks:
        status = str(task.get("status", ""))
        table.add_row(str(task["id"]), status_text(status), branches_text(task.get("branches")))
    return table


def paths_table(tasks: list[dict[str, Any]], kept: list[dict[str, Any]]) -> Table:
    """One row per task of a flow program: its input, the actors its envelope went through in order
    (one whose failure the program's `except` took is there too, before the one the `except` called)
    and how many, each an invocation and a message (x-sink's, which the cost bench counts, left out)."""
    ended = {str(doc["envelope"]["id"]): doc["envelope"] for doc in kept if doc["outcome"] in FINAL}
    table = Table(title="paths: the way the flow program took each task", title_justify="left")
    for column in ("task", "input", "status", "hops", "path"):
        table.add_column(column, no_wrap=column != "path")
    for task in tasks:
        envelope = ended.get(str(task["id"]))
        steps = visited(envelope["route"]) if envelope else []
        table.add_row(
            str(task["id"])[:8],
            payload_summary(task.get("input", "")),
            status_text(str(task.get("status", ""))),
            str(len(steps)),
            " → ".join(steps),
        )
    return table


def endings(kept: list[dict[str, Any]]) -> Counter[tuple[str, str]]:
    """How many envelopes ended, by (`ending`, the last step they reached), one count per envelope."""
    last: dict[str, tuple[str, str]] = {}
    for doc in kept:
        envelope = doc["envelope"]
        if doc["outcome"] in FINAL:
            steps = visited(envelope["route"])
            last[str(envelope["id"])] = (ending(doc), steps[-1] if steps else "")
    return Counter(last.values())


def summary(tasks: list[dict[str, Any]], kept: list[dict[str, Any]], route: list[str]) -> list[str]:
    """The ending in sentences: the tasks and their statuses, then where their envelopes ended: those
    that ran to the end of their way (a program's ways may end at different actors), then the others
    where they stopped, in the route's order. Why envelopes outnumber tasks is said only when one fanned out."""
    statuses = Counter(str(task.get("status")) for task in tasks)
    said = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    lines = [f"{len(tasks)} inputs became {len(tasks)} tasks: {said}."]
    ended = endings(kept)
    through = sorted((step for outcome, step in ended if outcome == "succeeded"), key=lambda s: _position(s, route))
    count = sum(ended[("succeeded", step)] for step in through)
    parts = [f"{count} after the last step ({' or '.join(through or route[-1:])})"]
    stopped = [item for item in ended.items() if item[0][0] != "succeeded"]
    for (outcome, step), count in sorted(stopped, key=lambda item: (_position(item[0][1], route), item[0][0])):
        why = "with no output there (dropped, done)" if outcome == DROPPED else outcome
        parts.append(f"{count} at {step}, {why}")
    fanned = any(doc["envelope"].get("parent_id") for doc in kept)  # a branch names the envelope it came from
    said_why = " (a task fans out into several)" if fanned else ""
    lines.append(f"Their envelopes{said_why} ended {sum(ended.values())} times: {'; '.join(parts)}.")
    return lines


def _position(step: str, route: list[str]) -> int:
    return route.index(step) if step in route else len(route)


def next_step(config: str, inputs: str, flow: str) -> list[str]:
    """What to run after the demo, which stops its stack: `asya up` keeps the same mesh running, with
    its console, and `asya send` gives it the demo's inputs again (or any other)."""
    return [
        f"next: `asya up --config {config}` keeps this mesh running (Ctrl-C stops it)",
        "      and prints the URL of its console: the mesh live, and every task.",
        f"      From another terminal, `asya send @{inputs} --flow {flow} --each` sends it these inputs again.",
    ]

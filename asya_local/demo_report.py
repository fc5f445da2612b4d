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

from collections import Counter
from typing import Any

from rich.table import Table

from asya.envelope import visited
from asya_cdk.loaded_mesh import LoadedMesh
from asya_local.screen import status_text
from asya_local.task_text import branches_text, payload_summary

FINAL = ("succeeded", "failed", "canceled")  # x-sink's outcomes; x-sump's `sump` object is a copy


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
    """How many envelopes ended, by (outcome, the last step they reached), one count per envelope."""
    last: dict[str, tuple[str, str]] = {}
    for doc in kept:
        envelope = doc["envelope"]
        if doc["outcome"] in FINAL:
            steps = visited(envelope["route"])
            last[str(envelope["id"])] = (str(doc["outcome"]), steps[-1] if steps else "")
    return Counter(last.values())


def summary(tasks: list[dict[str, Any]], kept: list[dict[str, Any]], route: list[str]) -> list[str]:
    """The ending in sentences: the tasks and their statuses, then where their envelopes ended."""
    statuses = Counter(str(task.get("status")) for task in tasks)
    said = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
    lines = [f"{len(tasks)} inputs became {len(tasks)} tasks: {said}."]
    ended = endings(kept)
    total = sum(ended.values())
    parts = [f"{ended[('succeeded', route[-1])]} after the last step ({route[-1]})"]
    in_route_order = sorted(ended.items(), key=lambda item: (_position(item[0][1], route), item[0][0]))
    for (outcome, step), count in in_route_order:
        if (outcome, step) == ("succeeded", route[-1]):
            continue
        why = "with no output there (dropped, done)" if outcome == "succeeded" else outcome
        parts.append(f"{count} at {step}, {why}")
    lines.append(f"Their envelopes (a task fans out into several) ended {total} times: {'; '.join(parts)}.")
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

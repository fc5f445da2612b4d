"""`asya trace`: a task's X-Ray trace (docs/status.md, "Traces"), read back from X-Ray as its console
would read it (the local stack's endpoint, or with `--stack` a deployed mesh's account), and printed as
the tree of its hops: the create, then each hop under the one that sent it, with its outcome and time.
`--output json` prints the segment documents. Exit 0 with a trace shown, 1 when the task has none
(the mesh traces nothing without `tracing: true`).

The trace is found by its segments' `task_id` annotation (a filter expression), within a day from the
task's creation as the gateway tells it: X-Ray lists a day of traces at most per call, and a busy
mesh's day of traces is far more than one task's."""

from __future__ import annotations

import argparse
import datetime as dt
import json
from collections.abc import Iterator
from typing import Any

from asya_local import stack_option
from asya_local.answers import DONE, JSON, NOT_DONE, add_output_option, print_json
from asya_local.arguments import command, some_id
from asya_local.discovery import given_token
from asya_local.gateway_client import GatewayClient
from asya_local.local_state import gateway_of, running_state
from asya_local.moments import recorded
from asya_local.roles import local_client
from asya_local.screen import console

WINDOW = dt.timedelta(hours=24)  # GetTraceSummaries' longest time range
EARLY = dt.timedelta(minutes=1)  # the create's segment may start a moment before the record's time
TRACES_PER_CALL = 5  # BatchGetTraces takes at most five ids


def add_parser(commands: Any) -> None:
    traced = command(
        commands,
        "trace",
        "a task's X-Ray trace: its create and each hop under the one that sent it",
        "asya trace 5f0c9a2e",
    )
    traced.add_argument("id", type=some_id, help="the task's id, or its first characters")
    stack_option.add_stack_options(traced)
    add_output_option(traced, "[each segment document of the task's trace]")


def trace(args: argparse.Namespace) -> int:
    gateway: GatewayClient | None
    if args.stack:
        mesh = stack_option.deployed(args)
        xray, gateway = mesh.client("xray"), mesh.gateway
    else:
        state = running_state()
        xray = local_client("xray", state["endpoint"])
        gateway = gateway_of(state, given_token(args.token)) if "gateway_url" in state else None
    task_id = gateway.task_id(args.id) if gateway is not None else args.id
    record = gateway.task(task_id) if gateway is not None else None
    created = recorded(record.get("created_at")) if record else None
    segments = task_segments(xray, task_id, created)
    if not segments:
        console.print(f"no trace of task {task_id}: a mesh traces its tasks with `tracing: true` in its mesh file")
        return NOT_DONE
    if args.output == JSON:
        print_json(segments)
        return DONE
    for line in tree_lines(segments):
        console.print(line, markup=False, highlight=False)
    return DONE


def task_segments(xray: Any, task_id: str, created: dt.datetime | None = None) -> list[dict[str, Any]]:
    """Every segment of the traces a segment of this task (annotated with its id) is in, oldest first:
    those that started within a day from `created` (unknown: the last day)."""
    start = created - EARLY if created is not None else dt.datetime.now(dt.UTC) - WINDOW + EARLY
    window = {"StartTime": start, "EndTime": start + WINDOW, "FilterExpression": f'annotation.task_id = "{task_id}"'}
    ids: list[str] = []
    for page in xray.get_paginator("get_trace_summaries").paginate(**window):
        ids += [summary["Id"] for summary in page.get("TraceSummaries", [])]
    found: list[dict[str, Any]] = []
    for start_at in range(0, len(ids), TRACES_PER_CALL):
        for kept in xray.batch_get_traces(TraceIds=ids[start_at : start_at + TRACES_PER_CALL]).get("Traces", []):
            found.extend(json.loads(segment["Document"]) for segment in kept.get("Segments", []))
    return sorted(found, key=lambda document: document.get("start_time", 0))


def tree_lines(segments: list[dict[str, Any]]) -> Iterator[str]:
    """The trace's id, then a line per segment under its parent's: name, outcome, milliseconds, and
    the reason of one that failed. A segment whose parent is not in the trace starts a tree of its own."""
    ids = {segment["id"] for segment in segments}
    children: dict[str | None, list[dict[str, Any]]] = {}
    for segment in segments:
        parent = segment.get("parent_id")
        children.setdefault(parent if parent in ids else None, []).append(segment)
    yield f"trace {segments[0]['trace_id']}: {len(segments)} segments"
    stack = [(segment, 0) for segment in reversed(children.get(None, []))]
    while stack:
        segment, depth = stack.pop()
        annotations = segment.get("annotations", {})
        milliseconds = (segment.get("end_time", 0) - segment.get("start_time", 0)) * 1000
        failed = f"  error: {annotations.get('reason', 'yes')}" if segment.get("error") else ""
        name = f"{'  ' * depth}{segment['name']}"
        yield f"{name:<28} {annotations.get('outcome', ''):<12} {milliseconds:>8.1f} ms{failed}"
        stack.extend((child, depth + 1) for child in reversed(children.get(segment["id"], [])))


COMMANDS = {"trace": trace}

"""One trace per task on the local stack (docs/status.md, "Traces"): a task of four actors, created
through the gateway of a mesh with `tracing: true`, is one X-Ray trace whose segments, read back from
the endpoint as the X-Ray console reads them, are the create and one per hop, each the child of the
one before, all annotated with the task, the actor and the flow."""

from __future__ import annotations

import datetime as dt
import itertools
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asya_local.endpoint.process import LocalEndpoint
from asya_local.trace_cli import task_segments, tree_lines
from tests.support.stack import RunningMesh, running

MESH = Path(__file__).resolve().parent / "traced" / "mesh.yaml"
HOPS = ["gateway", "prep", "infer", "polish", "post", "x-sink"]


@pytest.fixture(scope="module")
def traced(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    with running(endpoint, MESH) as mesh:
        yield mesh


def _settled(mesh: RunningMesh, since: dt.datetime, task_id: str, segments: int) -> dict[str, list[dict[str, Any]]]:
    """The traces since `since` that hold a segment of the task, once they hold `segments` segments (the
    last hop's goes with the end of its batch), or as they are after 30 s."""
    deadline, traces = time.monotonic() + 30, _traces(mesh, since, task_id)
    while sum(len(found) for found in traces.values()) < segments and time.monotonic() < deadline:
        time.sleep(0.5)
        traces = _traces(mesh, since, task_id)
    return traces


def _traces(mesh: RunningMesh, since: dt.datetime, task_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every trace since `since` with a segment of the task, by id: its segment documents."""
    xray = mesh.stack.client("xray")
    summaries = xray.get_trace_summaries(StartTime=since, EndTime=dt.datetime.now() + dt.timedelta(minutes=1))
    ids = [summary["Id"] for summary in summaries["TraceSummaries"]]
    if not ids:
        return {}
    traces = xray.batch_get_traces(TraceIds=ids)["Traces"]
    found = {trace["Id"]: [json.loads(s["Document"]) for s in trace["Segments"]] for trace in traces}
    return {key: kept for key, kept in found.items() if any(s["annotations"]["task_id"] == task_id for s in kept)}


def test_a_task_of_four_actors_is_one_trace_rooted_at_its_create(traced: RunningMesh) -> None:
    since = dt.datetime.now() - dt.timedelta(seconds=5)
    task = traced.gateway().run_task({"flow": "labelled", "payload": {"n": 4}}, 60)
    assert task["status"] == "succeeded", traced.errors()

    traces = _settled(traced, since, task["id"], len(HOPS))
    assert len(traces) == 1, f"one trace for the task, not {len(traces)}: {traces}\n{traced.errors()}"
    [(trace_id, segments)] = traces.items()
    by_name = {segment["name"]: segment for segment in segments}
    assert sorted(by_name) == sorted(HOPS), "the create and one segment per hop"
    assert len(segments) == len(HOPS)
    assert "parent_id" not in by_name["gateway"], "the create is the root"
    for parent, child in itertools.pairwise(HOPS):
        assert by_name[child]["parent_id"] == by_name[parent]["id"], f"{child} is the child of {parent}"
    for name, segment in by_name.items():
        assert segment["trace_id"] == trace_id
        annotations = segment["annotations"]
        assert (annotations["task_id"], annotations["actor"], annotations["flow"]) == (task["id"], name, "labelled")
        assert "error" not in segment

    lines = list(tree_lines(task_segments(traced.stack.client("xray"), task["id"])))  # what `asya trace` prints
    print("\n".join(lines))
    assert lines[0] == f"trace {trace_id}: {len(HOPS)} segments"
    assert [line[:28].rstrip() for line in lines[1:]] == [f"{'  ' * depth}{name}" for depth, name in enumerate(HOPS)]


def test_a_fan_out_retried_and_joined_is_one_trace(traced: RunningMesh) -> None:
    """Two branches, each failing twice at `flaky` before it succeeds, gathered by `gather`: every hop
    is in the create's trace, a retry the child of the attempt that failed, marked as an error."""
    since = dt.datetime.now() - dt.timedelta(seconds=5)
    task = traced.gateway().run_task({"flow": "gathered", "payload": {"parts": 2}}, 60)
    assert task["status"] == "succeeded", traced.errors()

    # the create, fan, three attempts a branch, each branch's arrival at the join, the join's handler, x-sink
    expected = 1 + 1 + 2 * 3 + 2 + 1 + 1
    traces = _settled(traced, since, task["id"], expected)
    assert len(traces) == 1, f"one trace for the task, not {len(traces)}\n{traced.errors()}"
    [segments] = traces.values()
    assert len(segments) == expected, ", ".join(f"{s['name']} {s['annotations']['outcome']}" for s in segments)
    assert {segment["annotations"]["task_id"] for segment in segments} == {task["id"]}
    by_id = {segment["id"]: segment for segment in segments}
    [fan] = [segment for segment in segments if segment["name"] == "fan"]
    attempts = [segment for segment in segments if segment["name"] == "flaky"]
    retried = [segment for segment in attempts if segment.get("error")]
    assert len(retried) == 4
    assert {segment["annotations"]["outcome"] for segment in retried} == {"retried"}
    firsts = [segment for segment in attempts if segment["parent_id"] == fan["id"]]
    assert len(firsts) == 2, "each branch's first attempt is fan's child"
    for segment in attempts:
        if segment not in firsts:
            assert by_id[segment["parent_id"]] in retried, "a retry is the child of the attempt that failed"
    joins = [segment for segment in segments if segment["name"] == "gather"]
    assert sorted(segment["annotations"]["outcome"] for segment in joins) == ["forwarded", "gathered", "joined"]
    [handled] = [segment for segment in joins if segment["annotations"]["outcome"] == "forwarded"]
    assert by_id[handled["parent_id"]]["annotations"]["outcome"] == "joined", "the joined envelope's hop"
    assert {by_id[s["parent_id"]]["name"] for s in joins if s is not handled} == {"flaky"}

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


def _traces(mesh: RunningMesh, since: dt.datetime) -> dict[str, list[dict[str, Any]]]:
    """Every trace since `since`, by id: its segment documents."""
    xray = mesh.stack.client("xray")
    summaries = xray.get_trace_summaries(StartTime=since, EndTime=dt.datetime.now() + dt.timedelta(minutes=1))
    ids = [summary["Id"] for summary in summaries["TraceSummaries"]]
    if not ids:
        return {}
    traces = xray.batch_get_traces(TraceIds=ids)["Traces"]
    return {trace["Id"]: [json.loads(s["Document"]) for s in trace["Segments"]] for trace in traces}


def test_a_task_of_four_actors_is_one_trace_rooted_at_its_create(traced: RunningMesh) -> None:
    since = dt.datetime.now() - dt.timedelta(seconds=5)
    task = traced.gateway().run_task({"flow": "labelled", "payload": {"n": 4}}, 60)
    assert task["status"] == "succeeded", traced.errors()

    deadline, traces = time.monotonic() + 30, {}
    while time.monotonic() < deadline:  # x-sink's segment goes with the end of its batch
        traces = _traces(traced, since)
        if sum(len(segments) for segments in traces.values()) >= len(HOPS):
            break
        time.sleep(0.5)
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

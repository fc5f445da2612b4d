"""`asya trace`: a task's trace read back from X-Ray (moto's, in process) and printed as the tree of its
hops, each under the one that sent it."""

from __future__ import annotations

import datetime as dt
import json
import time
from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws
from moto.xray.models import SegmentCollection

from asya.tracecontext import Span, new_span_id, new_trace_id
from asya.xray import segment
from asya_local.commands import parser
from asya_local.endpoint import moto_xray
from asya_local.functions.lambda_shapes import REGION
from asya_local.trace_cli import task_segments, tree_lines


@pytest.fixture
def xray(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """moto's X-Ray as the local endpoint serves it: it finds traces by an annotation."""
    monkeypatch.setattr(SegmentCollection, "summary", moto_xray._summary)
    with mock_aws():
        yield boto3.client("xray", region_name=REGION)


def _hops(trace_id: str, task_id: str, names: list[str], error_at: str = "") -> list[dict[str, Any]]:
    """A chain of segments, each the child of the one before, a millisecond apart."""
    documents, parent, started = [], None, time.time() - 10
    for index, name in enumerate(names):
        span = Span(trace_id, new_span_id(), parent)
        annotations = {"task_id": task_id, "actor": name, "outcome": "failed" if name == error_at else "forwarded"}
        if name == error_at:
            annotations["reason"] = "HandlerError"
        at = started + index / 1000
        documents.append(segment(span, name, at, at + 0.0005, annotations, error=name == error_at))
        parent = span.span_id
    return documents


def test_the_task_s_trace_is_found_among_others(xray: Any) -> None:
    mine, other = new_trace_id(), new_trace_id()
    documents = _hops(mine, "task-1", ["gateway", "prep", "post", "x-sink"]) + _hops(other, "task-2", ["gateway"])
    xray.put_trace_segments(TraceSegmentDocuments=[json.dumps(document) for document in reversed(documents)])

    found = task_segments(xray, "task-1")
    assert [document["name"] for document in found] == ["gateway", "prep", "post", "x-sink"], "oldest first"
    assert task_segments(xray, "task-3") == []


def test_the_trace_is_looked_for_within_a_day_of_the_task_s_creation(xray: Any) -> None:
    """A day at most, as X-Ray lists traces: from a minute before the record's time."""
    trace_id = new_trace_id()
    xray.put_trace_segments(TraceSegmentDocuments=[json.dumps(d) for d in _hops(trace_id, "task-1", ["gateway"])])
    now = dt.datetime.now(dt.UTC)

    assert len(task_segments(xray, "task-1", now - dt.timedelta(minutes=5))) == 1
    assert task_segments(xray, "task-1", now - dt.timedelta(days=2)) == []  # created two days ago: not this trace
    asked: list[dict[str, Any]] = []
    xray.meta.events.register("provide-client-params.xray.GetTraceSummaries", lambda params, **_: asked.append(params))
    task_segments(xray, "task-1", now)
    assert asked[0]["EndTime"] - asked[0]["StartTime"] == dt.timedelta(hours=24)
    assert asked[0]["FilterExpression"] == 'annotation.task_id = "task-1"'


def test_the_local_endpoint_refuses_a_filter_it_cannot_read(xray: Any) -> None:
    now = dt.datetime.now(dt.UTC)
    with pytest.raises(ClientError, match="annotation"):
        xray.get_trace_summaries(StartTime=now - dt.timedelta(hours=1), EndTime=now, FilterExpression="duration > 5")


def test_each_hop_is_printed_under_the_one_that_sent_it() -> None:
    trace_id = new_trace_id()
    root, prep = _hops(trace_id, "t", ["gateway", "prep"])
    branches = [
        segment(Span(trace_id, new_span_id(), prep["id"]), name, 2.0, 2.5, {"task_id": "t", "outcome": outcome})
        for name, outcome in (("score", "forwarded"), ("score", "forwarded"))
    ]
    [failed] = _hops(trace_id, "t", ["triage"], error_at="triage")
    failed["parent_id"] = branches[1]["id"]

    lines = list(tree_lines([root, prep, *branches, failed]))
    assert lines[0] == f"trace 1-{trace_id[:8]}-{trace_id[8:]}: 5 segments"
    assert [line[:28].rstrip() for line in lines[1:]] == ["gateway", "  prep", "    score", "    score", "      triage"]
    assert lines[-1].endswith("error: HandlerError")
    assert "forwarded" in lines[2]


def test_the_command_takes_an_id_and_json() -> None:
    args = parser().parse_args(["trace", "5f0c9a2e", "--output", "json", "--stack", "asya-prod"])
    assert (args.command, args.id, args.output, args.stack) == ("trace", "5f0c9a2e", "json", "asya-prod")

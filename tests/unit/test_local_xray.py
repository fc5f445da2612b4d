"""The local endpoint's X-Ray refuses the segments X-Ray refuses (`asya_local.endpoint.moto_xray`): a
trace id not of X-Ray's form or older than 30 days, a bad segment id, a document over 64 kB. Asked of
the endpoint's process, over HTTP, as the sidecar sends its segments."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from asya.tracecontext import new_span_id, new_trace_id, xray_id
from asya_local.roles import local_client


def _segment(trace_id: str, **fields: Any) -> str:
    return json.dumps(
        {"name": "a", "id": new_span_id(), "trace_id": trace_id, "start_time": 1.0, "end_time": 2.0, **fields}
    )


@pytest.mark.parametrize(
    ("trace_id", "fields", "code"),
    [
        ("ab" * 16, {}, "InvalidTraceId"),  # a W3C id as it is, not X-Ray's form
        (xray_id(f"{int(time.time()) - 31 * 86_400:08x}" + "ab" * 12), {}, "InvalidTraceId"),
        (xray_id(new_trace_id()), {"id": "not-hex"}, "InvalidSegmentId"),
        (xray_id(new_trace_id()), {"metadata": {"asya": {"blob": "x" * 70_000}}}, "DocumentTooLarge"),
        (xray_id(new_trace_id()), {"parent_id": "ab" * 16}, "InvalidParentId"),  # a W3C trace id, not a span's
        (xray_id(new_trace_id()), {"name": "a*b"}, "InvalidName"),
        (xray_id(new_trace_id()), {"name": "a" * 201}, "InvalidName"),
        (xray_id(new_trace_id()), {"start_time": None}, "MissingStartTime"),
        (xray_id(new_trace_id()), {"end_time": None}, "MissingEndTime"),
    ],
    ids=[
        "not X-Ray's form",
        "older than 30 days",
        "bad segment id",
        "over 64 kB",
        "bad parent id",
        "a symbol X-Ray refuses in its name",
        "a name over 200",
        "no start",
        "no end",
    ],
)
def test_a_segment_x_ray_refuses_is_unprocessed_and_not_kept(
    patched_endpoint: str, trace_id: str, fields: dict[str, Any], code: str
) -> None:
    xray = local_client("xray", patched_endpoint)
    answer = xray.put_trace_segments(TraceSegmentDocuments=[_segment(trace_id, **fields)])
    [refused] = answer["UnprocessedTraceSegments"]
    assert refused["ErrorCode"] == code
    assert xray.batch_get_traces(TraceIds=[trace_id])["Traces"] == []


def test_a_segment_of_a_trace_the_mesh_starts_is_kept(patched_endpoint: str) -> None:
    xray = local_client("xray", patched_endpoint)
    trace_id = xray_id(new_trace_id())
    documents = [_segment(trace_id, name="gateway"), _segment(trace_id, name="x-sump", parent_id=new_span_id())]
    assert xray.put_trace_segments(TraceSegmentDocuments=documents)["UnprocessedTraceSegments"] == []
    [trace] = xray.batch_get_traces(TraceIds=[trace_id])["Traces"]
    assert len(trace["Segments"]) == 2

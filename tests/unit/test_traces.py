"""One trace per task (docs/status.md, "Traces"): trace ids X-Ray takes, a segment per hop whose parent
is the hop that sent the envelope, the gateway's create as the root, `AWSTraceHeader` on every send."""

from __future__ import annotations

import datetime as dt
import json
import re
import time
from typing import Any

import boto3
import pytest

from asya.batch import BatchHops, Routed
from asya.config import SidecarConfig
from asya.sidecar import configure
from asya.task_store import TaskStore
from asya.tracecontext import Span, enter_span, flow_of, new_trace_id, trace_header, xray_id, xray_ready
from asya.transport import MemoryTransport, SqsTransport
from asya.xray import Segments, segment
from asya_crew import sink
from asya_crew.crew import CrewActor, CrewSettings
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_local.testing.tables import EVENTS, TASKS
from tests.support.crew import BUCKET, Crew
from tests.support.crew import NS as CREW_NS
from tests.support.mesh import Mesh, envelope
from tests.unit.test_sending import CountingClient, _actor, _deliver

TRACE = f"{int(time.time()):08x}" + "ab" * 12  # a trace the gateway could have started
PARENT = "cd" * 8
TRACEPARENT = re.compile(r"^00-([0-9a-f]{32})-([0-9a-f]{16})-01$")


def parts(traceparent: str) -> tuple[str, str]:
    """A `traceparent`'s trace id and span id."""
    match = TRACEPARENT.match(traceparent)
    assert match is not None, traceparent
    return match.group(1), match.group(2)


def segments_of(trace_id: str) -> list[dict[str, Any]]:
    """What X-Ray (moto's) keeps of one trace, read back as a console would."""
    answer = boto3.client("xray").batch_get_traces(TraceIds=[xray_id(trace_id)])
    return [json.loads(s["Document"]) for trace in answer["Traces"] for s in trace["Segments"]]


def test_a_new_trace_id_is_an_x_ray_id_too() -> None:
    trace_id = new_trace_id()
    assert abs(int(trace_id[:8], 16) - time.time()) < 5, "the first 8 hex digits are the epoch seconds"
    assert re.fullmatch(r"1-[0-9a-f]{8}-[0-9a-f]{24}", xray_id(trace_id))
    assert xray_ready(trace_id)
    assert not xray_ready("ab" * 16), "a random W3C id names no recent second"


def test_aws_trace_header_names_the_trace_and_the_sending_hop() -> None:
    assert trace_header(f"00-{TRACE}-{PARENT}-01") == f"Root=1-{TRACE[:8]}-{TRACE[8:]};Parent={PARENT};Sampled=1"
    assert str(trace_header(f"00-{TRACE}-{PARENT}-00")).endswith("Sampled=0")
    assert trace_header("00-" + "ab" * 16 + f"-{PARENT}-01") is None, "an id X-Ray refuses is not sent"
    assert trace_header(None) is None


def test_a_hop_is_a_span_of_its_own_whose_parent_sent_it() -> None:
    headers = {"traceparent": f"00-{TRACE}-{PARENT}-01"}
    span = enter_span(headers)
    assert (span.trace_id, span.parent) == (TRACE, PARENT)
    assert span.span_id != PARENT
    assert headers["traceparent"] == f"00-{TRACE}-{span.span_id}-01", "the handler and outputs carry the hop's span"


def test_a_traced_hop_restarts_a_trace_x_ray_would_refuse_and_names_it() -> None:
    foreign = "ab" * 16
    headers = {"traceparent": f"00-{foreign}-{PARENT}-01"}
    span = enter_span(headers, restart=True)
    assert span.trace_id != foreign
    assert xray_ready(span.trace_id)
    assert (span.parent, span.caller) == (None, foreign)
    document = segment(span, "a", 1.0, 2.0, {"task_id": "t"})
    assert document["annotations"]["caller_trace_id"] == foreign
    assert "parent_id" not in document
    untraced = {"traceparent": f"00-{foreign}-{PARENT}-01"}
    assert enter_span(untraced).trace_id == foreign, "without tracing the caller's W3C trace is continued"


def test_each_hop_writes_a_segment_whose_parent_is_the_previous_hop(mesh: Mesh) -> None:
    mesh.actor("enrich", ASYA_TRACING="true")
    headers = {"traceparent": f"00-{TRACE}-{PARENT}-01", "tracestate": "asya=shop,other=1"}
    mesh.deliver(envelope(id="task-9", next=("b",), headers=headers))

    out = mesh.only("b")
    [document] = segments_of(TRACE)
    assert document["trace_id"] == f"1-{TRACE[:8]}-{TRACE[8:]}"
    assert document["parent_id"] == PARENT
    assert document["name"] == "a"
    assert document["annotations"] == {"task_id": "task-9", "actor": "a", "flow": "shop", "outcome": "forwarded"}
    assert "error" not in document
    assert document["end_time"] >= document["start_time"]
    assert out["headers"]["traceparent"] == f"00-{TRACE}-{document['id']}-01", "the next hop's parent is this one"
    assert out["headers"]["tracestate"] == "asya=shop,other=1"


def test_a_failed_hop_is_an_error_with_its_reason(mesh: Mesh) -> None:
    mesh.actor("explode", ASYA_TRACING="true")
    mesh.deliver(envelope(id="task-8", headers={"traceparent": f"00-{TRACE}-{PARENT}-01"}))

    [document] = segments_of(TRACE)
    assert document["error"] is True
    assert document["annotations"]["outcome"] in ("failed", "sumped")
    assert document["annotations"]["reason"]


def test_without_tracing_no_segment_is_written(mesh: Mesh) -> None:
    mesh.actor("enrich")
    mesh.deliver(envelope(headers={"traceparent": f"00-{TRACE}-{PARENT}-01"}))
    assert segments_of(TRACE) == []
    assert parts(mesh.only("b")["headers"]["traceparent"])[0] == TRACE


def test_every_send_carries_the_envelope_s_trace_as_aws_trace_header(mesh: Mesh) -> None:
    client = CountingClient(mesh.sqs)
    _actor("fan_out", SqsTransport(client))  # type: ignore[arg-type]
    _deliver(envelope(payload={"items": [1, 2, 3]}, headers={"traceparent": f"00-{TRACE}-{PARENT}-01"}))

    entries = [entry for _, kwargs in client.calls for entry in kwargs.get("Entries", [])]
    assert len(entries) == 3
    headers = {entry["MessageSystemAttributes"]["AWSTraceHeader"]["StringValue"] for entry in entries}
    [header] = headers  # the branches all name the hop that made them
    bodies = [json.loads(entry["MessageBody"]) for entry in entries]
    span = parts(bodies[0]["headers"]["traceparent"])[1]
    assert header == f"Root=1-{TRACE[:8]}-{TRACE[8:]};Parent={span};Sampled=1"


def test_the_gateway_s_create_is_the_root_of_the_task_s_trace(task_store: TaskStore) -> None:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="asya-n-a")["QueueUrl"]
    sent: list[dict[str, Any]] = []
    original = sqs.send_message

    def recording(**kwargs: Any) -> Any:
        sent.append(kwargs)
        return original(**kwargs)

    sqs.send_message = recording  # type: ignore[method-assign]
    settings = GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS, tracing=True)
    created = TaskService(settings, tasks=task_store, sqs=sqs).create(payload={"x": 1}, route=["a"])

    [message] = sqs.receive_message(QueueUrl=url)["Messages"]
    traceparent = json.loads(message["Body"])["headers"]["traceparent"]
    trace_id, span_id = parts(traceparent)
    assert xray_ready(trace_id), "the create starts a trace X-Ray takes"
    [root] = segments_of(trace_id)
    assert root["id"] == span_id
    assert "parent_id" not in root
    assert root["name"] == "gateway"
    assert root["annotations"] == {"task_id": created.task_id, "actor": "gateway", "outcome": "created"}
    header = sent[0]["MessageSystemAttributes"]["AWSTraceHeader"]["StringValue"]
    assert header == f"Root={xray_id(trace_id)};Parent={span_id};Sampled=1"


def test_a_flow_is_named_in_tracestate_for_every_hop(gateway: TaskService) -> None:
    from asya_gateway.create_trace import start_trace

    headers: dict[str, Any] = {"tracestate": "vendor=1,asya=old"}
    start_trace(headers, "shop", traced=False)
    assert headers["tracestate"] == "asya=shop,vendor=1"


@pytest.mark.parametrize(
    ("tracestate", "kept"), [("asya=shop,vendor=1", {"tracestate": "vendor=1"}), ("asya=shop", {})]
)
def test_a_task_started_on_a_route_names_no_flow_whatever_its_caller_wrote(
    gateway: TaskService, tracestate: str, kept: dict[str, str]
) -> None:
    """`asya=` is the mesh's key: a caller's would name every hop's segment for a flow never run."""
    gateway.create(payload={"x": 1}, route=["a"], headers={"tracestate": tracestate})
    sqs = boto3.client("sqs")
    [message] = sqs.receive_message(QueueUrl=sqs.get_queue_url(QueueName="asya-n-a")["QueueUrl"])["Messages"]
    headers = json.loads(message["Body"])["headers"]
    assert {key: value for key, value in headers.items() if key == "tracestate"} == kept
    assert flow_of(headers) is None


def test_the_crew_s_hop_is_the_last_segment(task_store: TaskStore) -> None:
    s3 = boto3.client("s3")
    s3.create_bucket(Bucket=BUCKET)
    settings = CrewSettings.from_env(
        "x-sink", {"ASYA_NAMESPACE": CREW_NS, "ASYA_RESULTS_BUCKET": BUCKET, "ASYA_TRACING": "true"}
    )
    ended = {
        "id": "task-7",
        "route": {"prev": ["a"], "curr": "", "next": []},
        "headers": {"traceparent": f"00-{TRACE}-{PARENT}-01"},
        "status": {"phase": "succeeded", "actor": "a", "reason": "Completed"},
        "payload": {"answer": 42},
    }
    Crew(s3, boto3.client("sqs")).run(CrewActor(settings, sink.Sink([]).decide), ended)

    [document] = segments_of(TRACE)
    assert (document["name"], document["parent_id"]) == ("x-sink", PARENT)
    assert document["annotations"] == {"task_id": "task-7", "actor": "x-sink", "outcome": "succeeded"}


def test_segments_go_to_the_daemon_when_lambda_runs_one() -> None:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as daemon:
        daemon.bind(("127.0.0.1", 0))
        daemon.settimeout(2)
        port = daemon.getsockname()[1]
        segments = Segments.from_env({"AWS_XRAY_DAEMON_ADDRESS": f"tcp:127.0.0.1:{port} udp:127.0.0.1:{port}"})
        segments.add(segment(Span(TRACE, PARENT, None), "a", 1.0, 2.0, {"task_id": "t"}))
        segments.flush()
        header, _, document = daemon.recv(65_536).partition(b"\n")
    assert json.loads(header) == {"format": "json", "version": 1}
    assert json.loads(document)["trace_id"] == xray_id(TRACE)


@pytest.fixture(autouse=True)
def _no_daemon(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AWS_XRAY_DAEMON_ADDRESS", raising=False)


def test_a_spark_job_s_hop_writes_its_segment_and_hands_its_trace_to_the_collector(mesh: Mesh) -> None:
    names = {"ASYA_NAMESPACE": "unit", "ASYA_ACTOR_NAME": "a", "ASYA_HANDLER": "tests.support.handlers.enrich"}
    config = SidecarConfig.from_env({**names, "ASYA_TRACING": "true"})
    body = json.dumps(envelope(id="task-6", headers={"traceparent": f"00-{TRACE}-{PARENT}-01"}))
    [routed] = BatchHops(config).run([("m-1", body)])

    [document] = segments_of(TRACE)
    assert (document["name"], document["parent_id"]) == ("a", PARENT)
    assert routed.trace == f"Root={xray_id(TRACE)};Parent={document['id']};Sampled=1"
    assert Routed.from_json(routed.to_json()).trace == routed.trace, "the collector reads it from the job's output"


def test_a_trace_its_caller_asked_not_to_record_gets_no_segment(mesh: Mesh) -> None:
    mesh.actor("enrich", ASYA_TRACING="true")
    mesh.deliver(envelope(headers={"traceparent": f"00-{TRACE}-{PARENT}-00"}))
    assert segments_of(TRACE) == []
    assert mesh.only("b")["headers"]["traceparent"].endswith("-00"), "the decision travels on"


@pytest.mark.parametrize("came_with", [f"00-{TRACE}-{PARENT}-01", None, 42], ids=["a trace", "none", "not one"])
def test_a_retry_s_lap_round_its_queue_is_no_span(mesh: Mesh, came_with: Any) -> None:
    """A retry delayed past SQS's 15 minutes goes round until due: the laps are not hops of the trace,
    and each goes round exactly as it came."""
    transport = MemoryTransport()  # what goes round is delayed in SQS: read here, as it is sent
    variables = {"ASYA_NAMESPACE": "unit", "ASYA_ACTOR_NAME": "a", "ASYA_HANDLER": "tests.support.handlers.enrich"}
    configure(SidecarConfig.from_env({**variables, "ASYA_TRACING": "true"}), transport)
    later = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).isoformat().replace("+00:00", "Z")
    sent = envelope(headers={"x-asya-not-before": later})
    if came_with is not None:
        sent["headers"]["traceparent"] = came_with
    _deliver(sent)

    [lap] = transport.queues["asya-unit-a"]
    assert json.loads(lap.body)["headers"] == sent["headers"], "it goes round as it came"
    assert lap.trace == trace_header(came_with)
    assert segments_of(TRACE) == []


def test_a_wide_fan_s_segment_stays_small(mesh: Mesh) -> None:
    mesh.actor("fan_out", ASYA_TRACING="true")
    mesh.deliver(envelope(payload={"items": list(range(200))}, headers={"traceparent": f"00-{TRACE}-{PARENT}-01"}))

    [document] = segments_of(TRACE)
    assert document["metadata"]["asya"]["outputs"] == 200
    assert document["metadata"]["asya"]["sent_to"] == ["b"], "where it went, not each output"
    assert len(json.dumps(document)) < 1_000


@pytest.mark.parametrize("x_ray_ready", [True, False], ids=["continued", "restarted"])
def test_a_caller_s_traceparent_is_continued_by_the_create_when_x_ray_can_keep_it(
    task_store: TaskStore, x_ray_ready: bool
) -> None:
    sqs = boto3.client("sqs")
    url = sqs.create_queue(QueueName="asya-n-a")["QueueUrl"]
    settings = GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS, tracing=True)
    caller_trace = TRACE if x_ray_ready else "ab" * 16
    headers = {"traceparent": f"00-{caller_trace}-{PARENT}-01"}
    TaskService(settings, tasks=task_store, sqs=sqs).create(payload={}, route=["a"], headers=headers)

    [message] = sqs.receive_message(QueueUrl=url)["Messages"]
    trace_id, _ = parts(json.loads(message["Body"])["headers"]["traceparent"])
    [root] = segments_of(trace_id)
    if x_ray_ready:
        assert (trace_id, root["parent_id"]) == (TRACE, PARENT), "the create is the caller's span's child"
    else:
        assert trace_id != caller_trace
        assert "parent_id" not in root
        assert root["annotations"]["caller_trace_id"] == caller_trace, "the caller's trace can be found"

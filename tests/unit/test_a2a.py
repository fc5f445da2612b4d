"""A2A on the gateway (docs/a2a.md), without the stack: the card and the task mapping read by the
official SDK's own parsers (A2A 1.0's ProtoJSON and 0.3's models), the JSON-RPC errors with A2A's
codes, and the methods through the gateway's function against moto."""

from __future__ import annotations

import asyncio
import dataclasses
import datetime as dt
import functools
import time
from collections.abc import Iterator
from typing import Any

import boto3
import httpx
import orjson
import pytest
from a2a.client import ClientConfig, ClientFactory
from a2a.client.card_resolver import parse_agent_card
from a2a.compat.v0_3 import types as types_v03
from a2a.types import a2a_pb2
from google.protobuf.json_format import ParseDict

from asya.live import FLY, SETTLE_SECONDS, STATUS
from asya.results import result_key
from asya_gateway import a2a_stream, agent_routes, api, sse
from asya_gateway.a2a import A2aEndpoint
from asya_gateway.a2a_card import INPUT_SCHEMAS, extended_card
from asya_gateway.a2a_objects import Answers, Answers03, a2a_task, status_update
from asya_gateway.callers import AuthSettings, Caller
from asya_gateway.function import GatewayFunction
from asya_gateway.service import TaskService
from asya_gateway.settings import Flow, GatewaySettings
from asya_local.functions.lambda_shapes import LambdaContext
from asya_local.functions.rest_proxy import HttpRequest, HttpResponse, http_response, proxy_event
from asya_local.testing.tables import EVENTS, TASKS
from tests.support.gateway_unit import OPERATOR_KEY, function_on_moto

SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
FLOWS = {
    "double": Flow(name="double", route=["a"], description="Doubles n.", input_schema=SCHEMA),
    "review": Flow(name="review", route=["a", "x-pause", "a"]),
}
BASE = "https://agents.example"
RESULTS = "results"


def settings(**changes: Any) -> GatewaySettings:
    return GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS, flows=FLOWS, **changes)


def view(status: str, **fields: Any) -> dict[str, Any]:
    base = {"id": "t1", "status": status, "progress": 0, "terminal": status in ("succeeded", "failed", "canceled")}
    return {**base, "created_at": "2026-11-27T10:00:00.000Z", "updated_at": "2026-11-27T10:00:01.000Z", **fields}


# -- the card ---------------------------------------------------------------------------------------


def test_the_card_is_one_both_versions_of_the_sdk_read_with_the_flows_as_skills() -> None:
    card = extended_card(settings(), BASE)
    parsed = parse_agent_card(orjson.loads(orjson.dumps(card)))  # what the SDK's client makes of it
    assert parsed.name == "n"
    assert [skill.id for skill in parsed.skills] == ["double", "review"]
    assert parsed.skills[0].description == "Doubles n."
    assert parsed.capabilities.streaming
    assert list(parsed.default_input_modes) == ["application/json"]
    versions = {(face.protocol_binding, face.protocol_version, face.url) for face in parsed.supported_interfaces}
    assert versions == {("JSONRPC", "1.0", f"{BASE}/a2a"), ("JSONRPC", "0.3", f"{BASE}/a2a")}
    (extension,) = parsed.capabilities.extensions
    assert extension.uri == INPUT_SCHEMAS
    schemas = orjson.loads(orjson.dumps(card["capabilities"]["extensions"][0]["params"]))
    assert schemas["skills"]["double"]["inputSchema"] == SCHEMA
    legacy = types_v03.AgentCard.model_validate(card)  # an A2A 0.3 client's reading
    assert (legacy.url, legacy.preferred_transport, [skill.id for skill in legacy.skills]) == (
        f"{BASE}/a2a",
        "JSONRPC",
        ["double", "review"],
    )


@pytest.mark.parametrize(
    ("auth", "expected"),
    [
        (AuthSettings(), {"sigv4": ("http_auth_security_scheme", "AWS4-HMAC-SHA256")}),
        (AuthSettings(mode="api_key"), {"apiKey": ("api_key_security_scheme", "x-api-key")}),
        (
            AuthSettings(mode="jwt", jwt={"issuer": "https://issuer.example/", "audiences": ["a"]}),
            {
                "oidc": ("open_id_connect_security_scheme", "https://issuer.example/.well-known/openid-configuration"),
                "bearer": ("http_auth_security_scheme", "bearer"),
            },
        ),
        (
            AuthSettings(mode="jwt", jwt={"cognito": True, "audiences": ["a"]}),
            {"bearer": ("http_auth_security_scheme", "bearer")},
        ),
    ],
)
def test_the_card_names_the_security_scheme_of_the_mesh(auth: AuthSettings, expected: dict[str, Any]) -> None:
    card = extended_card(settings(auth=auth), BASE)
    parsed = parse_agent_card(orjson.loads(orjson.dumps(card)))
    found = {}
    for name, scheme in parsed.security_schemes.items():
        kind = scheme.WhichOneof("scheme")
        inner = getattr(scheme, kind)
        said = {
            "http_auth_security_scheme": lambda given: given.scheme,
            "api_key_security_scheme": lambda given: given.name,
            "open_id_connect_security_scheme": lambda given: given.open_id_connect_url,
        }[kind](inner)
        found[name] = (kind, said)
    assert found == expected
    assert [set(requirement.schemes) for requirement in parsed.security_requirements] == [{name} for name in expected]
    if auth.mode == "iam":
        assert "SigV4" in parsed.security_schemes["sigv4"].http_auth_security_scheme.description
    legacy = types_v03.AgentCard.model_validate(card)
    assert legacy.security == [{name: []} for name in expected]


# -- the mapping ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "state", "legacy"),
    [
        ("pending", "TASK_STATE_SUBMITTED", "submitted"),
        ("running", "TASK_STATE_WORKING", "working"),
        ("paused", "TASK_STATE_INPUT_REQUIRED", "input-required"),
        ("succeeded", "TASK_STATE_COMPLETED", "completed"),
        ("failed", "TASK_STATE_FAILED", "failed"),
        ("canceled", "TASK_STATE_CANCELED", "canceled"),
    ],
)
def test_each_status_is_its_a2a_state_in_both_versions(status: str, state: str, legacy: str) -> None:
    task = a2a_task(view(status))
    parsed = ParseDict(Answers().task(task), a2a_pb2.Task())
    assert a2a_pb2.TaskState.Name(parsed.status.state) == state
    assert parsed.id == parsed.context_id == "t1"
    assert parsed.status.timestamp.ToJsonString() == "2026-11-27T10:00:01Z"
    assert types_v03.Task.model_validate(Answers03().task(task)).status.state.value == legacy


def test_a_task_that_succeeded_has_its_output_as_a_data_artifact() -> None:
    task = a2a_task(view("succeeded", output={"n": 4}, flow="double"), lambda task_id: {"status_url": f"u/{task_id}"})
    parsed = ParseDict(task, a2a_pb2.Task())
    (artifact,) = parsed.artifacts
    assert artifact.artifact_id == "output"
    assert dict(artifact.parts[0].data.struct_value) == {"n": 4}
    assert parsed.metadata["asya"]["flow"] == "double"
    assert parsed.metadata["asya"]["status_url"] == "u/t1"
    legacy = types_v03.Task.model_validate(Answers03().task(task))
    assert legacy.artifacts is not None
    part = legacy.artifacts[0].parts[0].root
    assert isinstance(part, types_v03.DataPart)
    assert part.data == {"n": 4}


def test_an_output_that_is_not_an_object_is_wrapped_for_0_3_as_its_sdk_does() -> None:
    task = Answers03().task(a2a_task(view("succeeded", output=[1, 2])))
    part = task["artifacts"][0]["parts"][0]
    assert part == {"kind": "data", "data": {"value": [1, 2]}, "metadata": {"data_part_compat": True}}
    assert ParseDict(a2a_task(view("succeeded", output=[1, 2])), a2a_pb2.Task()).artifacts[0].parts[0].data.list_value


def test_an_output_too_large_to_carry_is_a_link() -> None:
    parsed = ParseDict(a2a_task(view("succeeded", output_url="https://s3/presigned")), a2a_pb2.Task())
    assert parsed.artifacts[0].parts[0].url == "https://s3/presigned"


def test_a_failure_is_said_in_the_status_message() -> None:
    failed = view("failed", reason="HandlerError", error={"type": "ValueError", "message": "boom"})
    parsed = ParseDict(a2a_task(failed), a2a_pb2.Task())
    message = parsed.status.message
    assert a2a_pb2.Role.Name(message.role) == "ROLE_AGENT"
    assert message.parts[0].text == "ValueError: boom", "the handler's own type, not the reason code"
    assert message.parts[1].data.struct_value["error"]["type"] == "ValueError"
    assert not parsed.artifacts


def test_a_paused_task_asks_for_input_with_its_prompt_and_fields() -> None:
    paused = view("paused", pause={"prompt": "Approve?", "fields": {"approved": "boolean"}})
    parsed = ParseDict(a2a_task(paused), a2a_pb2.Task())
    assert parsed.status.message.parts[0].text == "Approve?"
    assert parsed.status.message.parts[1].data.struct_value["fields"]["approved"] == "boolean"
    legacy = types_v03.TaskStatusUpdateEvent.model_validate(Answers03().status_update(status_update(paused), True))
    assert (legacy.final, legacy.status.state.value) == (True, "input-required")


def test_a_fan_out_root_says_it_has_no_single_result() -> None:
    root = view("succeeded", branches={"total": 3, "succeeded": 3}, branch_ids=["b1", "b2"])
    parts = ParseDict(a2a_task(root), a2a_pb2.Task()).artifacts[0].parts
    assert "no single result" in parts[0].text


# -- the function, against moto ---------------------------------------------------------------------


class Gateway:
    def __init__(self, service: TaskService) -> None:
        self.service = service
        self.ids = iter(range(1, 1_000_000))

    def post(self, body: bytes, headers: tuple[tuple[str, str], ...] = ()) -> HttpResponse:
        request = HttpRequest("POST", "/a2a", [("Content-Type", "application/json"), OPERATOR_KEY, *headers], body)
        event = proxy_event(request, "unit")
        return http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))

    def call(self, method: str, params: Any, **headers: str) -> dict[str, Any]:
        body = orjson.dumps({"jsonrpc": "2.0", "id": next(self.ids), "method": method, "params": params})
        response = self.post(body, tuple(headers.items()))
        assert response.status == 200, response.body
        answer: dict[str, Any] = orjson.loads(response.body)
        return answer

    def result(self, method: str, params: Any) -> dict[str, Any]:
        answer = self.call(method, params)
        assert "result" in answer, answer
        result: dict[str, Any] = answer["result"]
        return result

    def code(self, method: str, params: Any, **headers: str) -> int:
        answer = self.call(method, params, **headers)
        assert "error" in answer, answer
        code: int = answer["error"]["code"]
        return code


def message(data: Any = None, **fields: Any) -> dict[str, Any]:
    parts = [{"data": data}] if data is not None else []
    return {"messageId": f"m-{time.monotonic_ns()}", "role": "ROLE_USER", "parts": parts, **fields}


@pytest.fixture
def gateway(monkeypatch: pytest.MonkeyPatch) -> Iterator[Gateway]:
    with function_on_moto(
        settings(results_bucket=RESULTS), actors=("a", "x-pause", "x-resume"), bucket=RESULTS
    ) as service:
        monkeypatch.setattr(agent_routes, "LAMBDA_FOLLOW_SECONDS", 1.0)
        yield Gateway(service)


def test_a_message_nested_past_the_bound_is_a_400_not_a_502(gateway: Gateway) -> None:
    """A data part 985 lists deep was a RecursionError in the ProtoJSON number conversion (a 502)."""
    deep = "[" * 985 + "]" * 985
    sent = message({"n": 1}, metadata={"skill": "double"})
    body = orjson.dumps({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": sent}})
    response = gateway.post(body.replace(b'{"n":1}', deep.encode()))
    assert response.status == 400
    assert "nest deeper than 64" in orjson.loads(response.body)["message"]
    assert api.open_a2a_stream(body.replace(b'{"n":1}', deep.encode()), {}) is None, "the function refuses it"


def read_card(path: str = "/.well-known/agent-card.json") -> HttpResponse:
    """The card as anyone reads it: no credentials."""
    event = proxy_event(HttpRequest("GET", path, [("Host", "127.0.0.1:4566")]), "unit")
    return http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))


def test_the_card_is_served_at_both_paths(gateway: Gateway) -> None:
    for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
        response = read_card(path)
        assert response.status == 200
        assert orjson.loads(response.body)["url"] == "http://127.0.0.1:4566/a2a"


async def _extended_by_the_sdk(public: dict[str, Any], *, legacy: bool) -> a2a_pb2.AgentCard:
    """What the SDK's client makes of the public card and then, with the mesh's key, of the extended
    card it points to (`legacy`: through the card's A2A 0.3 interface, as a 0.3 client)."""

    def through_the_function(request: httpx.Request) -> httpx.Response:
        headers = [(name, value) for name, value in request.headers.items()]
        event = proxy_event(HttpRequest(request.method, request.url.raw_path.decode(), headers, request.content), "u")
        answered = http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))
        return httpx.Response(answered.status, headers=answered.headers, content=answered.body)

    card = parse_agent_card(public)
    if legacy:
        kept = [face for face in card.supported_interfaces if face.protocol_version == "0.3"]
        del card.supported_interfaces[:]
        card.supported_interfaces.extend(kept)
    transport = httpx.MockTransport(through_the_function)
    async with httpx.AsyncClient(transport=transport, headers=dict([OPERATOR_KEY])) as http:
        client = ClientFactory(ClientConfig(httpx_client=http, streaming=False)).create(card)
        return await client.get_extended_agent_card(a2a_pb2.GetExtendedAgentCardRequest())


@pytest.mark.parametrize("legacy", [False, True])
def test_an_anonymous_card_names_no_flow_and_a_caller_with_credentials_gets_them_in_the_extended_card(
    gateway: Gateway, legacy: bool
) -> None:
    """The API's URL is reachable from the internet: by default the card read without credentials says
    how to call the mesh and that there is more, not which flows it runs or what they take."""
    response = read_card()
    assert response.status == 200
    text = response.body.decode()
    assert not any(word in text for word in ("double", "review", "Doubles n.", INPUT_SCHEMAS)), text
    public = orjson.loads(response.body)
    assert (public["skills"], public["capabilities"]["extensions"]) == ([], [])
    assert "sigv4" in public["securitySchemes"], "how to sign in is public"
    assert public["capabilities"]["extendedAgentCard"], "A2A 1.0: there is more, for a caller with credentials"
    assert public["supportsAuthenticatedExtendedCard"], "A2A 0.3's way of saying it"
    extended = asyncio.run(_extended_by_the_sdk(public, legacy=legacy))
    assert [skill.id for skill in extended.skills] == ["double", "review"]
    (schemas,) = extended.capabilities.extensions
    assert (schemas.uri, schemas.params["skills"]["double"]["inputSchema"]["required"]) == (INPUT_SCHEMAS, ["n"])


@pytest.mark.parametrize(("shown", "status", "skills"), [("full", 200, ["double", "review"]), ("off", 404, None)])
def test_the_public_card_is_what_the_mesh_says(
    monkeypatch: pytest.MonkeyPatch, gateway: Gateway, shown: str, status: int, skills: list[str] | None
) -> None:
    auth = AuthSettings.parse(orjson.dumps({"mode": "iam", "public_card": shown}).decode())
    monkeypatch.setattr(gateway.service, "settings", dataclasses.replace(gateway.service.settings, auth=auth))
    for path in ("/.well-known/agent-card.json", "/.well-known/agent.json"):
        response = read_card(path)
        assert response.status == status
        if skills is not None:
            assert [skill["id"] for skill in orjson.loads(response.body)["skills"]] == skills
    assert [skill["id"] for skill in gateway.result("GetExtendedAgentCard", {})["skills"]] == ["double", "review"]


@pytest.mark.parametrize(("method", "v1"), [("SendMessage", True), ("message/send", False)])
def test_a_message_starts_the_skill_s_flow_and_the_task_is_got_listed_and_canceled(
    gateway: Gateway, method: str, v1: bool
) -> None:
    sent = message({"n": 2}, metadata={"skill": "double"})
    if not v1:
        sent = {**sent, "kind": "message", "role": "user", "parts": [{"kind": "data", "data": {"n": 2}}]}
    configuration = {"returnImmediately": True} if v1 else {"blocking": False}
    answer = gateway.result(method, {"message": sent, "configuration": configuration})
    task = answer["task"] if v1 else answer
    assert task["status"]["state"] == ("TASK_STATE_SUBMITTED" if v1 else "submitted")
    task_id = task["id"]
    assert gateway.service.view(task_id)["flow"] == "double"
    assert gateway.service.view(task_id)["input"] == {"n": 2}
    got = gateway.result("GetTask" if v1 else "tasks/get", {"id": task_id})
    assert got["id"] == task_id
    listed = gateway.result("ListTasks" if v1 else "tasks/list", {"status": "TASK_STATE_SUBMITTED", "pageSize": 10})
    assert task_id in [found["id"] for found in listed["tasks"]]
    assert listed["nextPageToken"] == ""
    canceled = gateway.result("CancelTask" if v1 else "tasks/cancel", {"id": task_id})
    assert canceled["status"]["state"] == ("TASK_STATE_CANCELED" if v1 else "canceled")
    again = gateway.result("CancelTask" if v1 else "tasks/cancel", {"id": task_id})
    assert again["status"]["state"] == canceled["status"]["state"], "canceling twice is no error"


def test_a_send_answers_with_the_task_once_it_ended_with_its_output(gateway: Gateway) -> None:
    def finish(_seconds: float) -> None:  # the task ends while the send waits for it
        newest = gateway.service.listing.page(None, 1, None)["tasks"][0]["id"]
        gateway.service.tasks.finish(newest, newest, "succeeded", {"output": '{"n": 2}'})

    gateway.service.sleep = finish
    task = gateway.result("SendMessage", {"message": message({"n": 1}, metadata={"skill": "double"})})["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    assert task["artifacts"][0]["parts"][0]["data"] == {"n": 2}
    assert gateway.result("GetTask", {"id": task["id"]})["artifacts"] == task["artifacts"]
    assert gateway.code("CancelTask", {"id": task["id"]}) == -32002, "it has ended"


def test_the_same_message_id_sent_again_is_the_same_task(gateway: Gateway) -> None:
    sent = {"message": message({"n": 3}, metadata={"skill": "double"}), "configuration": {"returnImmediately": True}}
    first = gateway.result("SendMessage", sent)["task"]["id"]
    assert gateway.result("SendMessage", sent)["task"]["id"] == first


def test_a_message_naming_a_paused_task_resumes_it_with_its_data_as_the_input(gateway: Gateway) -> None:
    task_id = gateway.service.create(payload={"n": 1}, flow="review").task_id
    pause(gateway, task_id)
    assert gateway.result("GetTask", {"id": task_id})["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert gateway.code("SendMessage", {"message": message([1], taskId=task_id)}) == -32602, "an input is an object"
    resumed = gateway.result(
        "SendMessage",
        {"message": message({"approved": True}, taskId=task_id), "configuration": {"returnImmediately": True}},
    )
    assert resumed["task"]["status"]["state"] == "TASK_STATE_WORKING"
    sqs = boto3.client("sqs")
    queue = sqs.get_queue_url(QueueName="asya-n-x-resume")["QueueUrl"]
    (sent,) = sqs.receive_message(QueueUrl=queue)["Messages"]
    assert orjson.loads(sent["Body"])["payload"] == {"n": 1, "approved": True}
    again = {"message": message({"approved": True}, taskId=task_id)}
    assert gateway.code("SendMessage", again) == -32004, "running now: not waiting for input"


def test_on_aws_a_stream_is_bounded_and_resubscribing_goes_on(gateway: Gateway) -> None:
    streamed = message({"n": 1}, metadata={"skill": "double"})
    sent = {"jsonrpc": "2.0", "id": 7, "method": "SendStreamingMessage", "params": {"message": streamed}}
    response = gateway.post(orjson.dumps(sent))
    assert {name.lower(): value for name, value in response.headers}["content-type"] == "text/event-stream"
    events = sse_data(response.body.decode())
    assert events[0]["id"] == 7
    task = events[0]["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_SUBMITTED"
    assert response.body.decode().endswith("retry: 500\n\n"), "the client resubscribes to go on"
    gateway.service.cancel(task["id"])
    again = {"jsonrpc": "2.0", "id": 8, "method": "tasks/resubscribe", "params": {"id": task["id"]}}
    (only,) = sse_data(gateway.post(orjson.dumps(again)).body.decode())
    assert (only["result"]["kind"], only["result"]["status"]["state"]) == ("task", "canceled")


def sse_data(body: str) -> list[dict[str, Any]]:
    return [orjson.loads(line.removeprefix("data: ")) for line in body.splitlines() if line.startswith("data: ")]


def test_a_live_stream_has_the_task_then_its_changes_its_fly_events_and_its_output(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the local server streams it: until the task ends, each event as it settles in the log."""
    monkeypatch.setattr(
        a2a_stream, "follow", functools.partial(sse.follow, clock_ns=lambda: time.time_ns() + int(2e9 * SETTLE_SECONDS))
    )
    created = gateway.service.create(payload={"n": 1}, flow="double")
    task_id = created.task_id
    running = view("running", id=task_id, actor="a", progress=50)
    ended = view("succeeded", id=task_id, output={"n": 2})
    log = gateway.service.events
    endpoint = A2aEndpoint(gateway.service, lambda _: {})
    request = {"jsonrpc": "2.0", "id": "s", "method": "message/stream", "params": {"message": message({"n": 1})}}
    chunks = endpoint.handle(orjson.dumps({**request, "method": "tasks/resubscribe", "params": {"id": task_id}}), {})
    assert chunks is not None
    assert not isinstance(chunks, dict)
    first = next(iter(chunks))
    log.append([(task_id, STATUS, running), (task_id, FLY, {"id": task_id, "actor": "a", "data": {"token": "hi"}})])
    log.append([(task_id, STATUS, ended)])
    answers = [first, *chunks]
    results = [event["result"] for chunk in answers for event in sse_data(chunk)]
    kinds = [(result["kind"], result.get("status", {}).get("state"), result.get("final")) for result in results]
    assert kinds == [
        ("task", "submitted", None),
        ("status-update", "working", False),
        ("status-update", "working", False),
        ("artifact-update", None, None),
        ("status-update", "completed", True),
    ]
    assert results[2]["status"]["message"]["parts"][0]["data"] == {"token": "hi"}
    assert results[3]["artifact"]["parts"][0]["data"] == {"n": 2}
    streamed = endpoint.handle(orjson.dumps({**request, "method": "SendStreamingMessage"}), {})
    assert isinstance(streamed, dict), "a refusal is a JSON-RPC answer, not a stream"
    assert streamed["error"]["code"] == -32602, "two skills: the message names one"


# -- JSON-RPC errors --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b"", -32700),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "GetTask"}]', -32600),
        (b'{"jsonrpc": "2.0", "method": "GetTask", "params": {"id": "x"}}', -32600),
        (b'{"jsonrpc": "1.0", "id": 1, "method": "GetTask", "params": {"id": "x"}}', -32600),
        (b'{"jsonrpc": "2.0", "id": true, "method": "GetTask"}', -32600),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tasks/nope"}', -32601),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": [1]}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {}}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "GetTask", "params": {"id": "nope"}}', -32001),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tasks/cancel", "params": {"id": "nope"}}', -32001),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": "nope"}}', -32001),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "tasks/pushNotificationConfig/set", "params": {}}', -32003),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageToken": "bad"}}', -32602),
        (b'{"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {"pageSize": 0}}', -32602),
    ],
)
def test_a_bad_request_gets_its_json_rpc_error(gateway: Gateway, body: bytes, code: int) -> None:
    response = gateway.post(body)
    assert response.status == 200, "JSON-RPC errors are answers, as the SDK's clients read them"
    answer = orjson.loads(response.body)
    assert answer["error"]["code"] == code, answer
    assert answer["error"]["message"]


def test_a_message_gets_a2a_s_errors(gateway: Gateway) -> None:
    assert gateway.code("SendMessage", {"message": message({"n": 1})}) == -32602, "which skill? the mesh has two"
    assert gateway.code("SendMessage", {"message": message({"n": 1}, metadata={"skill": "nope"})}) == -32602
    assert gateway.code("SendMessage", {"message": message({"n": "one"}, metadata={"skill": "double"})}) == -32602
    text_only = {**message(metadata={"skill": "double"}), "parts": [{"text": "double two"}]}
    assert gateway.code("SendMessage", {"message": text_only}) == -32005
    assert gateway.code("SendMessage", {"message": {**message({"n": 1}), "taskId": "nope"}}) == -32001
    versioned = {"message": message({"n": 1}, metadata={"skill": "double"})}
    assert gateway.code("SendMessage", versioned, **{"A2A-Version": "2.0"}) == -32009
    error = gateway.call("GetTask", {"id": "nope"})["error"]
    assert error["data"][0]["reason"] == "TASK_NOT_FOUND", "1.0 names the reason"
    assert "data" not in gateway.call("tasks/get", {"id": "nope"})["error"]


def test_a_text_part_holding_json_is_read_as_the_input(gateway: Gateway) -> None:
    sent = {**message(metadata={"skill": "double"}), "parts": [{"text": '{"n": 5}'}]}
    task = gateway.result("SendMessage", {"message": sent, "configuration": {"returnImmediately": True}})["task"]
    assert gateway.service.view(task["id"])["input"] == {"n": 5}


def test_a_whole_number_from_protojson_reaches_the_flow_as_an_integer(gateway: Gateway) -> None:
    """A2A 1.0's ProtoJSON carries every number as a double (the SDK sends 2 as 2.0); 0.3's JSON does not."""
    sent = message({"n": 2.0, "ratio": 0.5, "many": [3.0]}, metadata={"skill": "double"})
    task = gateway.result("SendMessage", {"message": sent, "configuration": {"returnImmediately": True}})["task"]
    given = gateway.service.view(task["id"])["input"]
    assert given == {"n": 2, "ratio": 0.5, "many": [3]}
    assert isinstance(given["n"], int)
    assert isinstance(given["many"][0], int)


def pause(gateway: Gateway, task_id: str) -> None:
    """x-pause's part: the envelope kept for the resume, the task marked paused."""
    envelope = {"id": task_id, "route": {"prev": ["a"], "curr": "x-pause", "next": ["a"]}, "payload": {"n": 1}}
    boto3.client("s3").put_object(Bucket=RESULTS, Key=result_key("n", task_id, "pause"), Body=orjson.dumps(envelope))
    assert gateway.service.tasks.pause(task_id, {"prompt": "ok?", "fields": {}}, dt.datetime.now(dt.UTC))


def test_a_send_answers_once_its_task_waits_for_input(gateway: Gateway) -> None:
    gateway.service.sleep = lambda _: pause(gateway, gateway.service.listing.page(None, 1, None)["tasks"][0]["id"])
    task = gateway.result("SendMessage", {"message": message({"n": 1}, metadata={"skill": "review"})})["task"]
    assert task["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert task["status"]["message"]["parts"][0]["text"] == "ok?"


def test_a_stream_of_a_task_waiting_for_input_ends_there(gateway: Gateway) -> None:
    """A2A's stream stops at input-required: a message naming the task resumes it, and streams on."""
    task_id = gateway.service.create(payload={"n": 1}, flow="review").task_id
    pause(gateway, task_id)
    endpoint = A2aEndpoint(gateway.service, lambda _: {})
    request = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
    chunks = endpoint.handle(orjson.dumps(request), {})
    assert chunks is not None
    assert not isinstance(chunks, dict)
    (only,) = [event["result"] for chunk in chunks for event in sse_data(chunk)]
    assert only["task"]["status"]["state"] == "TASK_STATE_INPUT_REQUIRED"


@pytest.mark.parametrize("caller", [None, Caller(owner="jwt:ana")], ids=["key", "signed-in"])
def test_on_aws_a_stream_holds_what_happened_within_its_time_not_only_the_first_news(
    gateway: Gateway, monkeypatch: pytest.MonkeyPatch, caller: Caller | None
) -> None:
    """Unlike `GET .../events` (long polling), an A2A client does not reconnect on its own: a bounded
    stream goes on after the first news until its time is up, and then asks to be resubscribed; for a
    signed-in caller (`gateway.auth: jwt`) subscribing to its own task as for the key's holder (issue 47)."""
    service = gateway.service
    if caller is not None:
        monkeypatch.setattr(GatewayFunction, "caller_of", lambda _function, _event: caller)
        service = service.as_caller(caller)
    task_id = service.create(payload={"n": 1}, flow="double").task_id
    told: list[str] = []

    def sleep(_seconds: float) -> None:  # an actor reports while the stream is open
        if not told:
            told.append(task_id)
            fly = {"id": task_id, "actor": "a", "data": {"token": "hi"}}
            gateway.service.events.append([(task_id, FLY, fly)])
        time.sleep(0.05)

    ahead = functools.partial(sse.follow, clock_ns=lambda: time.time_ns() + int(2e9 * SETTLE_SECONDS), sleep=sleep)
    monkeypatch.setattr(a2a_stream, "follow", ahead)
    request = {"jsonrpc": "2.0", "id": 1, "method": "SubscribeToTask", "params": {"id": task_id}}
    body = gateway.post(orjson.dumps(request)).body.decode()
    answers = [event["result"] for event in sse_data(body)]
    assert [next(iter(answer)) for answer in answers] == ["task", "statusUpdate"], body
    assert answers[1]["statusUpdate"]["status"]["message"]["parts"][0]["data"] == {"token": "hi"}
    assert body.endswith("retry: 500\n\n")

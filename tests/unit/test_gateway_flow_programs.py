"""The gateway and program flows (`asya_gateway.service`, `asya_gateway.settings`): a task of a program
flow starts at the program's first actor, carrying the program; an input its first decision cannot read
is refused naming the condition; a client cannot carry a program of its own; the programs file must be
the one deployed with the flows."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from asya.headers import FLOW_HEADER
from asya.task_store import TaskStore
from asya.variables import ConfigError
from asya_gateway.mcp import McpEndpoint
from asya_gateway.service import TaskService
from asya_gateway.settings import Flow, GatewaySettings
from asya_gateway.task_error import TaskError
from asya_local.testing.tables import EVENTS, TASKS
from tests.support.flow_programs import compiled

TRIAGE = """
def flow(p):
    if p["urgent"]:
        p = escalate(p)
    else:
        p = classify(p)
    return accept(p)
"""


@pytest.fixture
def program(tmp_path: Path) -> dict[str, Any]:
    return compiled(tmp_path, TRIAGE)


@pytest.fixture
def service(task_store: TaskStore, program: dict[str, Any]) -> TaskService:
    return _service(task_store, "triage", program)


def _service(task_store: TaskStore, name: str, program: dict[str, Any]) -> TaskService:
    sqs = boto3.client("sqs")
    for actor in ("escalate", "classify", "accept"):
        sqs.create_queue(QueueName=f"asya-n-{actor}")
    flows = {name: Flow(name=name, route=["classify", "accept"], program=program)}
    settings = GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS, flows=flows)
    return TaskService(settings, tasks=task_store, sqs=sqs)


def _sent(service: TaskService, actor: str) -> list[dict[str, Any]]:
    url = service.sqs.get_queue_url(QueueName=f"asya-n-{actor}")["QueueUrl"]
    messages = service.sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10).get("Messages", [])
    return [json.loads(message["Body"]) for message in messages]


def test_a_task_of_a_program_flow_starts_where_the_program_decides(
    service: TaskService, program: dict[str, Any]
) -> None:
    created = service.create(payload={"urgent": True}, flow="triage")
    [envelope] = _sent(service, "escalate")
    assert envelope["route"] == {"prev": [], "curr": "escalate", "next": ["accept"]}
    assert envelope["headers"][FLOW_HEADER]["program"] == program
    assert program["nodes"][envelope["headers"][FLOW_HEADER]["at"]]["call"] == "escalate"
    record = service.tasks.get(created.task_id)
    assert record is not None
    assert record["program_version"] == program["version"]
    assert created.task is not None
    assert created.task["program_version"] == program["version"], "what GET /mesh/{id} shows"
    assert record["actor"] == "escalate"
    assert _sent(service, "classify") == []


def test_an_input_the_first_decision_cannot_read_is_refused_naming_it(service: TaskService) -> None:
    with pytest.raises(TaskError) as refused:
        service.create(payload={"text": "hi"}, flow="triage")
    assert refused.value.status == 400
    assert "flows.py line 3: p['urgent']: no field 'urgent'" in str(refused.value)
    assert _sent(service, "escalate") == _sent(service, "classify") == []


PARITY = """
def flow(p):
    if p["n"] % 2 == 0:
        p = classify(p)
    else:
        p = escalate(p)
    return accept(p)
"""


@pytest.mark.parametrize("n", ["%01000000000000d", "%0600000000d", 10**400])
def test_a_hostile_input_to_an_ordinary_condition_is_a_400_saying_why(
    task_store: TaskStore, tmp_path: Path, n: Any, caplog: pytest.LogCaptureFixture
) -> None:
    parity = _service(task_store, "parity", compiled(tmp_path, PARITY))
    with pytest.raises(TaskError) as refused:
        parity.create(payload={"n": n}, flow="parity")
    assert refused.value.status == 400
    why = "a number beyond ±2**53" if isinstance(n, int) else "arithmetic takes numbers, not a str"
    assert str(refused.value).endswith(f"flows.py line 3: p['n'] % 2 == 0: {why}")
    assert str(refused.value) in caplog.text, "the refusal is logged"
    assert _sent(parity, "classify") == _sent(parity, "escalate") == []


def test_a_client_cannot_send_a_flow_header(service: TaskService, program: dict[str, Any]) -> None:
    header = {"program": program, "at": 0}
    with pytest.raises(TaskError) as refused:
        service.create(payload={"urgent": False}, route=["accept"], headers={FLOW_HEADER: header})
    assert refused.value.status == 400
    assert "x-asya-flow are set by the mesh, not by clients" in str(refused.value)


def _environment(version: str, programs_file: str) -> dict[str, str]:
    flows = {"triage": {"route": ["classify", "accept"], "program": version}}
    return {
        "ASYA_NAMESPACE": "n",
        "ASYA_TASKS_TABLE": TASKS,
        "ASYA_EVENTS_TABLE": EVENTS,
        "ASYA_FLOWS": json.dumps(flows),
        "ASYA_FLOW_PROGRAMS": programs_file,
    }


def test_settings_read_the_program_of_the_version_the_flow_names(tmp_path: Path, program: dict[str, Any]) -> None:
    file = tmp_path / "flow_programs.json"
    file.write_text(json.dumps({"triage": program}))
    settings = GatewaySettings.from_env(_environment(program["version"], str(file)))
    assert settings.flows["triage"].program == program
    assert settings.flows["triage"].public()["program"] == program


@pytest.mark.parametrize(
    "case",
    [
        ("0123456789ab", "flow_programs.json", "no program of version 0123456789ab for flow 'triage'"),
        (None, "missing.json", "ASYA_FLOW_PROGRAMS: cannot read 'missing.json'"),
        (None, "", "ASYA_FLOWS names program flows but ASYA_FLOW_PROGRAMS is not set"),
    ],
    ids=["another version", "no file", "no variable"],
)
def test_settings_refuse_programs_that_are_not_the_deployed_ones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, program: dict[str, Any], case: tuple[str | None, str, str]
) -> None:
    """`case`: the version the flow names (None: the program's), the programs file, and why it is refused."""
    version, programs_file, why = case
    (tmp_path / "flow_programs.json").write_text(json.dumps({"triage": program}))
    monkeypatch.setenv("LAMBDA_TASK_ROOT", str(tmp_path))  # where the build puts the file
    with pytest.raises(ConfigError) as refused:
        GatewaySettings.from_env(_environment(version or program["version"], programs_file))
    assert why in str(refused.value)


def test_an_mcp_tool_of_a_program_flow_does_not_pass_its_shortest_way_for_its_route(service: TaskService) -> None:
    """Without a description of its own, a tool says what its flow does: a program's path is the input's."""
    status, answer = McpEndpoint(service, lambda task_id: task_id).handle(
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    )
    assert status == 200
    assert answer is not None
    [tool] = [tool for tool in answer["result"]["tools"] if tool["name"] == "triage"]
    assert tool["description"] == "Start flow 'triage' (a program whose path depends on the input) as a task."

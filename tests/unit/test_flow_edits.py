"""Edits in a flow program (`p["k"] = <expression>`, docs/flows.md): evaluated by the sidecar that holds
the payload, between two actors, with no hop of their own; a new payload each time (the one given is
never changed), bounded like a condition, and refused naming the line when the payload cannot take them.
At the gateway, the edits before the first actor shape what it sends, while the record keeps the input
as given."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import pytest

from asya.flow_expressions import MAX_STEPS, Budget, FlowError, assigned
from asya.flow_program import Program
from asya.flows import start
from asya.headers import FLOW_HEADER
from asya.task_store import TaskStore
from asya_gateway.service import TaskService
from asya_gateway.settings import Flow, GatewaySettings
from asya_gateway.task_error import TaskError
from asya_local.testing.tables import EVENTS, TASKS
from tests.support.flow_hops import arriving, sent
from tests.support.flow_programs import compiled

LABELLED = """
def flow(p):
    p["asked"] = {"text": p["text"], "words": len(p["words"])}
    p["tries"] = 0
    p = draft(p)
    p["tries"] += 1
    p["notes"] = [p["score"] * 10, "drafted"]
    if p["score"] > 2:
        p["notes"][1] = "good"
        p = accept(p)
    p["done"] = True
    return p
"""


def _lit(*keys: Any) -> list[Any]:
    return [["lit", key] for key in keys]


def test_an_edit_makes_a_new_payload_copying_only_the_path_it_writes() -> None:
    shared = {"deep": [1, 2]}
    payload = {"a": {"b": 1, "shared": shared}, "other": shared}
    b_plus_one = ["math", "+", ["at", ["at", ["var"], ["lit", "a"]], ["lit", "b"]], ["lit", 1]]
    edited = assigned(payload, _lit("a", "b"), b_plus_one, Budget())
    assert edited == {"a": {"b": 2, "shared": {"deep": [1, 2]}}, "other": {"deep": [1, 2]}}
    assert payload == {"a": {"b": 1, "shared": {"deep": [1, 2]}}, "other": {"deep": [1, 2]}}, "never changed"
    assert edited["other"] is shared, "what the path does not pass is shared, not copied"


def test_an_edit_writes_list_items_and_object_literals() -> None:
    payload = {"items": [1, 2, 3]}
    assert assigned(payload, _lit("items", -1), ["lit", 9], Budget()) == {"items": [1, 2, 9]}
    value = ["obj", ["lit", "n"], ["fn", "len", ["at", ["var"], ["lit", "items"]]], ["lit", "ok"], ["lit", True]]
    assert assigned(payload, _lit("summary"), value, Budget()) == {"items": [1, 2, 3], "summary": {"n": 3, "ok": True}}


@pytest.mark.parametrize(
    ("payload", "path", "value", "message"),
    [
        ({}, _lit("a", "b"), ["lit", 1], "no field 'a'"),
        ({"items": [1]}, _lit("items", 1), ["lit", 1], "an index past the end of a list"),
        ({"items": [1]}, _lit("items", "x"), ["lit", 1], "a list's index is a whole number, not a str"),
        ({"a": 1}, [["lit", 1]], ["lit", 1], "an object's keys are text, not a int"),
        ({"s": "text"}, _lit("s", 0), ["lit", "T"], "an edit writes into an object or a list, not a str"),
        ([1, 2], _lit("k"), ["lit", 1], "a list's index is a whole number, not a str"),
        ({}, _lit("k"), ["obj", ["lit", 1], ["lit", 2]], "an object's keys are text, not a int"),
        ({"n": "1"}, _lit("n"), ["math", "+", ["at", ["var"], ["lit", "n"]], ["lit", 1]], "arithmetic takes numbers"),
    ],
)
def test_an_edit_the_payload_cannot_take_is_a_flow_error(
    payload: Any, path: list[Any], value: list[Any], message: str
) -> None:
    with pytest.raises(FlowError, match=message):
        assigned(payload, path, value, Budget())


def test_edits_that_double_the_payload_stop_at_the_budget(tmp_path: Path) -> None:
    """Sharing is free in memory and not on the wire: each write pays for what it weighs as written."""
    program = Program(
        compiled(
            tmp_path,
            """
            def flow(p):
                p = draft(p)
                while bounded(True, max_iterations=1000):
                    p["a"] = [p["a"], p["a"]]
                return p
            """,
        )
    )
    refused = rf"flows.py line 5: p\['a'\] = \[p\['a'\], p\['a'\]\]: .*over {MAX_STEPS:,} steps"
    with pytest.raises(FlowError, match=refused):
        program.advance(program.after(program.start), {"a": "x" * 100}, {})


def test_the_program_names_the_line_of_an_edit_it_cannot_make(tmp_path: Path) -> None:
    program = Program(compiled(tmp_path, LABELLED))
    with pytest.raises(FlowError, match=r"flows.py line 3: p\['asked'\] = .*: no field 'words'"):
        program.advance(program.start, {"text": "hi"}, {})


def test_a_forged_edit_is_refused_when_the_program_is_checked(tmp_path: Path) -> None:
    document = compiled(tmp_path, LABELLED)
    edit = next(node for node in document["nodes"] if "set" in node)
    index = document["nodes"].index(edit)
    forgeries = [
        ({**edit, "set": []}, "an edit names a key of the payload and a value"),
        ({key: value for key, value in edit.items() if key != "value"}, "an edit names a key of the payload"),
        ({**edit, "value": ["eval", "1"]}, r"flows.py line 11: p\[.done.\] = True: \['eval', '1'\] is not an"),
        ({**edit, "next": 999}, "a set node leads outside the program"),
    ]
    for forged, message in forgeries:
        document["nodes"][index] = forged
        with pytest.raises(ValueError, match=message):
            Program(document).check()


def test_the_gateways_first_step_makes_the_edits_before_the_first_actor(tmp_path: Path) -> None:
    program = compiled(tmp_path, LABELLED)
    given = {"text": "hi", "words": ["a", "b"]}
    route, header, payload = start(program, given)
    assert route == ["draft"]
    assert program["nodes"][header["at"]]["call"] == "draft"
    assert payload == {"text": "hi", "words": ["a", "b"], "asked": {"text": "hi", "words": 2}, "tries": 0}
    assert given == {"text": "hi", "words": ["a", "b"]}


def test_an_edit_between_two_actors_adds_no_hop(tmp_path: Path) -> None:
    """draft's output, edited, goes straight to accept: one envelope, to accept's queue."""
    program = compiled(tmp_path, LABELLED)
    document = arriving(program, {"text": "hi", "words": [], "tries": 0}, "draft")
    [(to, out)] = sent("draft", lambda p: {"tries": p["tries"], "score": 3}, document)
    assert to.endswith("accept")
    assert out["route"] == {"prev": ["draft"], "curr": "accept", "next": []}
    assert out["payload"] == {"tries": 1, "score": 3, "notes": [30, "good"]}
    [(to, end)] = sent("accept", lambda p: {**p, "accepted": True}, out)
    assert to.endswith("x-sink")
    assert end["payload"] == {"tries": 1, "score": 3, "notes": [30, "good"], "accepted": True, "done": True}
    assert end["route"]["prev"] == ["draft", "accept"], "the task's hops are its actors' only"


def test_an_edit_after_the_last_actor_is_made_before_x_sink(tmp_path: Path) -> None:
    program = compiled(tmp_path, LABELLED)
    document = arriving(program, {"text": "hi", "words": [], "tries": 0}, "draft")
    [(to, end)] = sent("draft", lambda p: {"tries": p["tries"], "score": 1}, document)
    assert to.endswith("x-sink")
    assert end["status"]["phase"] == "succeeded"
    assert end["payload"] == {"tries": 1, "score": 1, "notes": [10, "drafted"], "done": True}
    assert FLOW_HEADER not in end["headers"]


def _labelled(task_store: TaskStore, tmp_path: Path) -> TaskService:
    program = compiled(tmp_path, LABELLED)
    sqs = boto3.client("sqs")
    for actor in ("draft", "accept"):
        sqs.create_queue(QueueName=f"asya-n-{actor}")
    flows = {"labelled": Flow(name="labelled", route=["draft", "accept"], program=program)}
    settings = GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS, flows=flows)
    return TaskService(settings, tasks=task_store, sqs=sqs)


def test_a_task_started_by_the_gateway_sends_the_edited_input_and_keeps_the_given_one(
    task_store: TaskStore, tmp_path: Path
) -> None:
    service = _labelled(task_store, tmp_path)
    sqs = service.sqs
    given = {"text": "hi", "words": ["a"]}
    created = service.create(payload=given, flow="labelled")
    url = sqs.get_queue_url(QueueName="asya-n-draft")["QueueUrl"]
    [message] = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10)["Messages"]
    envelope = json.loads(message["Body"])
    assert envelope["payload"] == {**given, "asked": {"text": "hi", "words": 1}, "tries": 0}
    assert FLOW_HEADER in envelope["headers"]
    record = service.tasks.get(created.task_id)
    assert record is not None
    assert json.loads(record["input"]) == given, "a re-run starts from the input as given"


def test_an_input_the_gateways_edits_cannot_take_is_refused_naming_the_line(
    task_store: TaskStore, tmp_path: Path
) -> None:
    service = _labelled(task_store, tmp_path)
    with pytest.raises(TaskError) as refused:
        service.create(payload={"text": "hi", "words": 3}, flow="labelled")
    assert refused.value.status == 400
    assert "flows.py line 3: p['asked'] = {'text': p['text'], 'words': len(p['words'])}: " in str(refused.value)
    url = service.sqs.get_queue_url(QueueName="asya-n-draft")["QueueUrl"]
    assert "Messages" not in service.sqs.receive_message(QueueUrl=url), "nothing sent"

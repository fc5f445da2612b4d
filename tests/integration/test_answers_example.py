"""The answers example (`examples/answers`, `make flow-demo`) on the local stack: a flow written as a
Python program takes each message on its own path (a stronger model when the small one is unsure, a
person when both are, a fallback model when the drafting model fails, a judge's loop until the reply
is good enough), and the path is what the actors' outputs decided; the demo answers a paused task as
its person (`person.json`)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asya.envelope import visited
from asya_local.demo_person import DemoPerson, person_answer
from asya_local.endpoint.process import LocalEndpoint
from asya_local.gateway_client import GatewayClient
from tests.support.stack import RunningMesh, running

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "answers"
REFINED = ["evaluate", "refine", "evaluate"]  # one round of the judge's loop

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def answers(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    with running(endpoint, EXAMPLE / "mesh.yaml") as mesh:
        yield mesh


def _ended(mesh: RunningMesh, task_id: str) -> dict[str, Any]:
    """The task's envelope as x-sink kept it: its route says which actors it went through."""
    return dict(mesh.result(task_id)["envelope"])


def test_each_input_of_the_demo_takes_the_path_its_outputs_decide(answers: RunningMesh) -> None:
    """As `asya demo` runs them: the last input pauses for a person, whom the demo stands in for with
    the example's `person.json` (`DemoPerson`), and goes on with that answer."""
    gateway = answers.gateway()
    inputs = json.loads((EXAMPLE / "inputs.json").read_text())
    ids = [gateway.create_task({"flow": "answer", "payload": payload})["id"] for payload in inputs]
    said: list[str] = []
    answer = person_answer(EXAMPLE / "mesh.yaml")
    assert answer is not None
    assert answers.stack.wait_until_idle(60, on_tick=DemoPerson(gateway, set(ids), answer, said.append))
    ended = [gateway.task(task_id) or {} for task_id in ids]
    assert [task["status"] for task in ended] == ["succeeded"] * 5, answers.errors()
    assert said == [f'task {ids[4][:8]} paused for a person; a person answers: {{"intent": "account"}}']
    paths = [visited(_ended(answers, task_id)["route"]) for task_id in ids]
    assert paths == [
        ["classify", "draft", *REFINED, "refine", "evaluate"],  # sure; the judge sends the draft back twice
        ["classify", "classify-large", "draft", *REFINED, "refine", "evaluate"],  # unsure: the stronger model
        ["classify", "draft", *REFINED],  # the account draft has its next step: one round
        ["classify", "draft", "draft-long", *REFINED, "refine", "evaluate", "refine", "evaluate"],  # too long
        ["classify", "classify-large", "x-pause", "draft", *REFINED],  # both unsure: a person named the intent
    ]
    outputs = [task["output"] for task in ended]
    assert {output["quality"] for output in outputs} == {1.0}
    assert outputs[1]["classified_by"] == "classify-large"
    assert outputs[3]["drafted_by"] == "draft-long"
    assert outputs[3]["message"] == inputs[3]["message"], "the fallback drafts from the input draft was given"
    assert outputs[4]["intent"] == "account"


def _paused(gateway: GatewayClient, message: str) -> str:
    """A task of a message neither intent model can place: the program pauses it for a person."""
    task_id = str(gateway.create_task({"flow": "answer", "payload": {"message": message}})["id"])
    deadline = time.monotonic() + 20
    while (task := gateway.task(task_id) or {}).get("status") in ("pending", "running") and time.monotonic() < deadline:
        time.sleep(0.2)  # a paused task has not ended: the gateway's wait would run the whole time out
    assert task["status"] == "paused", task
    return task_id


def test_a_message_no_model_can_place_waits_for_a_person_and_goes_on_with_their_answer(answers: RunningMesh) -> None:
    gateway = answers.gateway()
    task_id = _paused(gateway, "hello?")
    gateway.resume(task_id, {"intent": "billing"})
    task = gateway.wait(gateway.task(task_id) or {}, time.monotonic() + 30)
    assert task["status"] == "succeeded", answers.errors()
    assert task["output"]["reply"].startswith("Hi there. Your refund is on its way")
    path = visited(_ended(answers, task_id)["route"])
    assert path == ["classify", "classify-large", "x-pause", "draft", *REFINED, "refine", "evaluate"]


def test_a_draft_the_judge_never_passes_ends_at_the_loop_bound(answers: RunningMesh) -> None:
    gateway = answers.gateway()
    task_id = _paused(gateway, "???")
    gateway.resume(task_id, {"intent": "warranty"})  # an intent the drafting models have no answer for
    task = gateway.wait(gateway.task(task_id) or {}, time.monotonic() + 30)
    assert task["status"] == "failed", task
    assert task["reason"] == "LoopLimit", task
    path = visited(_ended(answers, task_id)["route"])
    assert path.count("refine") == 3, path  # max_iterations=3: three rounds, not a fourth

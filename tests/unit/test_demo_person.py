"""`asya demo` answers a task its flow paused for a person, once, with the example's `person.json`,
through the gateway's resume call, and says so on screen."""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

import pytest

from asya_local import demo_person
from asya_local.demo_person import DemoPerson, person_answer

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


class PausedGateway:
    """The gateway's two calls the demo's person makes: paused tasks are listed until resumed."""

    def __init__(self, paused: list[str]) -> None:
        self.paused = paused
        self.resumed: list[tuple[str, dict[str, Any]]] = []

    def tasks(self, **where: Any) -> list[dict[str, Any]]:
        assert where["status"] == "paused"
        return [{"id": task_id, "status": "paused"} for task_id in self.paused]

    def resume(self, task_id: str, given: dict[str, Any]) -> dict[str, Any]:
        self.resumed.append((task_id, given))
        return {"id": task_id, "status": "running"}


def test_each_paused_task_of_the_demo_is_answered_once_and_the_answer_said(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(demo_person, "LOOK_EVERY_SECONDS", 0.0)
    ours, another = "5f0c9a2e-1111-4a2b-8c3d-000000000001", "77aa0000-2222-4a2b-8c3d-000000000002"
    gateway = PausedGateway([ours, another])  # another's task: not the demo's to answer
    said: list[str] = []
    demo_ids = {ours, "b0000000-0000-4000-8000-000000000003"}
    person = DemoPerson(gateway, demo_ids, {"intent": "account"}, said.append)  # type: ignore[arg-type]
    person()
    person()  # still listed as paused (the resume not yet applied): not answered twice
    assert gateway.resumed == [(ours, {"intent": "account"})]
    assert said == ['task 5f0c9a2e paused for a person; a person answers: {"intent": "account"}']


def test_the_answers_example_keeps_a_persons_answer_and_an_input_neither_model_can_place() -> None:
    from examples.answers.actors import classify, classify_large

    assert person_answer(EXAMPLES / "answers" / "mesh.yaml") == {"intent": "account"}
    last = json.loads((EXAMPLES / "answers" / "inputs.json").read_text())[-1]
    assert classify(last)["confidence"] < 0.6, "the small model is unsure"
    assert classify_large(last)["confidence"] < 0.6, "so is the stronger one: the program pauses it"
    assert person_answer(EXAMPLES / "reviews" / "mesh.yaml") is None


def test_a_persons_answer_that_is_not_an_object_is_refused_before_the_demo_starts(tmp_path: Path) -> None:
    (tmp_path / "person.json").write_text('["account"]')
    with pytest.raises(argparse.ArgumentTypeError, match="a JSON object is wanted"):
        person_answer(tmp_path / "mesh.yaml")

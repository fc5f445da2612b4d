"""A task's page shows what it was started with, and runs an ended task again: with the same input, or
with an edited copy that is refused, and kept as typed, when it is not JSON."""

from __future__ import annotations

import re
from typing import Any

import pytest
from flask.testing import FlaskClient

from asya_cdk.loading import load_mesh
from asya_local.console.app import Console
from asya_local.console.topology import Topology
from asya_local.gateway_client import GatewayError
from tests.support.console_client import console_client
from tests.unit.test_console import REVIEWS, FakeGateway, FixedStats


class RerunGateway(FakeGateway):
    def __init__(self) -> None:
        super().__init__()
        self.reruns: list[tuple[str, Any, bool]] = []
        self.keys: list[str | None] = []
        self.known["t3"] |= {"flow": "triage-reviews", "input": {"product": "<kettle>", "reviews": []}}
        self.known["t4"] = {"id": "t4", "status": "failed", "terminal": True, "input_missing": "it was not kept"}

    def rerun(
        self, task_id: str, payload: Any = None, *, given: bool = False, idempotency_key: str | None = None
    ) -> dict[str, Any]:
        if task_id == "t4" and not given:
            raise GatewayError("task t4 cannot be run again with the same input")
        self.reruns.append((task_id, payload, given))
        self.keys.append(idempotency_key)
        return {"id": "t10", "task": {"id": "t10"}}


@pytest.fixture
def gateway() -> RerunGateway:
    return RerunGateway()


@pytest.fixture
def client(gateway: RerunGateway) -> FlaskClient:
    console = Console(Topology.of_mesh(load_mesh(REVIEWS)), FixedStats(), gateway, "here", refresh=0.01)  # type: ignore[arg-type]
    return console_client(console)


def test_an_ended_task_shows_its_input_and_runs_again_with_it(client: FlaskClient, gateway: RerunGateway) -> None:
    page = client.get("/tasks/t3").get_data(as_text=True)
    assert "&#34;product&#34;: &#34;&lt;kettle&gt;&#34;" in page  # shown, escaped
    assert 'action="/tasks/t3/rerun"' in page
    [key] = re.findall(r'name="key" value="([0-9a-f-]{36})"', page)  # a second click makes no second task
    answer = client.post("/tasks/t3/rerun", data={"how": "same", "payload": "ignored", "key": key})
    assert (answer.status_code, answer.headers["Location"]) == (303, "/tasks/t10")
    assert gateway.reruns == [("t3", None, False)]
    assert gateway.keys == [key]
    running = client.get("/tasks/t1").get_data(as_text=True)
    assert 'action="/tasks/t1/rerun"' not in running, "a running task is not run again"


def test_an_edited_input_is_checked_as_json_and_kept_as_typed_when_refused(
    client: FlaskClient, gateway: RerunGateway
) -> None:
    refused = client.post("/tasks/t3/rerun", data={"how": "edited", "payload": '{"product": oops'})
    page = refused.get_data(as_text=True)
    assert refused.status_code == 400
    assert "Not run again: the input is not JSON" in page
    assert "{&#34;product&#34;: oops</textarea>" in page
    assert gateway.reruns == []
    answer = client.post("/tasks/t3/rerun", data={"how": "edited", "payload": '{"product": "pot"}'})
    assert answer.status_code == 303
    assert gateway.reruns == [("t3", {"product": "pot"}, True)]


def test_a_task_whose_input_was_not_kept_says_so_and_the_refusal_is_shown(client: FlaskClient) -> None:
    page = client.get("/tasks/t4").get_data(as_text=True)
    assert "Not kept: it was not kept." in page
    assert 'value="same"' not in page, "no same input to run again with"
    refused = client.post("/tasks/t4/rerun", data={"how": "same"})
    assert refused.status_code == 400
    assert "Not run again: task t4 cannot be run again with the same input" in refused.get_data(as_text=True)

"""The tickets example (`examples/tickets`), end to end on the local stack: a scikit-learn model shipped
as a file, a routing table read from a bucket of the user's with a grant of its own, a webhook key from
Secrets Manager, and a pandas report shipped as a container image. What `make demo
MESH=examples/tickets/mesh.yaml` runs."""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from asya_local.endpoint.process import LocalEndpoint
from tests.support.stack import RunningMesh, running

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "tickets"

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def tickets(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    with running(endpoint, EXAMPLE / "mesh.yaml") as mesh:
        yield mesh


def test_a_batch_of_tickets_is_classified_routed_signed_and_reported(tickets: RunningMesh) -> None:
    batches = json.loads((EXAMPLE / "inputs.json").read_text())
    reports = [tickets.gateway().run_task({"flow": "triage-batch", "payload": batch}, 120) for batch in batches]
    assert [report["status"] for report in reports] == ["succeeded", "succeeded"], tickets.errors()
    first = reports[0]["output"]
    assert first["tickets"] == 5
    assert sum(team["tickets"] for team in first["by_team"].values()) == 5
    assert first["by_category"] == {"account": 1, "billing": 1, "shipping": 1, "technical": 2}
    assert first["unsure"] == ["t-1005"], "'hello?' is nobody's: the triage desk decides"
    assert first["by_team"]["triage-desk"]["sla_hours"] == 2
    second = reports[1]["output"]
    assert second["by_category"] == {"account": 1, "billing": 1, "technical": 1}


def test_one_ticket_gets_a_webhook_message_signed_with_the_secret(tickets: RunningMesh) -> None:
    ticket = {"id": "t-9", "text": "My parcel was delivered to the wrong address"}
    task = tickets.gateway().run_task({"flow": "triage", "payload": ticket}, 60)
    assert task["status"] == "succeeded", tickets.errors()
    output = task["output"]
    assert (output["category"], output["team"], output["sla_hours"]) == ("shipping", "logistics", 12)
    key = yaml.safe_load((EXAMPLE / "demo-secrets.yaml").read_text())["tickets/webhook-signing-key"]
    body = json.dumps(output["webhook"]["body"], sort_keys=True, separators=(",", ":")).encode()
    assert output["webhook"]["signature"] == "sha256=" + hmac.new(key.encode(), body, hashlib.sha256).hexdigest()
    assert key not in json.dumps(output)

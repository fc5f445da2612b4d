"""Maps in flow programs (docs/flows.md) on the local stack, through the gateway: a list of 100 items
mapped over an actor comes back into the payload with the 100 outputs in item order, between edits made
by the gateway (before the first actor) and by the sidecars (after the map, after the last actor), with
the join the mesh adds for maps as the task's only extra hop; an empty list maps to `[]`, and a failing
item fails the task as a failed branch fails its join."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asya_local.endpoint.process import LocalEndpoint
from asya_local.gateway_client import GatewayClient
from tests.support.stack import RunningMesh, running

pytestmark = pytest.mark.integration
MAPS = Path(__file__).resolve().parent / "maps"
WAIT_SECONDS = 150
GATHER = "flow-gather"
ITEMS = list(range(100))
TASKS: dict[str, list[int]] = {"hundred": ITEMS, "empty": [], "failing": [1, 2, -3, 4]}


@pytest.fixture(scope="module")
def maps(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    with running(endpoint, MAPS / "mesh.yaml") as mesh:
        yield mesh


@pytest.fixture(scope="module")
def gateway(maps: RunningMesh) -> GatewayClient:
    return GatewayClient(maps.stack.gateway_url or "", maps.stack.api_key)


@pytest.fixture(scope="module")
def started(gateway: GatewayClient) -> dict[str, str]:
    """Every task of the module, created at once: name → task id."""
    return {
        name: gateway.create_task({"flow": "squares", "payload": {"items": items}})["id"]
        for name, items in TASKS.items()
    }


def ended(gateway: GatewayClient, maps: RunningMesh, task_id: str) -> dict[str, Any]:
    task = gateway.task(task_id)
    assert task is not None
    task = gateway.wait(task, time.monotonic() + WAIT_SECONDS)
    assert task["terminal"], f"{task_id} still {task['status']} after {WAIT_SECONDS} s\n{maps.errors()}"
    return task


def test_a_map_over_100_items_gives_the_100_outputs_in_item_order(
    gateway: GatewayClient, maps: RunningMesh, started: dict[str, str]
) -> None:
    task = ended(gateway, maps, started["hundred"])
    assert (task["status"], task["progress"]) == ("succeeded", 100), task
    output = task["output"]
    assert output["squares"] == [{"n": n, "square": n * n} for n in ITEMS]
    assert (output["given"], output["prepared"], output["mapped"], output["done"]) == (100, True, 100, True)
    assert output["total"] == sum(n * n for n in ITEMS)
    assert task["route"]["prev"] == ["prepare", GATHER, "total"], "the items' hops are the branches'"
    assert [hop["actor"] for hop in task["hops"]] == ["prepare", GATHER, "total"], "an edit is no hop"
    assert task["input"] == {"items": ITEMS}, "the input as given: the gateway's edit is in what it sent"


def test_an_empty_list_maps_to_an_empty_list_and_the_program_goes_on(
    gateway: GatewayClient, maps: RunningMesh, started: dict[str, str]
) -> None:
    task = ended(gateway, maps, started["empty"])
    assert task["status"] == "succeeded", task
    output = task["output"]
    assert (output["squares"], output["mapped"], output["total"], output["done"]) == ([], 0, 0, True)


def test_a_failing_item_fails_the_task_as_a_failed_branch_fails_its_join(
    gateway: GatewayClient, maps: RunningMesh, started: dict[str, str]
) -> None:
    task = ended(gateway, maps, started["failing"])
    assert (task["status"], task["reason"]) == ("failed", "JoinFailed"), task
    message = task["error"]["message"]
    assert message.startswith("1 of 5 branches failed (on_failure: fail_fast): branch 4 of 5"), message
    assert "no square of a negative item here: -3" in message, "the item's own error"

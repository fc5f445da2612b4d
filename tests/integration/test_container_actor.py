"""A container actor on the local stack (docs/containers.md, docs/local-stack.md "Container actors"):
a flow through a Lambda actor and a container actor succeeds; the container actor's consumers start
from zero when work arrives and go back to zero after the cool-down; a hop longer than its queue's
visibility timeout runs once; a consumer killed mid-hop loses nothing."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from asya import variables
from asya_local.container_counts import service_places, task_counts
from asya_local.endpoint.process import LocalEndpoint
from tests.support.stack import RunningMesh, running

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]

MESH = Path(__file__).resolve().parent / "containers" / "mesh.yaml"
COOLDOWN = 3


@pytest.fixture(scope="module")
def container_mesh(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    cooldown = variables.LOCAL_CONTAINER_COOLDOWN.name
    before = os.environ.get(cooldown)
    os.environ[cooldown] = str(COOLDOWN)
    try:
        with running(endpoint, MESH) as mesh:
            yield mesh
    finally:
        os.environ.pop(cooldown) if before is None else os.environ.update({cooldown: before})


def scalings(mesh: RunningMesh) -> list[str]:
    return [line.split(": ", 1)[1] for line in mesh.lines if line.startswith("long: scaling ")]


def wait_for_scaling(mesh: RunningMesh, line: str, after: int, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while line not in scalings(mesh)[after:]:
        assert time.monotonic() < deadline, f"no {line!r} after {scalings(mesh)[:after]}: {scalings(mesh)}"
        time.sleep(0.2)


def tasks_shown(mesh: RunningMesh) -> str:
    """The container actor's count as the console and `asya queues` read it: its ECS service's."""
    return task_counts(mesh.stack.client("ecs"), service_places(mesh.stack.outputs))["long"].text()


def test_a_flow_through_a_lambda_and_a_container_actor_from_zero_and_back(container_mesh: RunningMesh) -> None:
    assert scalings(container_mesh) == []  # nothing has arrived: no consumer runs
    assert tasks_shown(container_mesh) == "0 (scaled to zero)"
    for round_trip in range(2):  # the second after the first's scale-in: from zero again
        seen = len(scalings(container_mesh))
        task_id = f"through-{uuid.uuid4().hex[:8]}"
        container_mesh.send(["prepare", "long"], {"n": round_trip}, task_id)

        result = container_mesh.result(task_id, timeout=90)

        assert result["outcome"] == "succeeded", container_mesh.errors()
        assert result["envelope"]["payload"] == {"n": round_trip, "prepared": True, "long": True}
        assert result["envelope"]["route"]["prev"] == ["prepare", "long"]
        assert scalings(container_mesh)[seen] == "scaling 0 -> 1 consumers (backlog 1)"
        assert tasks_shown(container_mesh) == "1 of 2 tasks"  # the cool-down (3 s) has not passed yet
        wait_for_scaling(container_mesh, "scaling 1 -> 0 consumers (backlog 0)", seen)
        assert tasks_shown(container_mesh) == "0 (scaled to zero)"


@pytest.mark.timeout(240)
def test_a_hop_longer_than_the_visibility_timeout_runs_once(container_mesh: RunningMesh, tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    task_id = f"long-{uuid.uuid4().hex[:8]}"
    container_mesh.send(["long"], {"sleep": 15, "runs": str(runs)}, task_id)  # the queue's timeout: 10 s
    deadline = time.monotonic() + 60
    while not runs.exists():  # the hop has started
        assert time.monotonic() < deadline, "the hop did not start"
        time.sleep(0.2)
    time.sleep(1)
    protected = container_mesh.stack.protected_tasks()  # its task, through the local agent and the task role

    result = container_mesh.result(task_id, timeout=150)

    assert result["outcome"] == "succeeded", container_mesh.errors()
    assert len(runs.read_text().splitlines()) == 1, "delivered again while its hop ran"
    assert [arn.split("/")[1] for arn in protected] == ["asya-icontainer-containers"], container_mesh.errors()


@pytest.mark.timeout(240)
def test_a_consumer_killed_mid_hop_loses_nothing(container_mesh: RunningMesh, tmp_path: Path) -> None:
    runs, died = tmp_path / "runs", tmp_path / "died"
    task_id = f"killed-{uuid.uuid4().hex[:8]}"
    container_mesh.send(["prepare", "long"], {"runs": str(runs), "die_once": str(died)}, task_id)

    result = container_mesh.result(task_id, timeout=150)  # as its message and claim lapse (10 s visibility)

    assert died.exists(), "the first run's consumer was killed"
    assert result["outcome"] == "succeeded", container_mesh.errors()
    assert len(runs.read_text().splitlines()) == 2  # the killed run and the one after it
    assert [kept["outcome"] for kept in container_mesh.all_results() if kept["envelope"]["id"] == task_id] == [
        "succeeded"
    ]


def test_x_backlog_publishes_the_container_actors_backlog_from_its_schedule(container_mesh: RunningMesh) -> None:
    """The schedule rule runs x-backlog (every few seconds here), as the deployed role allows: it reads
    the container actor's queue and puts its backlog in moto's CloudWatch, without an error line."""
    cloudwatch = container_mesh.stack.client("cloudwatch")
    wanted = [{"Name": "actor", "Value": "long"}, {"Name": "mesh", "Value": "icontainer"}]
    deadline = time.monotonic() + 30
    while True:
        metrics = cloudwatch.list_metrics(Namespace="Asya", MetricName="Backlog")["Metrics"]
        if [m for m in metrics if sorted(m["Dimensions"], key=lambda d: d["Name"]) == wanted]:
            break
        assert time.monotonic() < deadline, f"no Backlog metric for long: {metrics}\n{container_mesh.errors()}"
        time.sleep(0.5)
    ran = [line for line in container_mesh.lines if line.startswith("x-backlog: ")]
    assert ran, container_mesh.lines[-20:]
    assert not [line for line in ran if "ERROR" in line or "Traceback" in line], ran

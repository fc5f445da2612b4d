"""Spark actors on the local stack: envelopes flow Lambda → Spark (a real job in Spark local mode,
started through moto's EMR Serverless API) → Lambda, every one accounted for; the task shows the
Spark actor while its job runs; a job that crashes fails its envelopes through resiliency; and a
flow runs through the three runtimes, Lambda → container → Spark."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asya_local.endpoint.process import LocalEndpoint
from asya_local.stack import LocalStack
from tests.support.stack import deployed

# the module's mesh is deployed once and runs real Spark jobs (a JVM start first): minutes on a busy machine
pytestmark = [pytest.mark.integration, pytest.mark.timeout(600)]

pytest.importorskip("pyspark")

MESH = Path(__file__).resolve().parent / "spark" / "mesh.yaml"
NS = "ispark"


class SparkMesh:
    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.sqs = stack.client("sqs")
        self.s3 = stack.client("s3")
        self.lines: list[str] = []

    def send(self, route: list[str], payload: Any) -> str:
        envelope_id = str(uuid.uuid4())
        body = {"id": envelope_id, "route": {"prev": [], "curr": route[0], "next": route[1:]}, "payload": payload}
        url = self.sqs.get_queue_url(QueueName=f"asya-{NS}-{route[0]}")["QueueUrl"]
        self.sqs.send_message(QueueUrl=url, MessageBody=json.dumps(body))
        return envelope_id

    def results(self, wanted: int | set[str], timeout: float = 120.0) -> list[dict[str, Any]]:
        """Results kept under the namespace, once there are `wanted` of them, or x-sink's result for each
        wanted id (without x-sump's copies)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            found = [
                r
                for r in self._all()
                if isinstance(wanted, int) or (r["envelope"]["id"] in wanted and r["outcome"] != "sump")
            ]
            if len(found) >= (wanted if isinstance(wanted, int) else len(wanted)):
                return found
            time.sleep(0.5)
        raise AssertionError(
            f"{wanted} results expected within {timeout}s; workers said:\n" + "\n".join(self.lines[-60:])
        )

    def _all(self) -> list[dict[str, Any]]:
        return [{"outcome": kept["outcome"], "envelope": kept["envelope"]} for kept in self.stack.kept_results().all()]

    def task(self, task_id: str) -> dict[str, Any]:
        item = self.stack.client("dynamodb").get_item(
            TableName=self.stack.outputs["TasksTable"], Key={"id": {"S": task_id}}
        )
        return {key: next(iter(value.values())) for key, value in item.get("Item", {}).items()}


@pytest.fixture(scope="module")
def spark_mesh(endpoint: LocalEndpoint) -> Iterator[SparkMesh]:
    lines: list[str] = []
    with deployed(endpoint, MESH, lambda source, line: lines.append(f"{source}: {line}")) as stack:
        mesh = SparkMesh(stack)
        mesh.lines = lines
        yield mesh


_SUFFIXES = {1: "st", 2: "nd", 3: "rd"}  # English ordinals, as the job's declared library writes them


def test_a_mixed_pipeline_accounts_for_every_envelope(spark_mesh: SparkMesh) -> None:
    roots = [
        spark_mesh.send(["split", "crunch", "post"], {"numbers": list(range(start, start + 10))})
        for start in (0, 10, 20)
    ]
    everything = spark_mesh.results(31)  # x-sink's 30, and x-sump's copy of the one failure
    results = [r for r in everything if r["outcome"] != "sump"]
    by_n = {_number(r["envelope"]["payload"]): r for r in results}
    assert len(results) == 30
    assert sorted(by_n) == list(range(30))  # each number once: no envelope lost, none duplicated
    assert [_number(r["envelope"]["payload"]) for r in everything if r["outcome"] == "sump"] == [13]
    unlucky = by_n.pop(13)
    assert unlucky["outcome"] == "failed"
    assert unlucky["envelope"]["status"]["actor"] == "crunch"
    assert unlucky["envelope"]["payload"]["details"]["message"] == "13 is unlucky"
    for n, result in by_n.items():
        envelope = result["envelope"]
        assert result["outcome"] == "succeeded", result
        ordinal = f"{n}{_SUFFIXES.get(n % 10, 'th') if n % 100 not in (11, 12, 13) else 'th'}"
        assert envelope["payload"] == {
            "n": n,
            "square": n * n,
            "ordinal": ordinal,
            "label": "even" if n % 2 == 0 else "odd",
        }
        assert envelope["route"]["prev"] == ["split", "crunch", "post"]
    assert {r["envelope"]["id"] for r in results} >= set(roots)  # the first of each fan-out keeps its id
    assert spark_mesh.stack.wait_until_idle(timeout=30)
    assert spark_mesh.stack.open_spark_batches() == 0


def test_the_task_shows_the_spark_actor_while_its_job_runs(spark_mesh: SparkMesh) -> None:
    after_split = spark_mesh.send(["split", "crunch", "post"], {"numbers": [4]})  # one branch keeps the id
    first_hop = spark_mesh.send(["crunch", "post"], {"n": 6})  # no hop before: the dispatcher reports it
    deadline = time.monotonic() + 60
    # statuses only move forward, so seeing both at crunch shows them there during the Spark stage
    while not all(spark_mesh.task(t).get("actor") == "crunch" for t in (after_split, first_hop)):
        assert time.monotonic() < deadline, (
            f"not shown at crunch: {[spark_mesh.task(t) for t in (after_split, first_hop)]}"
        )
        time.sleep(0.05)
    assert [spark_mesh.task(t)["status"] for t in (after_split, first_hop)] == ["running", "running"]
    results = spark_mesh.results({after_split, first_hop})
    assert [r["outcome"] for r in results] == ["succeeded", "succeeded"]
    assert spark_mesh.task(after_split)["status"] == "succeeded"


def test_a_job_that_crashes_fails_its_envelopes_through_resiliency(spark_mesh: SparkMesh) -> None:
    ids = {spark_mesh.send(["crash", "post"], {"n": n}) for n in (1, 2)}
    results = spark_mesh.results(ids)
    assert [r["outcome"] for r in results] == ["failed", "failed"]
    for result in results:
        details = result["envelope"]["payload"]["details"]
        assert details["type"] == "SparkJobError"
        assert " ended FAILED" in details["message"]
        assert result["envelope"]["status"]["actor"] == "crash"
    assert spark_mesh.stack.wait_until_idle(timeout=30)


def test_a_flow_runs_through_a_lambda_a_container_and_a_spark_actor(spark_mesh: SparkMesh) -> None:
    """Issue 48's done-when: a task created through the gateway passes a Lambda actor, a container
    actor (its consumer started from zero by the local scaler) and a Spark job, and ends with their
    three contributions in its output."""
    task = spark_mesh.stack.gateway_client().run_task({"flow": "runtimes", "payload": {"n": 4}}, 240)
    assert task["status"] == "succeeded", (task, spark_mesh.lines[-40:])
    assert task["output"] == {"n": 4, "label": "even", "boxed": True, "square": 16, "ordinal": "4th"}
    assert spark_mesh.stack.wait_until_idle(timeout=30)


def _number(payload: dict[str, Any]) -> int:
    """The number an envelope carries, in a result or in a failure's original payload."""
    return int(payload["n"] if "n" in payload else payload["original_payload"]["n"])

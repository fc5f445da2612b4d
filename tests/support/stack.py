"""What the integration tests drive the local stack with: a mesh file deployed into the session's
endpoint (`deployed`, `running`) and `RunningMesh`, which sends envelopes and waits for results."""

from __future__ import annotations

import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from asya_cdk.loading import load_mesh
from asya_cdk.plan import STACK_BUDGET
from asya_local.endpoint.process import LocalEndpoint
from asya_local.functions.faults import FaultSpec
from asya_local.gateway_client import GatewayClient
from asya_local.stack import LocalStack

ACCESS_LOG = re.compile(r"gateway: [A-Z]+ /")
METRICS = '{"_aws":'  # an embedded-metric-format line
MESH = Path(__file__).resolve().parents[1] / "integration" / "mesh" / "mesh.yaml"


class RunningMesh:
    def __init__(self, stack: LocalStack) -> None:
        self.stack = stack
        self.sqs = stack.client("sqs")
        self.s3 = stack.client("s3")
        self.batches: Counter[str] = Counter()  # envelopes each actor's workers took in
        self.lines: list[str] = []  # everything the workers printed, for failure messages
        self.taps: list[Callable[[str], object]] = []  # more readers of the lines (a console's activity)

    def on_line(self, source: str, line: str) -> None:
        self.lines.append(f"{source}: {line}")
        head = line.split(" in, ", 1)[0]
        if head.isdigit():
            self.batches[source] += int(head)
        for tap in self.taps:
            tap(line)

    def errors(self) -> str:
        """What workers printed apart from their batch lines, metric lines and the gateway's access log:
        tracebacks and error logs."""
        shown = [line for line in self.lines if " in, " not in line and not ACCESS_LOG.match(line)]
        return "\n".join(line for line in shown if METRICS not in line)[-4000:]

    def gateway(self) -> GatewayClient:
        """A client of the mesh's status gateway, as a user's program would create and follow tasks."""
        return self.stack.gateway_client()

    def queue_url(self, actor: str) -> str:
        return str(self.sqs.get_queue_url(QueueName=f"asya-{self.stack.namespace}-{actor}")["QueueUrl"])

    def send(self, route: list[str], payload: Any, envelope_id: str) -> None:
        body = {"id": envelope_id, "route": {"prev": [], "curr": route[0], "next": route[1:]}, "payload": payload}
        self.sqs.send_message(QueueUrl=self.queue_url(route[0]), MessageBody=json.dumps(body))

    def result(self, envelope_id: str, timeout: float = 30.0) -> dict[str, Any]:
        """The first object kept for this envelope id, as `{"outcome": ..., "envelope": ...}`."""
        found = self.results_for([envelope_id], timeout)
        return found[envelope_id]

    def results_for(self, ids: list[str], timeout: float = 60.0) -> dict[str, dict[str, Any]]:
        wanted = set(ids)
        found: dict[str, dict[str, Any]] = {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for kept in self._final():
                if kept["id"] in wanted and kept["id"] not in found:
                    found[kept["id"]] = {"outcome": kept["outcome"], "envelope": kept["envelope"]}
            if len(found) == len(wanted):
                return found
            time.sleep(0.3)
        missing = sorted(wanted - set(found))
        raise AssertionError(f"{len(missing)} envelope(s) without a result after {timeout}s: {missing[:5]}")

    def record(self, task_id: str) -> dict[str, Any]:
        """The task's record as DynamoDB keeps it, bookkeeping included (what the gateway's view leaves
        out), each attribute's value without its type."""
        item = self.stack.client("dynamodb").get_item(
            TableName=self.stack.outputs["TasksTable"], Key={"id": {"S": task_id}}
        )
        return {key: next(iter(value.values())) for key, value in item.get("Item", {}).items()}

    def all_results(self) -> list[dict[str, Any]]:
        return [{"outcome": kept["outcome"], "envelope": kept["envelope"]} for kept in self._final()]

    def _final(self) -> list[dict[str, Any]]:
        """Every final result, in S3 or in a task record; x-pause's `pause.json` and x-sink's
        `paused.json` are not (the task goes on)."""
        return [kept for kept in self.stack.kept_results().all() if kept["outcome"] not in ("pause", "paused")]


@contextmanager
def deployed(
    endpoint: LocalEndpoint,
    mesh: Path,
    on_line: Callable[[str, str], None],
    stack_budget: int = STACK_BUDGET,
    faults: FaultSpec | None = None,
    *,
    browser_origins: tuple[str, ...] = (),
) -> Iterator[LocalStack]:
    """A mesh file's stack in the session's endpoint, its workers running until the block ends; its
    gateway allows `browser_origins` besides the mesh's own (`LocalStack.browser_origins`)."""
    stack = LocalStack(
        load_mesh(mesh), port=endpoint.port, on_line=on_line, faults=faults, browser_origins=browser_origins
    )
    try:
        stack.deploy(stack.synthesize(stack_budget))
        stack.start_workers()
        yield stack
    finally:
        stack.stop()


@contextmanager
def running(endpoint: LocalEndpoint, mesh: Path) -> Iterator[RunningMesh]:
    """A mesh file's stack deployed and running, every worker's line recorded from the first."""
    holder: list[RunningMesh] = []
    with deployed(endpoint, mesh, lambda s, line: holder[0].on_line(s, line) if holder else None) as stack:
        holder.append(RunningMesh(stack))
        yield holder[0]

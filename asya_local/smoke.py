"""`asya smoke --stack NAME`: one task per flow through a deployed mesh, checked end to end.

Everything is found from the stack (`asya_local.discovery`: the gateway, the results bucket and how
the gateway is protected, from the stack's CloudFormation outputs); the gateway's MCP `tools/list` gives
the flows, each with its input schema, whose first `examples` entry is the payload sent. For each flow:

1. create a task (`POST /api/v1/mesh`) and poll it (`GET /api/v1/mesh/{id}`) until it is terminal or
   `timeout` has passed (then it is canceled); polling, not the event stream, so that every flow's
   deadline holds to the second and no gateway execution is held open per flow;
2. check that it succeeded, that its event stream ends with the same status, and that every result
   the task and its fan-out branches point at is in the bucket, kept for that envelope with that
   outcome;
3. delete what the task left under `results/<ns>/<id>/` for the task and each branch. The task records
   stay in the tasks table until `gateway.task_ttl_days` expires them; logs and metrics stay too.

The same command runs against a local stack, found as `asya_local.discovery` says.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from botocore.exceptions import BotoCoreError, ClientError
from rich.table import Table
from rich.text import Text

from asya.live import STATUS
from asya.results import result_prefix
from asya.root_result import OWN_ENVELOPE
from asya_local.discovery import DeployedMesh
from asya_local.gateway_client import GatewayError, GatewayUnreachableError

DEFAULT_TIMEOUT_SECONDS = 900.0  # a Spark flow on AWS: an EMR Serverless job per Spark actor, minutes each
POLL_SECONDS = 1.0
PASS, FAIL, SKIP = "pass", "fail", "skip"


class SmokeError(RuntimeError):
    """A flow named on the command line does not exist."""


@dataclass
class FlowRun:
    """One flow's smoke task, as the report shows it."""

    flow: str
    payload: Any = None
    task_id: str = ""
    status: str = ""
    accepted_at: float = 0.0
    terminal_seconds: float | None = None  # accepted → terminal status seen
    result_seconds: float | None = None  # accepted → every result read from S3
    results: int = 0  # results checked (S3 objects, or results held by task records)
    removed: int = 0  # objects deleted afterwards
    outcome: str = ""
    reason: str = ""

    def fail(self, reason: str) -> None:
        self.outcome, self.reason = FAIL, reason


def plan(mesh: DeployedMesh, only: Iterable[str] = ()) -> list[FlowRun]:
    """One run per flow the gateway lists (or per flow in `only`), with its schema's first example."""
    tools = {str(tool["name"]): tool.get("inputSchema", {}) for tool in mesh.gateway.flows()}
    wanted = list(only) or sorted(tools)
    unknown = [name for name in wanted if name not in tools]
    if unknown:
        raise SmokeError(f"no flow {', '.join(unknown)} in {mesh.stack} (flows: {', '.join(tools) or 'none'})")
    runs = []
    for name in wanted:
        examples = tools[name].get("examples") or []
        run = FlowRun(name, payload=examples[0] if examples else None)
        if not examples:
            run.outcome = SKIP
            run.reason = f"no example input: add `examples` to flows.{name}.input_schema in the mesh file"
        runs.append(run)
    return runs


def run(
    mesh: DeployedMesh,
    runs: list[FlowRun],
    *,
    timeout: float = DEFAULT_TIMEOUT_SECONDS,
    poll: float = POLL_SECONDS,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], None] = time.sleep,
    on_change: Callable[[], None] = lambda: None,
) -> list[FlowRun]:
    """Start every flow's task at once, then follow them all to the end; each run gets its outcome."""
    pending = []
    for flow in runs:
        if flow.outcome == SKIP:
            continue
        try:
            flow.task_id = str(mesh.gateway.create_task({"flow": flow.flow, "payload": flow.payload})["id"])
        except (GatewayError, GatewayUnreachableError) as exc:
            flow.fail(f"not created: {exc}")
            continue
        flow.accepted_at, flow.status = clock(), "pending"
        pending.append(flow)
    on_change()
    while pending:
        for flow in list(pending):
            try:
                if _advance(mesh, flow, timeout, clock):
                    pending.remove(flow)
            except (GatewayError, GatewayUnreachableError, BotoCoreError, ClientError) as exc:
                flow.fail(str(exc))
                pending.remove(flow)
            on_change()
        if pending:
            sleep(poll)
    return runs


def _advance(mesh: DeployedMesh, flow: FlowRun, timeout: float, clock: Callable[[], float]) -> bool:
    """One look at a flow's task; True once the flow has its outcome (and its results are removed)."""
    task = mesh.gateway.task(flow.task_id) or {}
    flow.status = str(task.get("status", "unknown"))
    if task.get("terminal"):
        flow.terminal_seconds = clock() - flow.accepted_at
        ids = [flow.task_id, *task.get("branch_ids", [])]
        try:
            _check(mesh, flow, task, ids)
            if flow.outcome == PASS:
                flow.result_seconds = clock() - flow.accepted_at
        finally:
            flow.removed = _remove_results(mesh, ids)
        return True
    if clock() - flow.accepted_at < timeout:
        return False
    where = f" at {task['actor']}" if task.get("actor") else ""
    mesh.gateway.cancel(flow.task_id)
    flow.fail(f"not finished within {timeout:g} s ({flow.status}{where}); canceled")
    flow.removed = _remove_results(mesh, [flow.task_id, *task.get("branch_ids", [])])
    return True


def _check(mesh: DeployedMesh, flow: FlowRun, task: dict[str, Any], ids: list[str]) -> None:
    """Succeeded, told the same by the event stream, and every result where the task records say."""
    if flow.status != "succeeded":
        error = task.get("error") or {}
        flow.fail(f"{flow.status}: {task.get('reason') or ''} {error.get('message') or ''}".strip())
        return
    events = [data for kind, data in mesh.gateway.follow(flow.task_id) if kind == STATUS]
    if not events or events[-1].get("status") != flow.status:
        flow.fail(f"the event stream ends with {events[-1].get('status') if events else 'nothing'}")
        return
    records = [task, *(mesh.gateway.task(branch) or {"id": branch} for branch in ids[1:])]
    for record in records:
        ending = {**record, **(record.get(OWN_ENVELOPE) or {})}  # a fan-out root's own envelope's, set apart
        problem = _result_problem(mesh, ending)
        if problem:
            flow.fail(problem)
            return
        flow.results += 1 if ending.get("result") or "output" in ending else 0  # in S3, or in the record
    if flow.results == 0:
        flow.fail("no result recorded for the task or any branch")
        return
    flow.outcome = PASS


def _result_problem(mesh: DeployedMesh, record: dict[str, Any]) -> str:
    """What is wrong with the result a task record points at ("" if it is there, as recorded)."""
    location = record.get("result")
    if not location:
        return ""
    prefix = f"s3://{mesh.bucket}/"
    if not location.startswith(prefix):
        return f"task {record['id']}: result {location} is outside the results bucket {mesh.bucket}"
    key = location.removeprefix(prefix)
    outcome = key.rsplit("/", 1)[-1].removesuffix(".json")
    try:
        kept = mesh.s3.get_object(Bucket=mesh.bucket, Key=key)["Body"].read()
    except ClientError as exc:
        return f"task {record['id']}: result {location} not readable: {exc.response['Error'].get('Code')}"
    envelope_id = json.loads(kept).get("id")
    if envelope_id != record["id"] or outcome != record.get("status"):
        return f"task {record['id']} ({record.get('status')}): {location} holds {outcome} of {envelope_id}"
    return ""


def _remove_results(mesh: DeployedMesh, ids: list[str]) -> int:
    """Delete everything kept under `results/<ns>/<id>/` for these envelopes; how many objects went."""
    removed = 0
    for envelope_id in ids:
        pages = mesh.s3.get_paginator("list_objects_v2").paginate(
            Bucket=mesh.bucket, Prefix=result_prefix(mesh.namespace, envelope_id)
        )
        keys = [{"Key": item["Key"]} for page in pages for item in page.get("Contents", [])]
        if keys:
            mesh.s3.delete_objects(Bucket=mesh.bucket, Delete={"Objects": keys, "Quiet": True})
            removed += len(keys)
    return removed


def exit_code(runs: list[FlowRun], allow_skip: bool = False) -> int:
    """0 only if every flow passed (or was skipped for want of an example, with `allow_skip`)."""
    accepted = {PASS, SKIP} if allow_skip else {PASS}
    return 0 if runs and all(flow.outcome in accepted for flow in runs) else 1


OUTCOME_STYLES = {PASS: "green", FAIL: "red", SKIP: "yellow", "": "dim"}


def report(mesh: DeployedMesh, runs: list[FlowRun]) -> Table:
    table = Table(title=f"smoke test of {mesh.stack}", title_justify="left")
    for column in ("flow", "task", "status", "terminal s", "results s", "results", "outcome", "reason"):
        table.add_column(column, justify="right" if column in ("terminal s", "results s") else "left")
    for flow in runs:
        table.add_row(
            flow.flow,
            flow.task_id[:8],
            flow.status,
            _seconds(flow.terminal_seconds),
            _seconds(flow.result_seconds),
            f"{flow.results} ({flow.removed} removed)" if flow.task_id else "",
            Text(flow.outcome or "running", style=OUTCOME_STYLES.get(flow.outcome, "")),
            flow.reason,
        )
    return table


def _seconds(value: float | None) -> str:
    return f"{value:.1f}" if value is not None else ""

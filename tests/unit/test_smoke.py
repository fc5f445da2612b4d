"""`asya smoke`: requests signed for an IAM-protected gateway, and the report and exit code when a flow
fails, times out or has no example (a scripted gateway, moto's S3). How the mesh is found from its
stack's outputs, for every auth mode, is `test_discovery.py`'s."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import boto3
import httpx2
import pytest
from botocore.credentials import Credentials
from moto import mock_aws
from rich.console import Console

from asya_local import smoke
from asya_local.discovery import DeployedMesh
from asya_local.gateway_client import GatewayClient, IamAuth

BUCKET = "results-bucket"
NS = "t"
API_URL = "https://abc123.execute-api.eu-west-1.amazonaws.com/api/"  # the stage is `api`


def signed(request_body: dict[str, Any]) -> httpx2.Request:
    seen: list[httpx2.Request] = []

    def server(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(201, json={"id": "t-1"})

    auth = IamAuth(Credentials("AKIDEXAMPLE", "secret", "session-token"), "eu-west-1")
    GatewayClient(API_URL, auth=auth, transport=httpx2.MockTransport(server)).create_task(request_body)
    return seen[0]


def test_an_iam_gateway_gets_sigv4_signed_requests_for_execute_api_under_the_stage() -> None:
    request = signed({"flow": "f", "payload": {"n": 1}})
    authorization = request.headers["Authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 Credential=AKIDEXAMPLE/")
    assert "/eu-west-1/execute-api/aws4_request" in authorization
    assert "SignedHeaders=content-type;host;x-amz-date;x-amz-security-token" in authorization
    assert request.headers["X-Amz-Security-Token"] == "session-token"
    assert request.headers["X-Amz-Date"]
    assert "x-api-key" not in request.headers
    assert request.url.path == "/api/api/v1/mesh", "under the stage"


def test_the_signature_covers_the_body() -> None:
    first = signed({"flow": "f", "payload": {"n": 1}}).headers["Authorization"]
    second = signed({"flow": "f", "payload": {"n": 2}}).headers["Authorization"]
    assert first.split("Signature=")[1] != second.split("Signature=")[1]


class Gateway:
    """A gateway whose tasks end as scripted: `ok` succeeds with two results (the root and a fan-out
    branch), `broken` fails, `stuck` never ends; `bare` has no example input."""

    def __init__(self, s3: Any) -> None:
        self.s3 = s3
        self.tasks: dict[str, dict[str, Any]] = {}
        self.canceled: list[str] = []

    def tool(self, name: str, examples: list[Any]) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "object", **({"examples": examples} if examples else {})}
        return {"name": name, "inputSchema": schema}

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        path = request.url.path
        if path == "/mcp":
            tools = [self.tool("ok", [{"n": 1}]), self.tool("broken", [{"n": 2}]), self.tool("stuck", [{}])]
            gateways_own = self.tool("sump_list", [{}])  # not a flow: smoke never runs it
            return httpx2.Response(200, json={"result": {"tools": [*tools, self.tool("bare", []), gateways_own]}})
        if path == "/api/v1/mesh":
            return httpx2.Response(201, json={"id": self._start(json.loads(request.content)["flow"])})
        task_id = path.split("/")[4]
        if request.method == "DELETE":
            self.canceled.append(task_id)
            return httpx2.Response(200, json={"id": task_id, "status": "canceled"})
        if path.endswith("/events"):
            body = f"event: status\ndata: {json.dumps(self.tasks[task_id])}\n\n"
            return httpx2.Response(200, headers={"Content-Type": "text/event-stream"}, text=body)
        return httpx2.Response(200, json=self.tasks[task_id])

    def _start(self, flow: str) -> str:
        task_id = f"{flow}-1"
        if flow == "stuck":
            self.tasks[task_id] = {"id": task_id, "status": "running", "actor": "slow", "terminal": False}
            return task_id
        status = "succeeded" if flow == "ok" else "failed"
        branches = [f"{flow}-2"] if flow == "ok" else []
        for envelope_id in [task_id, *branches]:
            key = f"results/{NS}/{envelope_id}/{status}.json"
            self.s3.put_object(Bucket=BUCKET, Key=key, Body=json.dumps({"id": envelope_id}))
            self.tasks[envelope_id] = {"id": envelope_id, "status": status, "terminal": True}
            self.tasks[envelope_id]["result"] = f"s3://{BUCKET}/{key}"
        self.tasks[task_id] |= {"branch_ids": branches, "reason": None if flow == "ok" else "HandlerError"}
        if flow == "broken":
            self.tasks[task_id]["error"] = {"message": "boom in score"}
        return task_id


@pytest.fixture
def scripted() -> Iterator[tuple[DeployedMesh, Gateway]]:
    with mock_aws():
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket=BUCKET)
        gateway = Gateway(s3)
        client = GatewayClient("http://gateway", "key", transport=httpx2.MockTransport(gateway))
        yield DeployedMesh("asya-t", "a test", client, s3, BUCKET, NS), gateway


def test_a_failing_flow_a_stuck_one_and_one_without_an_example_fail_the_run(
    scripted: tuple[DeployedMesh, Gateway],
) -> None:
    mesh, gateway = scripted
    now = [0.0]
    runs = smoke.run(
        mesh, smoke.plan(mesh), timeout=60, clock=lambda: now[0], sleep=lambda s: now.__setitem__(0, now[0] + s)
    )
    by_flow = {flow.flow: flow for flow in runs}
    assert {name: flow.outcome for name, flow in by_flow.items()} == {
        "bare": "skip",
        "broken": "fail",
        "ok": "pass",
        "stuck": "fail",
    }
    assert (by_flow["ok"].results, by_flow["ok"].removed) == (2, 2)
    assert by_flow["broken"].reason == "failed: HandlerError boom in score"
    assert by_flow["broken"].removed == 1, "a failed task's result is removed too"
    assert by_flow["stuck"].reason == "not finished within 60 s (running at slow); canceled"
    assert gateway.canceled == ["stuck-1"]
    assert "flows.bare.input_schema" in by_flow["bare"].reason
    assert mesh.s3.list_objects_v2(Bucket=BUCKET).get("KeyCount") == 0, "every result it created is gone"
    assert smoke.exit_code(runs) == 1
    assert smoke.exit_code(runs, allow_skip=True) == 1, "a failed flow fails the run even when skips are allowed"
    assert smoke.exit_code([by_flow["ok"], by_flow["bare"]], allow_skip=True) == 0
    assert smoke.exit_code([by_flow["ok"], by_flow["bare"]]) == 1

    console = Console(width=200, record=True)
    console.print(smoke.report(mesh, runs))
    lines = {line.split("│")[1].strip(): line for line in console.export_text().splitlines() if "│" in line}
    assert "fail" in lines["broken"]
    assert "boom in score" in lines["broken"]
    assert "pass" in lines["ok"]
    assert "2 (2 removed)" in lines["ok"]


def test_a_result_the_task_points_at_but_s3_lacks_fails_the_flow(scripted: tuple[DeployedMesh, Gateway]) -> None:
    mesh, _gateway = scripted
    runs = smoke.plan(mesh, ["ok"])
    original = mesh.s3.get_object

    def missing_branch(**kwargs: Any) -> Any:
        if "ok-2" in kwargs["Key"]:
            mesh.s3.delete_object(**kwargs)
        return original(**kwargs)

    mesh.s3.get_object = missing_branch
    smoke.run(mesh, runs, sleep=lambda _s: None)
    assert runs[0].outcome == "fail"
    assert runs[0].reason == f"task ok-2: result s3://{BUCKET}/results/{NS}/ok-2/succeeded.json not readable: NoSuchKey"


def test_an_unknown_flow_on_the_command_line_is_refused(scripted: tuple[DeployedMesh, Gateway]) -> None:
    mesh, _gateway = scripted
    with pytest.raises(smoke.SmokeError, match="no flow nope in asya-t"):
        smoke.plan(mesh, ["nope"])

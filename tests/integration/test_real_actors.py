"""Actors as users write them, on the local stack, failing where Lambda would fail them.

`tests/integration/real/mesh.yaml`: an actor importing a library it did not declare (its envelope
fails at once with the import error; `tests/unit/test_local_init.py` sees it said at the start), the
same actor with the library declared, and as a container image; files on disk before the handler's
class is created;
a Secrets Manager secret and an SSM parameter in the handler's environment and nowhere else; a grant on
a bucket of the user's, and the same handler without it (AccessDenied).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from asya_cdk.loading import load_mesh
from asya_local.deploy import synthesize
from asya_local.endpoint.process import LocalEndpoint
from asya_local.gateway_client import GatewayClient
from tests.support.stack import RunningMesh, running

MESH = Path(__file__).resolve().parent / "real" / "mesh.yaml"
SECRETS = {
    "real-tests/signing-key": "k3y-only-the-signer-knows-9f2c",
    "/real-tests/db-password": "pa55-only-the-signer-knows-77ab",
}

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def real(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    with running(endpoint, MESH) as mesh:
        yield mesh


def _sent(real: RunningMesh, actor: str, payload: dict[str, Any]) -> dict[str, Any]:
    envelope_id = f"{actor}-{uuid.uuid4().hex[:8]}"
    real.send([actor], payload, envelope_id)
    return real.result(envelope_id, timeout=90)


def test_an_undeclared_import_fails_the_envelope_at_once_naming_the_library(
    real: RunningMesh,
) -> None:
    kept = _sent(real, "undeclared", {"n": 1})
    assert kept["outcome"] in ("failed", "sump"), real.errors()  # x-sink keeps a failure and hands it to x-sump
    error = kept["envelope"]["status"]["error"]
    assert error["type"] == "HandlerImportError"
    assert error["message"].startswith("undeclared cannot load its handler: importing 'with_yaml' failed: ")
    assert "No module named 'yaml'" in error["message"]
    said = [line.removeprefix("undeclared: ") for line in real.lines if line.startswith("undeclared: ")]
    assert not any(line.startswith("redelivered message") for line in said), "failed once, not retried by SQS"


def test_the_same_actor_with_its_library_declared_runs_zip_and_image(real: RunningMesh) -> None:
    for actor in ("declared", "imaged"):
        kept = _sent(real, actor, {"b": 2, "a": 1})
        assert kept["outcome"] == "succeeded", real.errors()
        assert kept["envelope"]["payload"] == {"yaml": "a: 1\nb: 2\n"}


def test_files_are_on_disk_before_the_class_is_created(real: RunningMesh) -> None:
    kept = _sent(real, "loader", {"n": 3})
    assert kept["outcome"] == "succeeded", real.errors()
    assert kept["envelope"]["payload"] == {"n": 3, "weight_sum": 4.0, "words": ["alpha", "beta", "gamma"]}


def test_a_grant_on_the_users_bucket_is_needed_to_read_it(real: RunningMesh) -> None:
    allowed = _sent(real, "reader", {"key": "labels/colours.json"})
    assert allowed["outcome"] == "succeeded", real.errors()
    assert allowed["envelope"]["payload"]["content"] == {"red": "#ff0000", "green": "#00ff00"}
    denied = _sent(real, "trespasser", {"key": "labels/colours.json"})
    assert denied["outcome"] in ("failed", "sump")  # x-sink keeps a failure and hands it to x-sump
    assert denied["envelope"]["status"]["error"]["type"] == "AccessDenied"


def test_secrets_reach_the_handler_and_nothing_else(real: RunningMesh, tmp_path: Path) -> None:
    gateway = GatewayClient(real.stack.gateway_url or "", real.stack.api_key)
    payload = {"order": "o-1", "total": 12.5}
    task = gateway.run_task({"flow": "signer", "payload": payload}, 60)
    assert task["status"] == "succeeded", real.errors()
    output = task["output"]
    body = json.dumps(payload, sort_keys=True).encode()
    key = SECRETS["real-tests/signing-key"].encode()
    assert output["signature"] == hmac.new(key, body, hashlib.sha256).hexdigest()
    assert output["password_sha256"] == hashlib.sha256(SECRETS["/real-tests/db-password"].encode()).hexdigest()
    # the values are in the handler's environment only: not in a log line, the task record, the results,
    # the function's configuration or the template
    record = real.stack.client("dynamodb").get_item(
        TableName=real.stack.outputs["TasksTable"], Key={"id": {"S": task["id"]}}
    )["Item"]
    function = real.stack.client("lambda").get_function_configuration(FunctionName="asya-real-signer")
    synthesized = synthesize(load_mesh(MESH), tmp_path / "cdk.out")
    places = {
        "worker log": "\n".join(real.lines),
        "task record": json.dumps(record),
        "results": json.dumps(real.all_results()),
        "function configuration": json.dumps(function, default=str),
        "template": json.dumps(synthesized.templates),
    }
    for value in SECRETS.values():
        for where, text in places.items():
            assert value not in text, f"a secret's value is in the {where}"
    assert "secretsmanager:real-tests/signing-key" in places["function configuration"]


def test_an_actor_with_warm_capacity_a_vpc_and_layers_deploys_and_runs(real: RunningMesh) -> None:
    """Its event source targets a `live` alias on AWS, which moto's CloudFormation does not know: the
    local deploy points it at the function (`asya_local.deploy.without_aliases`)."""
    kept = _sent(real, "warm", {"n": 7})
    assert kept["outcome"] == "succeeded", real.errors()
    assert kept["envelope"]["payload"] == {"n": 7}


def test_a_result_larger_than_a_lambda_answer_comes_back_as_a_link(real: RunningMesh) -> None:
    """8 MB: over what the gateway's function may answer with (6 MB), so the wait answers with a
    presigned link to the kept result, not a 502."""
    import httpx2

    task = GatewayClient(real.stack.gateway_url or "", real.stack.api_key).run_task(
        {"flow": "grow", "payload": {"bytes": 8_000_000}}, 60
    )
    assert task["status"] == "succeeded", real.errors()
    assert "output" not in task
    kept = httpx2.get(task["output_url"], timeout=30)
    assert kept.status_code == 200, (task["output_url"], kept.text[:2000])
    assert json.loads(kept.content)["payload"] == {"blob": "g" * 8_000_000}

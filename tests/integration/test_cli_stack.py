"""The task commands against a mesh reached the way a deployed one is: `--stack` finds it from its
CloudFormation outputs in the endpoint `AWS_ENDPOINT_URL` names, the requests are signed with SigV4 from
the caller's credentials (the local administrator's key), and the local gateway checks them as API
Gateway's IAM authorization would. What they print is what the same commands print on the local stack."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import httpx2
import pytest
from botocore.credentials import Credentials

from asya_local import admin_key, cli, local_state
from asya_local.console.deployed import deployed_console
from asya_local.console.server import serve
from asya_local.discovery import discover
from asya_local.functions.iam_auth import MISMATCH
from asya_local.functions.lambda_shapes import REGION
from asya_local.gateway_client import IamAuth
from tests.support.stack import MESH, RunningMesh

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
STACK = "asya-itest"


def test_the_task_commands_and_the_console_through_the_aws_path_show_what_they_show_locally(
    running_mesh: RunningMesh, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    stack = running_mesh.stack
    recorded = tmp_path / "local.json"
    monkeypatch.setenv("ASYA_LOCAL_STATE", str(recorded))
    local_state.write_state(stack, MESH)  # what `asya up` records, for the local commands
    for name, value in admin_key.credentials(stack.endpoint).items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)

    def local(*argv: str) -> tuple[int, str]:
        monkeypatch.setenv("ASYA_LOCAL_STATE", str(recorded))
        monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
        return cli.main(list(argv)), capsys.readouterr().out

    def the_aws_way() -> None:
        monkeypatch.setenv("ASYA_LOCAL_STATE", str(tmp_path / "no-local-stack.json"))
        monkeypatch.setenv("AWS_ENDPOINT_URL", stack.endpoint)

    def deployed(*argv: str) -> tuple[int, str]:
        the_aws_way()
        return cli.main([*argv, "--stack", STACK]), capsys.readouterr().out

    since = dt.datetime.now(dt.UTC).replace(microsecond=0) - dt.timedelta(seconds=1)
    code, printed = deployed("send", '{"n": 4}', "--flow", "pipeline")
    assert code == 0, printed + running_mesh.errors()
    task_id = printed.strip()
    code, watched = deployed("watch", task_id)
    assert code == 0, watched + running_mesh.errors()
    assert "succeeded" in watched

    shown = {}
    # Listings from the moment this test began: the signer sees its own tasks, the key's holder every
    # one, and the session's other tests create tasks too. A query with `:` in it, signed.
    after = since.isoformat().replace("+00:00", "Z")
    listing = ("tasks", "--flow", "pipeline", "--since", after)
    for command in (("status", task_id), ("results", task_id), listing, ("sump", "list", "--since", after)):
        code, shown[command[0]] = deployed(*command)
        assert code == 0, shown[command[0]]
        assert (0, shown[command[0]]) == local(*command), command
    assert '"label": "even"' in shown["results"]
    assert task_id[:8] in shown["status"]
    assert task_id[:8] in shown["tasks"], "by its short id"
    code, depths = deployed("queues")  # read from SQS with the caller's credentials, not through the gateway
    assert code == 0, depths
    assert "asya-itest-prep" in depths

    the_aws_way()
    served = serve(deployed_console(discover(STACK)))  # `asya console --stack`, still the AWS way
    try:
        assert "Mesh itest" in httpx2.get(served.opening_url, timeout=30).text
        page = httpx2.get(f"{served.url}/tasks/{task_id}?token={served.token}", timeout=30)
        assert (page.status_code, "succeeded" in page.text) == (200, True), page.text[-2000:]
    finally:
        served.stop()


def test_the_local_gateway_knows_the_keys_the_endpoint_issues_and_refuses_a_wrong_secret(
    running_mesh: RunningMesh,
) -> None:
    """A user's key made with IAM on the endpoint after the stack started signs for that user at once;
    the same key with a wrong secret gets API Gateway's 403 (the gateway asks the endpoint who holds a
    key). The local gateway checks no `execute-api:Invoke` grant: the user needs none here."""
    stack = running_mesh.stack
    stack.client("iam").create_user(UserName="cli-stack-caller")
    key = stack.client("iam").create_access_key(UserName="cli-stack-caller")["AccessKey"]
    right = Credentials(key["AccessKeyId"], key["SecretAccessKey"])
    wrong = Credentials(key["AccessKeyId"], "not-the-secret")
    with httpx2.Client(base_url=stack.gateway_url or "", trust_env=False, timeout=20) as client:
        assert client.get("/api/v1/mesh", auth=IamAuth(right, REGION)).status_code == 200
        refused = client.get("/api/v1/mesh", auth=IamAuth(wrong, REGION))
        assert (refused.status_code, refused.json()) == (403, {"message": MISMATCH})

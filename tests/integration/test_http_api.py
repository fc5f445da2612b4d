"""A mesh behind an HTTP API (`gateway.api: http`) on the local stack: the stack serves the function
the HTTP API integrates (moto makes no HTTP API), a SigV4 caller creates a task and gets its result,
owns it, and finds the gateway from the stack's outputs; the A2A agent card is read without
credentials, as the HTTP API's open `GET /.well-known/{proxy+}` route lets it be."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest
from botocore.credentials import Credentials

from asya_local import admin_key
from asya_local.endpoint.moto_iam import ADMIN_USER
from asya_local.endpoint.process import LocalEndpoint
from asya_local.functions.lambda_shapes import ACCOUNT, REGION
from asya_local.gateway_client import IamAuth
from asya_local.roles import local_client
from tests.support.stack import RunningMesh, running

pytestmark = [pytest.mark.integration, pytest.mark.timeout(300)]
MESH = Path(__file__).resolve().parent / "mesh" / "http.yaml"


def _admin(endpoint: str) -> Credentials:
    """The endpoint's administrator, as a signer of the gateway's requests."""
    given = admin_key.credentials(endpoint)
    return Credentials(given["AWS_ACCESS_KEY_ID"], given["AWS_SECRET_ACCESS_KEY"])


@pytest.fixture(scope="module")
def behind_http_api(endpoint: LocalEndpoint) -> Iterator[RunningMesh]:
    with running(endpoint, MESH) as mesh:
        yield mesh


def test_a_signed_caller_runs_a_task_through_the_http_api_and_owns_it(behind_http_api: RunningMesh) -> None:
    stack = behind_http_api.stack
    described = local_client("cloudformation", stack.endpoint).describe_stacks(StackName="asya-ithttp")
    outputs = {output["OutputKey"]: output["OutputValue"] for output in described["Stacks"][0]["Outputs"]}
    assert outputs["GatewayAuth"] == "iam"
    assert stack.gateway_url is not None
    assert outputs["ApiUrl"].rstrip("/") == stack.gateway_url.rstrip("/"), "the outputs lead to the gateway"
    with httpx2.Client(base_url=outputs["ApiUrl"], timeout=40, trust_env=False) as http:
        assert http.get("api/v1/mesh").status_code == 403, "unsigned: API Gateway's refusal"
        created = http.post(
            "api/v1/mesh",
            params={"wait": 20},
            json={"flow": "pipeline", "payload": {"n": 5}},
            auth=IamAuth(_admin(stack.endpoint), REGION),
        )
        assert created.status_code == 200, created.text + behind_http_api.errors()
        task = created.json()["task"]
        assert (task["status"], task["output"]["label"]) == ("succeeded", "odd")
        assert task["owner"] == f"iam:arn:aws:iam::{ACCOUNT}:user/{ADMIN_USER}"
        card = http.get(".well-known/agent-card.json")
        assert card.status_code == 200, "the agent card is read before a caller has credentials"
        assert card.json()["skills"] == [], "gateway.a2a.public_card: minimal: the flows are for callers"
        assert "sigv4" in card.json()["securitySchemes"]

"""Finding a deployed mesh from its stack (`asya_local.discovery`), against moto's CloudFormation, STS
and API Gateway: the outputs that make a stack a mesh, the region and credentials boto3's chain gives,
and how each request is then authenticated (SigV4, the API key's value, a bearer token), as the
gateway would receive it."""

from __future__ import annotations

import json
from collections.abc import Iterator

import boto3
import httpx2
import pytest
from moto import mock_aws

from asya_local import cli, discovery
from asya_local.discovery import DiscoveryError, discover
from asya_local.functions.lambda_shapes import REGION
from asya_local.gateway_client import GatewayClient

API_URL = "https://abc123.execute-api.us-east-1.amazonaws.com/api/"
BUCKET = "results-bucket"
NS = "t"
MESH_OUTPUTS = {"ApiUrl": API_URL, "ResultsBucket": BUCKET}


@pytest.fixture(autouse=True)
def aws(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """moto for every AWS call; a gateway that answers `/health` for namespace `t` (nothing is sent)."""
    monkeypatch.setattr(GatewayClient, "health", lambda _self: {"status": "ok", "namespace": NS})
    monkeypatch.delenv("ASYA_TOKEN", raising=False)
    with mock_aws():
        yield


def deploy(outputs: dict[str, str], name: str = "asya-t") -> None:
    """A stack whose outputs are `outputs` (literal values; one placeholder resource, as a template needs)."""
    template = {
        "Resources": {"Placeholder": {"Type": "AWS::SQS::Queue"}},
        "Outputs": {key: {"Value": value} for key, value in outputs.items()},
    }
    boto3.client("cloudformation").create_stack(StackName=name, TemplateBody=json.dumps(template))


def sent(mesh: discovery.DeployedMesh) -> httpx2.Request:
    """A request to the mesh's gateway as it leaves the client: its headers, signature included."""
    request = mesh.gateway.http.build_request("GET", "/health")
    auth = mesh.gateway.http.auth
    return next(auth.auth_flow(request)) if auth is not None else request


def test_a_mesh_without_a_key_or_an_auth_output_is_called_with_sigv4_from_the_callers_credentials() -> None:
    deploy(MESH_OUTPUTS)
    mesh = discover("asya-t")
    request = sent(mesh)
    credentials = boto3.Session().get_credentials()
    assert credentials is not None
    own_key = credentials.access_key
    assert request.headers["Authorization"].startswith(f"AWS4-HMAC-SHA256 Credential={own_key}/")
    assert f"/{REGION}/execute-api/aws4_request" in request.headers["Authorization"]
    assert "x-api-key" not in request.headers
    assert str(request.url) == f"{API_URL}health"
    assert (mesh.where, mesh.namespace, mesh.bucket) == (f"account 123456789012 in {REGION}", NS, BUCKET)
    assert mesh.outputs == MESH_OUTPUTS


def test_an_api_key_mesh_is_called_with_the_keys_value_read_from_api_gateway() -> None:
    key = boto3.client("apigateway").create_api_key(name="asya-t", value="the-key-value-0123456789", enabled=True)
    deploy({**MESH_OUTPUTS, "ApiKeyId": key["id"], "GatewayAuth": "api_key"})
    request = sent(discover("asya-t"))
    assert request.headers["x-api-key"] == "the-key-value-0123456789"
    assert "Authorization" not in request.headers


def test_a_jwt_mesh_needs_a_token_and_gets_it_as_a_bearer(monkeypatch: pytest.MonkeyPatch) -> None:
    deploy({**MESH_OUTPUTS, "GatewayAuth": "jwt"})
    with pytest.raises(DiscoveryError, match=r"takes a signed-in caller.s token .* give --token or set ASYA_TOKEN"):
        discover("asya-t")

    monkeypatch.setenv("ASYA_TOKEN", "from-the-environment")
    assert sent(discover("asya-t", token=discovery.given_token(None))).headers["Authorization"] == (
        "Bearer from-the-environment"
    )
    request = sent(discover("asya-t", token=discovery.given_token("from-the-flag")))
    assert request.headers["Authorization"] == "Bearer from-the-flag", "--token wins over ASYA_TOKEN"


def test_a_mesh_with_a_pool_of_its_own_says_where_a_token_comes_from() -> None:
    deploy({**MESH_OUTPUTS, "GatewayAuth": "jwt", "MachineClientId": "machine"})
    with pytest.raises(DiscoveryError, match=r"`asya token --stack asya-t` gets one of its pool"):
        discover("asya-t")


def test_a_missing_stack_or_one_without_a_meshs_outputs_is_explained() -> None:
    with pytest.raises(DiscoveryError, match=f"no stack 'asya-nope' in account 123456789012 in {REGION}"):
        discover("asya-nope")
    deploy({"ResultsBucket": BUCKET, "Other": "x"})
    with pytest.raises(DiscoveryError, match="stack 'asya-t' has no output ApiUrl: is it an asya mesh"):
        discover("asya-t")


def test_without_a_region_or_credentials_the_command_says_what_to_set(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: object
) -> None:
    deploy(MESH_OUTPUTS)
    monkeypatch.setenv("ASYA_LOCAL_STATE", f"{tmp_path}/none.json")  # no local stack to fall back on
    monkeypatch.setenv("AWS_CONFIG_FILE", f"{tmp_path}/no-config")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", f"{tmp_path}/no-credentials")
    for name in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(name, raising=False)

    assert cli.main(["status", "--stack", "asya-t", "5f0c9a2e"]) == 2
    assert "asya: no AWS region: set AWS_DEFAULT_REGION or the profile's region" in capsys.readouterr().err

    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(boto3.Session, "get_credentials", lambda _self: None)  # no instance role either
    assert cli.main(["tasks", "--stack", "asya-t"]) == 2
    assert "asya: no AWS credentials: configure a profile" in capsys.readouterr().err

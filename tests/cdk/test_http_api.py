"""`gateway.api: http`: the gateway function behind an HTTP API instead of the REST API, with IAM or
JWT authorization, cdk-nag (AwsSolutions) and cfn-lint run on the template."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from aws_cdk.assertions import Template

from asya_cdk.access_logs import HTTP_ACCESS_LOG_FIELDS
from asya_cdk.config import MeshConfig
from asya_cdk.loaded_mesh import LoadedMesh
from asya_local.deployed_functions import HttpTrigger, http_api_triggers
from asya_local.functions.stage_throttle import template_opens_well_known
from tests.support.templates import ROOT, cfn_lint, resources, synthesize

EXAMPLE = ROOT / "examples" / "reviews" / "mesh.yaml"
ISSUER = "https://login.example.com/realms/mesh"
GREEDY = {"ANY /", "ANY /{proxy+}"}
OPEN = {"GET /health", "GET /.well-known/{proxy+}"}
TICKET = "GET /follow/{id}"  # a task's events for whoever holds its follow ticket: the function checks it
Synthesized = tuple[Template, dict[str, Any], Path]


def _synthesize(gateway: dict[str, Any], outdir: Path) -> Synthesized:
    document = yaml.safe_load(EXAMPLE.read_text())
    document["gateway"] = gateway
    return synthesize(LoadedMesh(config=MeshConfig.model_validate(document), base=EXAMPLE.parent), outdir)


@pytest.fixture(scope="module")
def with_iam(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    return _synthesize({"api": "http"}, tmp_path_factory.mktemp("cdk.out"))


@pytest.fixture(scope="module")
def with_jwt(tmp_path_factory: pytest.TempPathFactory) -> Synthesized:
    jwt = {"issuer": ISSUER, "audiences": ["asya-reviews", "console"]}
    return _synthesize({"api": "http", "auth": "jwt", "jwt": jwt}, tmp_path_factory.mktemp("cdk.out"))


def _routes(document: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {route["RouteKey"]: route for route in resources(document, "AWS::ApiGatewayV2::Route").values()}


def _no_rest_api(document: dict[str, Any]) -> None:
    for kind in ("RestApi", "Stage", "Method", "UsagePlan", "ApiKey", "Account"):
        assert not resources(document, f"AWS::ApiGateway::{kind}"), kind


def test_iam_guards_every_route_of_one_http_api_in_front_of_the_gateway_function(with_iam: Synthesized) -> None:
    _, document, _ = with_iam
    _no_rest_api(document)
    [(api_id, api)] = resources(document, "AWS::ApiGatewayV2::Api").items()
    assert (api["Name"], api["ProtocolType"]) == ("asya-reviews", "HTTP")
    routes = _routes(document)
    card = "GET /.well-known/{proxy+}"
    assert set(routes) == {*GREEDY, card, TICKET}, "health and the rest are signed like every other path"
    opened = {key: route["AuthorizationType"] for key, route in routes.items() if key not in GREEDY}
    assert opened == {card: "NONE", TICKET: "NONE"}, (
        "the A2A agent card is read before a caller has credentials, a ticket's stream by a browser"
    )
    assert {routes[key]["AuthorizationType"] for key in GREEDY} == {"AWS_IAM"}
    assert not resources(document, "AWS::ApiGatewayV2::Authorizer")
    [(integration_id, integration)] = resources(document, "AWS::ApiGatewayV2::Integration").items()
    assert integration["IntegrationType"] == "AWS_PROXY"
    assert integration["IntegrationUri"]["Fn::GetAtt"][0].startswith("MeshGatewayApiFunction")
    assert integration["PayloadFormatVersion"] == "1.0", "the REST API's event: the function's resolver unchanged"
    assert integration["TimeoutInMillis"] == 29_000
    for route in routes.values():
        assert route["Target"] == {"Fn::Join": ["", ["integrations/", {"Ref": integration_id}]]}
    [stage] = resources(document, "AWS::ApiGatewayV2::Stage").values()
    assert (stage["StageName"], stage["AutoDeploy"], stage["ApiId"]) == ("$default", True, {"Ref": api_id})
    assert json.loads(stage["AccessLogSettings"]["Format"]) == HTTP_ACCESS_LOG_FIELDS, "as the cost bench sizes it"
    assert stage["AccessLogSettings"]["DestinationArn"]["Fn::GetAtt"][0].startswith("MeshGatewayHttpAccessLogs")


def test_the_api_url_output_is_the_http_apis_base_url(with_iam: Synthesized) -> None:
    _, document, _ = with_iam
    [api_id] = resources(document, "AWS::ApiGatewayV2::Api")
    outputs = document["Outputs"]
    expected = {"ResultsBucket", "Dashboard", "ApiUrl", "GatewayAuth", "TasksTable", "EventsTable", "AsyaVersion"}
    assert expected == set(outputs), "no ApiKeyId"
    assert outputs["GatewayAuth"]["Value"] == "iam", "how `asya --stack` knows to sign with SigV4"
    parts = outputs["ApiUrl"]["Value"]["Fn::Join"][1]
    assert parts == ["https://", {"Ref": api_id}, ".execute-api.", {"Ref": "AWS::Region"}, ".",
                     {"Ref": "AWS::URLSuffix"}, "/"], "no stage in it: the CLI joins api/v1/... to it"  # fmt: skip


def test_jwt_checks_the_issuer_and_audiences_except_where_a_caller_learns_to_sign_in(with_jwt: Synthesized) -> None:
    _, document, _ = with_jwt
    _no_rest_api(document)
    [(authorizer_id, authorizer)] = resources(document, "AWS::ApiGatewayV2::Authorizer").items()
    assert authorizer["AuthorizerType"] == "JWT"
    assert authorizer["IdentitySource"] == ["$request.header.Authorization"]
    assert authorizer["JwtConfiguration"] == {"Issuer": ISSUER, "Audience": ["asya-reviews", "console"]}
    routes = _routes(document)
    assert set(routes) == GREEDY | OPEN | {TICKET}
    for key in GREEDY:
        assert (routes[key]["AuthorizationType"], routes[key]["AuthorizerId"]) == ("JWT", {"Ref": authorizer_id})
    for key in {*OPEN, TICKET}:
        assert routes[key]["AuthorizationType"] == "NONE"
        assert "AuthorizerId" not in routes[key]


def test_without_a_public_card_nothing_is_open_to_a_caller_without_credentials(tmp_path: Path) -> None:
    """`gateway.a2a.public_card: off` with IAM: API Gateway refuses an unsigned read of the card, before
    the function runs."""
    _, document, _ = _synthesize({"api": "http", "a2a": {"public_card": "off"}}, tmp_path)
    routes = _routes(document)
    assert set(routes) == {*GREEDY, TICKET}
    assert {routes[key]["AuthorizationType"] for key in GREEDY} == {"AWS_IAM"}
    assert routes[TICKET]["AuthorizationType"] == "NONE", "a follow ticket's stream: the function checks the ticket"
    assert not template_opens_well_known([document]), "the local gateway refuses it too"


@pytest.mark.parametrize("variant", ["with_iam", "with_jwt"])
def test_cfn_lint_passes(variant: str, request: pytest.FixtureRequest) -> None:
    _, _, outdir = request.getfixturevalue(variant)
    result = cfn_lint(outdir / "asya-reviews.template.json")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_local_stack_serves_the_function_the_http_api_integrates(with_iam: Synthesized) -> None:
    """moto's CloudFormation creates no HTTP API: the local stack finds its function in the template."""
    _, document, _ = with_iam
    [(name, trigger)] = list(http_api_triggers([document]))
    assert name == "asya-reviews-gateway"
    assert isinstance(trigger, HttpTrigger)
    without_http_api = {
        "Resources": {k: r for k, r in document["Resources"].items() if "ApiGatewayV2" not in r["Type"]}
    }
    assert not list(http_api_triggers([without_http_api]))


def test_the_dashboard_charts_the_http_apis_own_metrics(with_iam: Synthesized) -> None:
    _, document, _ = with_iam
    [api_id] = resources(document, "AWS::ApiGatewayV2::Api")
    [dashboard] = resources(document, "AWS::CloudWatch::Dashboard").values()
    parts = dashboard["DashboardBody"]["Fn::Join"][1]
    text = "".join(part if isinstance(part, str) else json.dumps(part) for part in parts)
    for metric in ("4xx", "5xx", "Latency"):
        assert f'["AWS/ApiGateway","{metric}","ApiId","{{"Ref": "{api_id}"}}"' in text, metric


def test_a_cognito_pool_behind_the_http_api_is_the_authorizers_issuer_and_its_clients_audiences(
    tmp_path: Path,
) -> None:
    """A client credentials token names the machine client in `client_id`: the authorizer takes it too."""
    jwt = {"cognito": True, "audiences": ["asya-reviews"]}
    _, document, outdir = _synthesize({"api": "http", "auth": "jwt", "jwt": jwt}, tmp_path)
    [pool_id] = resources(document, "AWS::Cognito::UserPool")
    clients = resources(document, "AWS::Cognito::UserPoolClient")
    [people] = [name for name, client in clients.items() if client["AllowedOAuthFlows"] == ["code"]]
    [machine] = [name for name, client in clients.items() if client["AllowedOAuthFlows"] == ["client_credentials"]]
    [authorizer] = resources(document, "AWS::ApiGatewayV2::Authorizer").values()
    configuration = authorizer["JwtConfiguration"]
    assert configuration["Audience"] == [{"Ref": people}, {"Ref": machine}, "asya-reviews"]
    assert {"Ref": pool_id} in configuration["Issuer"]["Fn::Join"][1]
    routes = _routes(document)
    for key in ("POST /oauth/register", "POST /mcp", "GET /mcp"):  # registered clients: the function verifies
        assert routes[key]["AuthorizationType"] == "NONE", key
    [stage] = resources(document, "AWS::ApiGatewayV2::Stage").values()
    assert stage["RouteSettings"] == {"POST /oauth/register": {"ThrottlingRateLimit": 0.2, "ThrottlingBurstLimit": 5}}
    result = cfn_lint(outdir / "asya-reviews.template.json")
    assert result.returncode == 0, result.stdout + result.stderr

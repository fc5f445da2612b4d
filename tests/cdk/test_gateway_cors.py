"""`gateway.cors_origins`: a browser page on one of those origins can call the gateway. The API answers
its preflights without credentials (an HTTP API's `ANY` routes would take a preflight to the authorizer,
so it gets `OPTIONS` routes of its own; a REST API mock `OPTIONS` methods), and the function is told the
origins; without the setting the template has no CORS at all. `*` and origins with a path are refused
when the mesh file loads."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from asya_cdk.config import MeshConfig
from asya_cdk.loaded_mesh import LoadedMesh
from tests.support.templates import ROOT, resources, synthesize

EXAMPLE = ROOT / "examples" / "reviews" / "mesh.yaml"
ORIGINS = ["https://app.example.com", "http://localhost:5173"]
JWT = {"issuer": "https://login.example.com/mesh", "audiences": ["asya-api"]}


def _config(gateway: dict[str, Any]) -> MeshConfig:
    document = yaml.safe_load(EXAMPLE.read_text())
    document["gateway"] = gateway
    return MeshConfig.model_validate(document)


def _template(gateway: dict[str, Any], outdir: Path) -> dict[str, Any]:
    _, template, _ = synthesize(LoadedMesh(config=_config(gateway), base=EXAMPLE.parent), outdir)
    return template  # cdk-nag ran: the open OPTIONS methods and routes raise nothing unacknowledged


def _function_environment(template: dict[str, Any]) -> dict[str, Any]:
    [gateway] = [
        f for f in resources(template, "AWS::Lambda::Function").values() if f["FunctionName"] == "asya-reviews-gateway"
    ]
    return dict(gateway["Environment"]["Variables"])


def test_an_http_api_in_jwt_mode_answers_preflights_without_the_authorizer(tmp_path: Path) -> None:
    template = _template({"api": "http", "auth": "jwt", "jwt": JWT, "cors_origins": ORIGINS}, tmp_path)
    [api] = resources(template, "AWS::ApiGatewayV2::Api").values()
    cors = api["CorsConfiguration"]
    assert cors["AllowOrigins"] == ORIGINS
    assert "AllowCredentials" not in cors
    assert {"GET", "POST", "DELETE"} <= set(cors["AllowMethods"])
    assert {"authorization", "content-type", "idempotency-key"} <= set(cors["AllowHeaders"])
    assert "www-authenticate" in cors["ExposeHeaders"]
    routes = {route["RouteKey"]: route for route in resources(template, "AWS::ApiGatewayV2::Route").values()}
    for key in ("OPTIONS /", "OPTIONS /{proxy+}"):
        assert routes[key]["AuthorizationType"] == "NONE", key
        assert "AuthorizerId" not in routes[key]
    assert routes["ANY /{proxy+}"]["AuthorizationType"] == "JWT"
    assert _function_environment(template)["ASYA_GATEWAY_CORS_ORIGINS"] == ",".join(ORIGINS)


def test_a_rest_api_mocks_preflights_on_every_resource(tmp_path: Path) -> None:
    template = _template({"auth": "iam", "cors_origins": ORIGINS[:1]}, tmp_path)
    methods = resources(template, "AWS::ApiGateway::Method").values()
    preflights = [method for method in methods if method["HttpMethod"] == "OPTIONS"]
    assert len(preflights) == len(resources(template, "AWS::ApiGateway::Resource")) + 1  # and the root
    for method in preflights:
        assert (method["AuthorizationType"], method["Integration"]["Type"]) == ("NONE", "MOCK")
        [answer] = method["Integration"]["IntegrationResponses"]
        assert answer["ResponseParameters"]["method.response.header.Access-Control-Allow-Origin"] == (
            "'https://app.example.com'"
        )
    by_id = resources(template, "AWS::ApiGateway::Resource")
    ticket_stream = [
        key
        for key, r in by_id.items()
        if r["PathPart"] == "{id}" and by_id[r["ParentId"]["Ref"]]["PathPart"] == "follow"
    ]
    assert [m for m in preflights if m["ResourceId"] == {"Ref": ticket_stream[0]}], "a page's EventSource asks before"
    others = [method for method in methods if method["HttpMethod"] != "OPTIONS" and method["HttpMethod"] != "GET"]
    assert all(method["AuthorizationType"] == "AWS_IAM" for method in others), "only preflights are open"
    assert _function_environment(template)["ASYA_GATEWAY_CORS_ORIGINS"] == "https://app.example.com"


def test_without_origins_there_is_no_cors(tmp_path: Path) -> None:
    template = _template({"api": "http"}, tmp_path)
    [api] = resources(template, "AWS::ApiGatewayV2::Api").values()
    assert "CorsConfiguration" not in api
    assert not [r for r in resources(template, "AWS::ApiGatewayV2::Route").values() if "OPTIONS" in r["RouteKey"]]
    assert "ASYA_GATEWAY_CORS_ORIGINS" not in _function_environment(template)
    assert "OPTIONS" not in json.dumps(resources(template, "AWS::ApiGateway::Method"))


@pytest.mark.parametrize(
    "origin", ["*", "https://app.example.com/", "https://*.example.com", "http://app.example.com", "app.example.com"]
)
def test_an_origin_that_is_not_one_exact_origin_is_refused(origin: str) -> None:
    with pytest.raises(ValidationError, match=r"gateway\.cors_origins"):
        _config({"cors_origins": [origin]})

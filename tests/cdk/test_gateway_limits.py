"""The gateway's limits (`gateway.throttle`, `gateway.reserved_concurrency`): the API stage throttles
every route, REST or HTTP, the API function reserves its concurrency when asked, and the local gateway
applies the stage's throttle read from the same template, answering API Gateway's 429 over it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from asya_cdk.config import MeshConfig
from asya_cdk.loaded_mesh import LoadedMesh
from asya_local.functions.gateway_server import Gateway
from asya_local.functions.rest_proxy import HttpRequest, HttpResponse
from asya_local.functions.stage_throttle import StageThrottle, template_route_throttles, template_throttle
from tests.support.templates import ROOT, resources, synthesize

EXAMPLE = ROOT / "examples" / "reviews" / "mesh.yaml"
LIMITS = {"throttle": {"rate": 2, "burst": 3}, "reserved_concurrency": 20}
STAND_IN = {  # the local gateway's function: a stand-in, which no request here reaches
    "function": "asya-reviews-gateway",
    "handler": "tests.support.gateway_stand_in.handler",
    "environment": {},
    "timeout": 1.0,
    "memory": 256,
    "api_key": "a-key",
}


def _document(gateway: dict[str, Any], outdir: Path) -> dict[str, Any]:
    mesh = yaml.safe_load(EXAMPLE.read_text())
    mesh["gateway"] = gateway
    _, document, _ = synthesize(LoadedMesh(config=MeshConfig.model_validate(mesh), base=EXAMPLE.parent), outdir)
    return document


@pytest.fixture(scope="module")
def rest(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    return _document(LIMITS, tmp_path_factory.mktemp("cdk.out"))


def test_the_rest_stage_throttles_every_method_as_the_mesh_file_says(rest: dict[str, Any]) -> None:
    [stage] = resources(rest, "AWS::ApiGateway::Stage").values()
    [setting] = stage["MethodSettings"]
    assert (setting["HttpMethod"], setting["ResourcePath"]) == ("*", "/*")
    assert (setting["ThrottlingRateLimit"], setting["ThrottlingBurstLimit"]) == (2, 3)


def test_the_api_function_reserves_its_concurrency_and_no_other_function_does(rest: dict[str, Any]) -> None:
    reserved = {
        function["FunctionName"]: function.get("ReservedConcurrentExecutions")
        for function in resources(rest, "AWS::Lambda::Function").values()
    }
    assert reserved.pop("asya-reviews-gateway") == 20
    assert set(reserved.values()) == {None}


def test_the_http_stage_throttles_its_default_route(tmp_path: Path) -> None:
    document = _document({"api": "http", "throttle": {"rate": 5, "burst": 7}}, tmp_path)
    [stage] = resources(document, "AWS::ApiGatewayV2::Stage").values()
    settings = stage["DefaultRouteSettings"]
    assert (settings["ThrottlingRateLimit"], settings["ThrottlingBurstLimit"]) == (5, 7)
    assert template_throttle([document]) == {"rate": 5, "burst": 7}


def test_the_local_gateway_answers_429_past_the_templates_burst(rest: dict[str, Any]) -> None:
    throttle = template_throttle([rest])
    assert throttle == {"rate": 2, "burst": 3}
    gateway = Gateway({**STAND_IN, "throttle": throttle})
    unsigned = HttpRequest("GET", "/api/v1/mesh", [])  # refused for its missing key, after the throttle
    try:
        answers = [gateway.respond(unsigned) for _ in range(4)]
    finally:
        gateway.environments.stop()
    assert all(isinstance(answer, HttpResponse) for answer in answers)
    assert [answer.status for answer in answers if isinstance(answer, HttpResponse)] == [403, 403, 403, 429]
    assert isinstance(answers[-1], HttpResponse)
    assert b"Too Many Requests" in answers[-1].body


def test_a_bucket_refills_at_its_rate() -> None:
    now = [0.0]
    bucket = StageThrottle(rate=2, burst=1, clock=lambda: now[0])
    assert (bucket.take(), bucket.take()) == (True, False)
    now[0] = 0.4  # 0.8 of a token
    assert not bucket.take()
    now[0] = 0.5
    assert bucket.take()


def test_the_limits_default_to_a_throttle_and_no_reservation_and_refuse_what_aws_would() -> None:
    gateway = MeshConfig.model_validate({"namespace": "x", "actors": {"a": {"handler": "m.f"}}}).gateway
    assert (gateway.throttle.rate, gateway.throttle.burst, gateway.reserved_concurrency) == (100, 200, None)
    with pytest.raises(ValidationError, match=r"gateway\.throttle\.burst"):
        MeshConfig.model_validate(
            {"namespace": "x", "actors": {"a": {"handler": "m.f"}}, "gateway": {"throttle": {"burst": 6000}}}
        )


def test_the_local_gateway_throttles_the_registration_route_apart_as_the_stage_does(tmp_path: Path) -> None:
    """With the stack's Cognito pool, `POST /oauth/register` has its own bucket (burst 5): the sixth
    registration at once gets API Gateway's 429, while the stage's other routes still answer."""
    jwt = {"cognito": True, "audiences": ["asya-reviews"]}
    document = _document({"auth": "jwt", "jwt": jwt}, tmp_path)
    routes = template_route_throttles([document])
    assert routes == {"POST /oauth/register": {"rate": 0.2, "burst": 5}}
    assert template_throttle([document]) == {"rate": 100, "burst": 200}
    gateway = Gateway({**STAND_IN, "throttle": template_throttle([document]), "route_throttles": routes})
    register = HttpRequest("POST", "/oauth/register", [])
    try:
        answers = [gateway.respond(register) for _ in range(6)]
        other = gateway.respond(HttpRequest("GET", "/api/v1/mesh", []))
    finally:
        gateway.environments.stop()
    statuses = [answer.status for answer in answers if isinstance(answer, HttpResponse)]
    assert statuses[-1] == 429
    assert 429 not in statuses[:-1]
    assert isinstance(other, HttpResponse)
    assert other.status != 429

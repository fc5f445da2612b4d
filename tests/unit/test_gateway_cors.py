"""A browser page on one of `gateway.cors_origins` calls the gateway: its preflight is answered without
credentials, and every answer (a refusal too, so the page can read why) names the page's origin. A page
of any other origin, or a mesh without the setting, gets no CORS header: the browser keeps the answer
from it. The local stand-in for API Gateway answers preflights as the deployed API does."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from asya_gateway import api
from asya_gateway.callers import AuthSettings
from asya_local.functions.gateway_server import Gateway
from asya_local.functions.lambda_shapes import LambdaContext
from asya_local.functions.rest_proxy import HttpRequest, HttpResponse, http_response, proxy_event
from tests.support.gateway_unit import gateway_on_moto

PAGE = "https://app.example.com"
ELSEWHERE = "https://evil.example.net"
PREFLIGHT = [("Access-Control-Request-Method", "POST"), ("Access-Control-Request-Headers", "authorization")]
SIGN_IN = AuthSettings(mode="jwt", jwt={"issuer": "https://login.example.com/mesh", "audiences": ["asya-api"]})


def _send(method: str, path: str, headers: list[tuple[str, str]]) -> HttpResponse:
    event = proxy_event(HttpRequest(method, path, [("Host", "127.0.0.1:9"), *headers]), "unit")
    return http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))


def _headers(response: HttpResponse) -> dict[str, str]:
    return {name.lower(): value for name, value in response.headers}


@pytest.fixture
def with_origins() -> Iterator[None]:
    with gateway_on_moto({}, auth=SIGN_IN, cors_origins=(PAGE,)):
        yield


def test_a_preflight_from_an_allowed_origin_is_answered_without_a_token(with_origins: None) -> None:
    answer = _send("OPTIONS", "/api/v1/mesh", [("Origin", PAGE), *PREFLIGHT])
    headers = _headers(answer)
    assert answer.status == 204
    assert headers["access-control-allow-origin"] == PAGE
    assert "POST" in headers["access-control-allow-methods"].split(",")
    assert "authorization" in headers["access-control-allow-headers"].split(",")
    assert "access-control-allow-credentials" not in headers


def test_a_refusal_names_the_allowed_origin_so_the_page_reads_why(with_origins: None) -> None:
    refused = _send("GET", "/api/v1/mesh", [("Origin", PAGE)])
    headers = _headers(refused)
    assert refused.status == 401
    assert headers["access-control-allow-origin"] == PAGE
    assert "www-authenticate" in headers["access-control-expose-headers"]
    assert _send("GET", "/health", [("Origin", PAGE)]).status == 200


def test_another_origin_gets_no_cors_and_its_preflight_meets_sign_in(with_origins: None) -> None:
    refused = _send("GET", "/api/v1/mesh", [("Origin", ELSEWHERE)])
    assert "access-control-allow-origin" not in _headers(refused)
    preflight = _send("OPTIONS", "/api/v1/mesh", [("Origin", ELSEWHERE), *PREFLIGHT])
    assert preflight.status == 401
    assert "access-control-allow-origin" not in _headers(preflight)


def test_a_mesh_without_origins_answers_no_browser() -> None:
    with gateway_on_moto({}, auth=SIGN_IN):
        assert "access-control-allow-origin" not in _headers(_send("GET", "/health", [("Origin", PAGE)]))
        assert _send("OPTIONS", "/api/v1/mesh", [("Origin", PAGE), *PREFLIGHT]).status == 401


@pytest.mark.parametrize(("origins", "status"), [(PAGE, 204), ("", 403)], ids=["configured", "not-configured"])
def test_the_local_api_answers_a_preflight_without_the_key_only_for_configured_origins(
    origins: str, status: int
) -> None:
    spec = {
        "function": "asya-t-gateway",
        "handler": "tests.support.gateway_stand_in.handler",
        "environment": {"ASYA_GATEWAY_CORS_ORIGINS": origins} if origins else {},
        "timeout": 1.0,
        "memory": 256,
        "api_key": "test-key",
        "rest_api_id": "api-1",
    }
    gateway = Gateway(spec)
    try:
        answer = gateway.respond(HttpRequest("OPTIONS", "/api/v1/mesh", [("Origin", PAGE), *PREFLIGHT]))
        assert isinstance(answer, HttpResponse)
        assert answer.status == status
        assert (_headers(answer).get("access-control-allow-origin") == PAGE) is bool(origins)
        streamed = gateway.cors_headers({"Origin": PAGE})  # what an event stream served here carries
        assert streamed.get("Access-Control-Allow-Origin") == (PAGE if origins else None)
    finally:
        gateway.environments.stop()

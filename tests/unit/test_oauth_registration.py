"""The gateway as MCP hosts' authorization server for the stack's Cognito pool (`asya_gateway.oauth`):
its metadata documents, `POST /oauth/register` making app clients of the pool (moto's Cognito), what
a registration may ask for, the cap on how many, and a registered client's token taken at `/mcp`."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import orjson
import pytest
from moto import mock_aws

from asya_gateway import api
from asya_gateway.callers import AuthSettings
from asya_gateway.oauth import AuthorizationServer, RegistrationError
from asya_local.endpoint.moto_cognito import refusal as cognito_refusal
from asya_local.functions.lambda_shapes import LambdaContext
from asya_local.functions.rest_proxy import HttpRequest, HttpResponse, http_response, proxy_event
from asya_local.issuer import IssuerServer, LocalIssuer
from tests.support.gateway_unit import UNIT_ENVIRONMENT, gateway_on_moto

BASE = "http://127.0.0.1:9"
HOSTED_UI = "https://asya-n-123456789012.auth.us-east-1.amazoncognito.com"
LOOPBACK_REDIRECT = "http://127.0.0.1:33418/callback"


@dataclasses.dataclass
class Pool:
    """The gateway's function signing in with a moto pool, and the local issuer playing the pool."""

    id: str
    cognito: Any
    issuer: LocalIssuer

    def send(self, method: str, path: str, body: Any = None, token: str | None = None) -> HttpResponse:
        headers = [("Host", "127.0.0.1:9"), ("Content-Type", "application/json")]
        if token is not None:
            headers.append(("Authorization", f"Bearer {token}"))
        raw = orjson.dumps(body) if body is not None else b""
        event = proxy_event(HttpRequest(method, path, headers, raw), "unit")
        return http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))

    def register(self, **metadata: Any) -> HttpResponse:
        return self.send("POST", "/oauth/register", {"redirect_uris": [LOOPBACK_REDIRECT], **metadata})

    def registered_clients(self) -> list[dict[str, Any]]:
        listed = self.cognito.list_user_pool_clients(UserPoolId=self.id, MaxResults=60)["UserPoolClients"]
        return [c for c in listed if c["ClientName"].startswith("mcp-")]


def auth_document(pool_id: str, registration: dict[str, Any]) -> dict[str, Any]:
    """`ASYA_GATEWAY_AUTH` as the stack writes it for `jwt.cognito: true` (`asya_cdk.gateway_config`)."""
    issuer = f"https://cognito-idp.us-east-1.amazonaws.com/{pool_id}"
    jwt = {"issuer": issuer, "audiences": ["people-client", "machine-client"], "cognito": True}
    return {"mode": "jwt", "jwt": {**jwt, "hosted_ui": HOSTED_UI, "registration": registration}}


@pytest.fixture
def pool(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Pool]:
    registration = getattr(request, "param", {"max_clients": 3, "redirect_hosts": ["claude.ai"]})
    with pytest.MonkeyPatch.context() as patch, mock_aws():
        for name, value in UNIT_ENVIRONMENT.items():
            patch.setenv(name, value)
        cognito = boto3.client("cognito-idp")
        pool_id = cognito.create_user_pool(PoolName="asya-n")["UserPool"]["Id"]
        cognito.create_user_pool_client(UserPoolId=pool_id, ClientName="asya-n")  # the stack's own: not counted
        document = auth_document(pool_id, registration)
        issuer = LocalIssuer.create(tmp_path, document)
        server = IssuerServer(issuer)
        auth = AuthSettings.parse(orjson.dumps(document).decode(), server.jwks_url)
        try:
            with gateway_on_moto({}, auth=auth):
                yield Pool(pool_id, cognito, issuer)
        finally:
            server.stop()


def test_the_metadata_names_the_gateway_as_authorization_server_and_the_pools_sign_in(pool: Pool) -> None:
    resource = orjson.loads(pool.send("GET", "/.well-known/oauth-protected-resource/mcp").body)
    assert resource["authorization_servers"] == [BASE]
    assert resource["scopes_supported"] == ["openid"]
    for path in ("/.well-known/oauth-authorization-server", "/.well-known/openid-configuration"):
        answer = pool.send("GET", path)
        assert answer.status == 200, path
        metadata = orjson.loads(answer.body)
        assert metadata["issuer"] == BASE
        assert metadata["authorization_endpoint"] == f"{HOSTED_UI}/oauth2/authorize"
        assert metadata["token_endpoint"] == f"{HOSTED_UI}/oauth2/token"
        assert metadata["registration_endpoint"] == f"{BASE}/oauth/register"
        assert metadata["code_challenge_methods_supported"] == ["S256"]
        assert metadata["token_endpoint_auth_methods_supported"] == ["none"]
        assert metadata["scopes_supported"] == ["openid"]
        assert metadata["grant_types_supported"] == ["authorization_code", "refresh_token"]


def test_a_registration_needs_no_token_and_makes_a_public_code_flow_client_of_the_pool(
    pool: Pool, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.WARNING, logger="asya_gateway.oauth"):
        answer = pool.register(client_name="Claude Code (asya)", grant_types=["authorization_code", "refresh_token"])
    assert answer.status == 201, answer.body
    registered = orjson.loads(answer.body)
    [logged] = [record.getMessage() for record in caplog.records if record.name == "asya_gateway.oauth"]
    assert f"registered an OAuth client: id {registered['client_id']}, name 'Claude Code (asya)'" in logged
    assert f"redirects {LOOPBACK_REDIRECT}" in logged
    assert "(1 of 3)" in logged
    assert registered["token_endpoint_auth_method"] == "none"
    assert registered["redirect_uris"] == [LOOPBACK_REDIRECT]
    assert "client_secret" not in registered
    client = pool.cognito.describe_user_pool_client(UserPoolId=pool.id, ClientId=registered["client_id"])
    made = client["UserPoolClient"]
    assert made["ClientName"] == "mcp-Claude Code  asya "
    assert (made["AllowedOAuthFlows"], made["AllowedOAuthScopes"]) == (["code"], ["openid"])
    assert made["CallbackURLs"] == [LOOPBACK_REDIRECT]
    assert "ClientSecret" not in made


def test_a_name_cognito_would_refuse_is_made_one_it_takes(pool: Pool) -> None:
    """Cognito matches a client's name as Java does, ASCII only: "Café" would be its 400, not a client."""
    answer = pool.register(client_name="Café ✓ Host")
    assert answer.status == 201, answer.body
    assert orjson.loads(answer.body)["client_name"] == "Café ✓ Host"
    client_id = orjson.loads(answer.body)["client_id"]
    made = pool.cognito.describe_user_pool_client(UserPoolId=pool.id, ClientId=client_id)["UserPoolClient"]
    assert made["ClientName"] == "mcp-Caf    Host"
    assert cognito_refusal(made) is None


def test_https_on_a_listed_host_and_loopback_are_taken(pool: Pool) -> None:
    for redirect in ("https://claude.ai/api/mcp/auth_callback", "http://localhost:8080/cb", "http://[::1]:7/cb"):
        assert pool.send("POST", "/oauth/register", {"redirect_uris": [redirect]}).status == 201, redirect


@pytest.mark.parametrize(
    ("metadata", "error", "said"),
    [
        ({"redirect_uris": ["https://evil.example/cb"]}, "invalid_redirect_uri", "evil.example"),
        ({"redirect_uris": ["http://claude.ai/cb"]}, "invalid_redirect_uri", "http://claude.ai"),
        ({"redirect_uris": ["javascript:alert(1)"]}, "invalid_redirect_uri", "absolute URL"),
        ({"redirect_uris": ["http://127.0.0.1:5/cb#x"]}, "invalid_redirect_uri", "fragment"),
        ({"redirect_uris": []}, "invalid_redirect_uri", "1 to 5"),
        ({"redirect_uris": [LOOPBACK_REDIRECT] * 6}, "invalid_redirect_uri", "1 to 5"),
        ({"grant_types": ["client_credentials"]}, "invalid_client_metadata", "grant_types"),
        ({"token_endpoint_auth_method": "client_secret_basic"}, "invalid_client_metadata", "only none"),
        ({"scope": "openid asya-n/admin"}, "invalid_client_metadata", "scope: only openid"),
        ({"client_name": "x" * 101}, "invalid_client_metadata", "client_name"),
        ({"client_name": "a\nb"}, "invalid_client_metadata", "client_name"),
        ({"response_types": ["token"]}, "invalid_client_metadata", "response_types"),
    ],
    ids=[
        "unlisted-https-host", "http-off-loopback", "not-a-url", "fragment", "no-redirect", "too-many-redirects",
        "client-credentials", "secret", "admin-scope", "long-name", "control-character", "implicit",
    ],
)  # fmt: skip
def test_a_registration_asking_for_more_is_refused_and_makes_no_client(
    pool: Pool, metadata: dict[str, Any], error: str, said: str
) -> None:
    answer = pool.register(**metadata)
    assert answer.status == 400
    assert orjson.loads(answer.body)["error"] == error
    assert said in orjson.loads(answer.body)["error_description"]
    assert pool.registered_clients() == []


def test_a_body_that_is_not_json_is_refused_as_client_metadata(pool: Pool) -> None:
    headers = [("Host", "127.0.0.1:9"), ("Content-Type", "application/json")]
    event = proxy_event(HttpRequest("POST", "/oauth/register", headers, b"{not json"), "unit")
    answer = http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))
    assert (answer.status, orjson.loads(answer.body)["error"]) == (400, "invalid_client_metadata")


def test_registrations_past_the_cap_are_refused_with_what_to_do(pool: Pool) -> None:
    for _ in range(3):
        assert pool.register().status == 201
    refused = pool.register()
    assert refused.status == 403
    assert orjson.loads(refused.body) == {
        "error": "access_denied",
        "error_description": "this mesh registers at most 3 clients and has them all "
        "(gateway.jwt.registration.max_clients): ask its operator",
    }
    assert len(pool.registered_clients()) == 3


def test_a_registered_clients_access_token_is_taken_at_mcp(pool: Pool) -> None:
    client_id = orjson.loads(pool.register().body)["client_id"]
    token = pool.issuer.token(subject="ana", client_id=client_id)
    listed = pool.send("POST", "/mcp", {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}, token=token)
    assert listed.status == 200, listed.body
    assert "tools" in orjson.loads(listed.body)["result"]


def test_a_registered_clients_token_opens_mcp_only(pool: Pool) -> None:
    """As behind the HTTP API, whose JWT authorizer knows no registered client: an MCP host's token is
    for MCP, not for the REST routes (and the tickets, the A2A door) the mesh's own clients use."""
    client_id = orjson.loads(pool.register().body)["client_id"]
    token = pool.issuer.token(subject="ana", client_id=client_id)
    for method, path in (("GET", "/api/v1/mesh"), ("POST", "/a2a")):
        refused = pool.send(method, path, {} if method == "POST" else None, token=token)
        assert (refused.status, orjson.loads(refused.body)["reason"]) == (401, "wrong_audience"), path
    people = pool.issuer.token(subject="ana", client_id="people-client")
    assert pool.send("GET", "/api/v1/mesh", token=people).status == 200


@pytest.mark.parametrize("pool", [{"max_clients": 0, "redirect_hosts": []}], indirect=True)
def test_without_registration_the_issuer_stays_the_pool_and_other_clients_tokens_are_refused(pool: Pool) -> None:
    resource = orjson.loads(pool.send("GET", "/.well-known/oauth-protected-resource").body)
    assert resource["authorization_servers"] == [pool.issuer.issuer]
    assert pool.send("GET", "/.well-known/oauth-authorization-server").status == 404
    assert pool.register().status == 404
    token = pool.issuer.token(subject="ana", client_id="someone-elses-client")
    refused = pool.send("GET", "/api/v1/mesh", token=token)
    assert (refused.status, orjson.loads(refused.body)["reason"]) == (401, "wrong_audience")


def test_the_server_is_none_for_an_issuer_the_stack_did_not_make() -> None:
    auth = AuthSettings.parse(
        orjson.dumps({"mode": "jwt", "jwt": {"issuer": "https://x", "audiences": ["a"]}}).decode()
    )
    assert AuthorizationServer.of(auth) is None
    assert RegistrationError("invalid_redirect_uri", "why").answer() == {
        "error": "invalid_redirect_uri",
        "error_description": "why",
    }

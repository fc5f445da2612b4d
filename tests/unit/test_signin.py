"""Sign-in (`gateway.auth: jwt`) through the gateway's function, as API Gateway hands requests over:
tokens of the local issuer (its keys served on loopback), each refusal a 401 naming its reason with
the challenge that points at the protected resource's metadata, and who the accepted caller is."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import jwt
import orjson
import pytest

from asya_gateway import api, signin
from asya_gateway.callers import AuthSettings, Caller
from asya_gateway.function import GatewayFunction
from asya_gateway.issuers import Issuer, SignInRefusedError
from asya_gateway.service import TaskService
from asya_gateway.settings import GatewaySettings
from asya_gateway.signin import TokenVerifier
from asya_local.functions.lambda_shapes import LambdaContext
from asya_local.functions.rest_proxy import HttpRequest, HttpResponse, http_response, proxy_event
from asya_local.issuer import IssuerServer, LocalIssuer
from asya_local.testing.tables import EVENTS, TASKS
from tests.support.gateway_unit import gateway_on_moto, serve

ISSUER = "https://login.example.com/tenant"
AUDIENCE = "asya-api"
AUTH = {"mode": "jwt", "jwt": {"issuer": ISSUER, "audiences": [AUDIENCE]}}
ADMINS = {"scopes": ["asya/admin"], "roles": ["mesh-admins"]}
CREATE = b'{"route": ["a"], "payload": {}}'
METADATA = "http://127.0.0.1:9/.well-known/oauth-protected-resource"


@dataclasses.dataclass
class SignedIn:
    """The gateway's function with sign-in on, and the issuer whose tokens it trusts."""

    issuer: LocalIssuer
    impostor: LocalIssuer  # another key pair that claims to be the same issuer

    def send(self, method: str, path: str, token: str | None = None, body: bytes = b"") -> HttpResponse:
        headers = [("Host", "127.0.0.1:9"), ("Content-Type", "application/json")]
        if token is not None:
            headers.append(("Authorization", f"Bearer {token}"))
        event = proxy_event(HttpRequest(method, path, headers, body), "unit")
        return http_response(api.lambda_handler(event, LambdaContext("asya-n-gateway", timeout_seconds=29)))


@pytest.fixture(scope="module")
def signed_in(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SignedIn]:
    folder = tmp_path_factory.mktemp("issuer")
    issuer = LocalIssuer.create(folder, {**AUTH, "admins": ADMINS})
    (folder / "impostor").mkdir()
    impostor = LocalIssuer.create(folder / "impostor", AUTH)
    server = IssuerServer(issuer)
    auth = AuthSettings.parse(orjson.dumps({**AUTH, "admins": ADMINS}).decode(), server.jwks_url)
    with gateway_on_moto({}, auth=auth):
        yield SignedIn(issuer, impostor)
    server.stop()


def refusal(response: HttpResponse) -> tuple[int, str, str]:
    """(status, reason, WWW-Authenticate) of a refused request."""
    challenge = {name.lower(): value for name, value in response.headers}.get("www-authenticate", "")
    return response.status, orjson.loads(response.body)["reason"], challenge


def test_a_signed_in_caller_creates_and_reads_its_task_and_is_named_by_its_subject(signed_in: SignedIn) -> None:
    token = signed_in.issuer.token(subject="ana")
    created = signed_in.send("POST", "/api/v1/mesh", token, CREATE)
    assert created.status == 201, created.body
    assert api.caller() == Caller(owner="jwt:ana", admin=False)
    task_id = orjson.loads(created.body)["id"]
    assert signed_in.send("GET", f"/api/v1/mesh/{task_id}", token).status == 200


@pytest.mark.parametrize(
    ("claims", "reason"),
    [
        ({"expires_in": -120}, "expired"),
        ({"aud": "another-api"}, "wrong_audience"),
        ({"iss": "https://login.example.com/other"}, "wrong_issuer"),
        ({"nbf": 4_000_000_000}, "not_yet_valid"),
    ],
    ids=["expired", "wrong-audience", "wrong-issuer", "not-yet-valid"],
)
def test_a_token_refused_for_its_claims_gets_401_naming_why(
    signed_in: SignedIn, claims: dict[str, Any], reason: str
) -> None:
    response = signed_in.send("POST", "/api/v1/mesh", signed_in.issuer.token(**claims), CREATE)
    status, said, challenge = refusal(response)
    assert (status, said) == (401, reason)
    assert challenge.startswith('Bearer error="invalid_token"')
    assert f'resource_metadata="{METADATA}"' in challenge


def test_a_token_expired_within_the_leeway_is_still_taken(signed_in: SignedIn) -> None:
    token = signed_in.issuer.token(expires_in=-30)  # 30 s ago, within the leeway of a minute
    assert signed_in.send("GET", "/api/v1/mesh", token).status == 200


def test_a_token_not_signed_by_the_issuers_key_is_refused(signed_in: SignedIn) -> None:
    forged = signed_in.impostor.token()  # the issuer's claims, another key (unknown kid)
    assert refusal(signed_in.send("GET", "/api/v1/mesh", forged))[:2] == (401, "bad_signature")
    header, body, _ = signed_in.issuer.token().split(".")
    _, _, other_signature = jwt.encode(
        {"sub": "x"}, signed_in.impostor._private_key(), algorithm="RS256", headers={"kid": signed_in.issuer.key_id}
    ).split(".")
    tampered = f"{header}.{body}.{other_signature}"  # the issuer's kid, a signature of another key
    assert refusal(signed_in.send("GET", "/api/v1/mesh", tampered))[:2] == (401, "bad_signature")


def test_unsigned_and_shared_secret_tokens_are_refused(signed_in: SignedIn) -> None:
    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "mallory", "exp": 4_000_000_000}
    unsigned = jwt.encode(claims, "", algorithm="none", headers={"kid": signed_in.issuer.key_id})
    status, reason, _ = refusal(signed_in.send("GET", "/api/v1/mesh", unsigned))
    assert (status, reason) == (401, "invalid_token")
    shared = jwt.encode(claims, "a-shared-secret-of-32-bytes-or-more!", algorithm="HS256")
    assert refusal(signed_in.send("GET", "/api/v1/mesh", shared))[:2] == (401, "invalid_token")


def test_a_key_id_is_never_reflected_into_a_header(signed_in: SignedIn) -> None:
    """A `kid` made to split the response (CR/LF and headers of its own) is a 401 whose challenge holds
    none of it: the refusal does not repeat what the token says."""
    kid = 'k\r\nX-Red-Injected: yes\r\nSet-Cookie: red=1"\\'
    token = jwt.encode({"sub": "x"}, signed_in.impostor._private_key(), algorithm="RS256", headers={"kid": kid})
    response = signed_in.send("GET", "/api/v1/mesh", token)
    status, reason, challenge = refusal(response)
    assert (status, reason) == (401, "bad_signature")
    assert "X-Red-Injected" not in challenge
    assert "red=1" not in challenge
    assert all(" " <= c <= "~" for c in challenge)
    assert {name.lower() for name, _ in response.headers}.isdisjoint({"x-red-injected", "set-cookie"})


def test_an_es256_token_under_the_issuers_rsa_key_id_is_a_401(signed_in: SignedIn) -> None:
    """PyJWT given an RSA key for an ES256 token raises a TypeError: the gateway refuses the token
    before (the algorithm must be its key's), not with a 502."""
    from cryptography.hazmat.primitives.asymmetric import ec

    claims = {"iss": ISSUER, "aud": AUDIENCE, "sub": "mallory", "exp": 4_000_000_000}
    token = jwt.encode(claims, ec.generate_private_key(ec.SECP256R1()), "ES256", {"kid": signed_in.issuer.key_id})
    assert refusal(signed_in.send("GET", "/api/v1/mesh", token))[:2] == (401, "bad_signature")


def test_a_cognito_pools_id_token_is_refused_where_access_tokens_are_meant(tmp_path: Path) -> None:
    """A Cognito ID token is signed with the pool's keys and its `aud` is the app client: only
    `token_use` tells it from an access token."""
    pool = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Pool"
    auth = {"mode": "jwt", "jwt": {"issuer": pool, "audiences": [AUDIENCE], "cognito": True}}
    server = IssuerServer(LocalIssuer.create(tmp_path, auth))
    try:
        verifier = TokenVerifier(Issuer(url=pool, audiences=(AUDIENCE,), jwks_url=server.jwks_url))
        assert verifier.verify(f"Bearer {server.issuer.token(subject='ana')}")["sub"] == "ana"
        identity = server.issuer.token(subject="ana", token_use="id", client_id=None, aud=AUDIENCE)
        with pytest.raises(SignInRefusedError, match="not an access token") as refused:
            verifier.verify(f"Bearer {identity}")
        assert refused.value.reason == "not_an_access_token"
    finally:
        server.stop()
    assert not Issuer(url=ISSUER, audiences=(AUDIENCE,)).cognito, "another issuer's tokens have no token_use"


def test_a_request_without_a_token_gets_the_challenge_without_an_error(signed_in: SignedIn) -> None:
    for method, path in (("GET", "/api/v1/mesh"), ("POST", "/mcp"), ("GET", "/api/v1/mesh/t1/events")):
        status, reason, challenge = refusal(signed_in.send(method, path))
        assert (status, reason) == (401, "missing_token"), path
        assert challenge == f'Bearer resource_metadata="{METADATA}"'


def test_health_and_the_protected_resource_metadata_need_no_token(signed_in: SignedIn) -> None:
    assert signed_in.send("GET", "/health").status == 200
    for suffix in ("", "/mcp"):
        response = signed_in.send("GET", f"/.well-known/oauth-protected-resource{suffix}")
        assert response.status == 200
        assert orjson.loads(response.body) == {
            "resource": f"http://127.0.0.1:9{suffix}",
            "authorization_servers": [ISSUER],
            "bearer_methods_supported": ["header"],
            "scopes_supported": ["asya/admin"],
        }


@pytest.mark.parametrize(
    "grant",
    [{"scopes": ["read", "asya/admin"]}, {"scp": ["asya/admin"]}, {"roles": ["mesh-admins"]}, {"roles": ["x"]}],
)
def test_an_admin_scope_or_role_makes_an_admin(signed_in: SignedIn, grant: dict[str, Any]) -> None:
    token = signed_in.issuer.token(subject="bo", **grant)
    assert signed_in.send("GET", "/api/v1/mesh", token).status == 200
    assert api.caller() == Caller(owner="jwt:bo", admin=grant != {"roles": ["x"]})


def test_cognito_groups_and_a_cognito_access_token_without_aud(signed_in: SignedIn) -> None:
    """A Cognito access token names its app client (`client_id`), not an audience."""
    cognito: dict[str, Any] = {"aud": None, "client_id": AUDIENCE, "cognito:groups": ["mesh-admins"]}
    token = signed_in.issuer.token(subject="cy", **cognito)
    assert signed_in.send("GET", "/api/v1/mesh", token).status == 200
    assert api.caller() == Caller(owner="jwt:cy", admin=True)


def test_the_metadata_is_not_served_without_sign_in(signed_in: SignedIn, monkeypatch: pytest.MonkeyPatch) -> None:
    config = GatewaySettings(namespace="n", tasks_table=TASKS, events_table=EVENTS)  # gateway.auth: iam
    serve(monkeypatch, lambda: GatewayFunction(TaskService(config)))
    assert signed_in.send("GET", "/.well-known/oauth-protected-resource").status == 404


def test_keys_are_discovered_kept_and_fetched_again_for_a_new_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through the issuer's OpenID configuration; a token of a key the kept keys lack (a rotation)
    fetches them once more."""
    monkeypatch.setattr(signin, "REFETCH_COOLDOWN_SECONDS", 0.0)
    first = LocalIssuer.create(tmp_path, AUTH)
    server = IssuerServer(first)
    try:
        itself = {"mode": "jwt", "jwt": {"issuer": server.url, "audiences": [AUDIENCE]}}
        server.issuer = LocalIssuer.of(first.key_file, itself)
        verifier = TokenVerifier(Issuer(url=server.url, audiences=(AUDIENCE,)))
        assert verifier.verify(f"Bearer {server.issuer.token(subject='one')}")["sub"] == "one"
        (tmp_path / "rotated").mkdir()
        server.issuer = LocalIssuer.create(tmp_path / "rotated", itself)
        assert verifier.verify(f"Bearer {server.issuer.token(subject='two')}")["sub"] == "two"
        with pytest.raises(SignInRefusedError, match="names no key of the issuer"):
            verifier.verify(f"Bearer {first.token()}")  # a retired key: the issuer no longer lists it
    finally:
        server.stop()

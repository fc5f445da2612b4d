"""The pool's hosted sign-in as the local stack plays it (`asya_local.hosted_sign_in`): the code flow
with PKCE for any client of the pool (one registered after the stack started too), its tokens taken by
the gateway's verifier, and what the pool refuses refused here."""

from __future__ import annotations

import base64
import functools
import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import boto3
import httpx2
import pytest
from moto import mock_aws

from asya_gateway.issuers import Issuer
from asya_gateway.signin import TokenVerifier
from asya_local.cognito_pools import pool_client
from asya_local.hosted_sign_in import SIGNED_IN_AS, HostedSignIn
from asya_local.issuer import IssuerServer, LocalIssuer
from tests.support.gateway_unit import UNIT_ENVIRONMENT

REDIRECT = "http://127.0.0.1:33418/callback"
VERIFIER = "v" * 50
CHALLENGE = base64.urlsafe_b64encode(hashlib.sha256(VERIFIER.encode()).digest()).rstrip(b"=").decode()


class Played:
    """The local issuer's server with the hosted sign-in of a moto pool, and a client registered in it."""

    def __init__(self, server: IssuerServer, client_id: str) -> None:
        self.server = server
        self.client_id = client_id
        self.http = httpx2.Client(base_url=server.url, trust_env=False, follow_redirects=False)

    def authorize(self, **query: str) -> httpx2.Response:
        asked = {"response_type": "code", "client_id": self.client_id, "redirect_uri": REDIRECT, "state": "s1"}
        asked |= {"code_challenge": CHALLENGE, "code_challenge_method": "S256", "scope": "openid"}
        return self.http.get("/oauth2/authorize", params={**asked, **query})

    def code(self) -> str:
        answer = self.authorize()
        assert answer.status_code == 302, answer.text
        return parse_qs(urlsplit(answer.headers["location"]).query)["code"][0]

    def exchange(self, code: str, **form: str) -> httpx2.Response:
        sent = {"grant_type": "authorization_code", "code": code, "client_id": self.client_id}
        sent |= {"redirect_uri": REDIRECT, "code_verifier": VERIFIER}
        return self.http.post("/oauth2/token", data={**sent, **form})


@pytest.fixture
def played(tmp_path: Path) -> Iterator[Played]:
    with pytest.MonkeyPatch.context() as patch, mock_aws():
        for name, value in UNIT_ENVIRONMENT.items():
            patch.setenv(name, value)
        cognito = boto3.client("cognito-idp")
        pool = cognito.create_user_pool(PoolName="asya-n")["UserPool"]["Id"]
        issuer_url = f"https://cognito-idp.us-east-1.amazonaws.com/{pool}"
        auth = {"mode": "jwt", "jwt": {"issuer": issuer_url, "audiences": ["people"], "cognito": True}}
        issuer = LocalIssuer.create(tmp_path, auth)
        server = IssuerServer(issuer, sign_in=HostedSignIn(issuer, functools.partial(pool_client, cognito, pool)))
        registered = cognito.create_user_pool_client(  # as a host registers one, after the stack started
            UserPoolId=pool,
            ClientName="mcp-host",
            AllowedOAuthFlows=["code"],
            AllowedOAuthFlowsUserPoolClient=True,
            AllowedOAuthScopes=["openid"],
            CallbackURLs=[REDIRECT],
        )["UserPoolClient"]["ClientId"]
        try:
            yield Played(server, registered)
        finally:
            server.stop()


def test_the_code_flow_with_pkce_gives_a_token_of_the_registered_client_the_gateway_takes(played: Played) -> None:
    answer = played.authorize()
    assert answer.status_code == 302
    sent_back = urlsplit(answer.headers["location"])
    assert f"{sent_back.scheme}://{sent_back.netloc}{sent_back.path}" == REDIRECT
    assert parse_qs(sent_back.query)["state"] == ["s1"]
    tokens = played.exchange(parse_qs(sent_back.query)["code"][0]).json()
    assert (tokens["token_type"], tokens["scope"]) == ("Bearer", "openid")
    issuer = played.server.issuer
    verifier = TokenVerifier(
        Issuer(url=issuer.issuer, audiences=("people",), jwks_url=played.server.jwks_url, any_client=True)
    )
    claims = verifier.verify(f"Bearer {tokens['access_token']}", registered=True)
    assert (claims["sub"], claims["client_id"], claims["token_use"]) == (SIGNED_IN_AS, played.client_id, "access")
    refreshed = played.http.post(
        "/oauth2/token",
        data={"grant_type": "refresh_token", "refresh_token": tokens["refresh_token"], "client_id": played.client_id},
    )
    assert refreshed.status_code == 200
    renewed = verifier.verify(f"Bearer {refreshed.json()['access_token']}", registered=True)
    assert renewed["client_id"] == played.client_id


def test_a_code_is_used_once_with_its_verifier_by_its_client(played: Played) -> None:
    assert played.exchange(played.code(), code_verifier="w" * 50).json()["error"] == "invalid_grant"
    assert played.exchange(played.code(), client_id="another").json()["error"] == "invalid_grant"
    code = played.code()
    assert played.exchange(code).status_code == 200
    reused = played.exchange(code)
    assert (reused.status_code, reused.json()["error"]) == (400, "invalid_grant")


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"client_id": "nobody"}, "invalid_client"),
        ({"redirect_uri": "http://127.0.0.1:9/elsewhere"}, "invalid_request"),
    ],
)
def test_an_unknown_client_or_redirect_is_refused_without_sending_the_browser_anywhere(
    played: Played, query: dict[str, str], error: str
) -> None:
    answer = played.authorize(**query)
    assert answer.status_code == 400
    assert "location" not in answer.headers
    assert answer.json()["error"] == error


@pytest.mark.parametrize(
    ("query", "error"),
    [
        ({"scope": "openid asya-n/admin"}, "invalid_scope"),
        ({"response_type": "token"}, "unsupported_response_type"),
        ({"code_challenge_method": "plain"}, "invalid_request"),
    ],
)
def test_what_the_client_may_not_ask_for_goes_back_to_it_as_an_error(
    played: Played, query: dict[str, Any], error: str
) -> None:
    answer = played.authorize(**query)
    assert answer.status_code == 302
    sent = parse_qs(urlsplit(answer.headers["location"]).query)
    assert (sent["error"], sent["state"]) == ([error], ["s1"])
    assert "code" not in sent

"""`asya token`: a token of the running local stack's issuer, with the subject, scopes and lifetime asked
for; a stack whose mesh has no sign-in says so. As a Cognito pool, the local issuer mints only what the
pool would; `--stack` asks a deployed pool's token endpoint for its machine client's token."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import boto3
import httpx2
import jwt
import pytest
from botocore.stub import Stubber

from asya_local import token_cli
from asya_local.cli import parser
from asya_local.discovery import DiscoveryError
from asya_local.issuer import LOCAL_SUBJECT, LocalIssuer, NotGrantedError, PoolClient, issuer_state, of_state
from asya_local.local_state import LocalStateError

AUTH = {"mode": "jwt", "jwt": {"issuer": "https://login.example.com/x", "audiences": ["api", "other"]}}


def test_the_token_is_the_issuers_with_what_was_asked(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    issuer = LocalIssuer.create(tmp_path, AUTH)
    state = {"gateway_url": "http://127.0.0.1:1", **issuer_state(issuer, AUTH)}
    args = parser().parse_args(["token", "--subject", "ana", "--scope", "a/admin", "--scope", "read", "--role", "ops"])
    assert token_cli.run(args, state) == 0
    token = capsys.readouterr().out.strip()
    public = jwt.PyJWK.from_dict(issuer.jwks()["keys"][0]).key
    claims = jwt.decode(token, public, algorithms=["RS256"], audience="api", issuer="https://login.example.com/x")
    assert (claims["sub"], claims["scope"], claims["groups"]) == ("ana", "a/admin read", ["ops"])
    assert 3590 <= claims["exp"] - time.time() <= 3600


def test_an_expired_token_can_be_asked_for(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    issuer = LocalIssuer.create(tmp_path, AUTH)
    args = parser().parse_args(["token", "--expires-in", "-60"])
    token_cli.run(args, issuer_state(issuer, AUTH))
    claims = jwt.decode(capsys.readouterr().out.strip(), options={"verify_signature": False})
    assert claims["sub"] == token_cli.DEFAULT_SUBJECT
    assert claims["exp"] < time.time()


def test_a_stack_without_sign_in_has_no_token_to_give() -> None:
    with pytest.raises(LocalStateError, match="no sign-in"):
        token_cli.run(parser().parse_args(["token"]), {"gateway_url": "http://127.0.0.1:1", "api_key": "k"})


POOL = "https://cognito-idp.us-east-1.amazonaws.com/us-east-1_Pool"
ADMIN_SCOPE = "asya-n/admin"
POOL_AUTH = {
    "mode": "jwt",
    "jwt": {"issuer": POOL, "audiences": ["people", "machine", "asya-api"], "cognito": True},
    "admins": {"scopes": [ADMIN_SCOPE], "roles": ["admins"]},
}
CLIENTS = [
    PoolClient("people", flows=("code",), scopes=("openid",)),
    PoolClient("machine", flows=("client_credentials",), scopes=(ADMIN_SCOPE,)),
]


def _claims(token: str) -> dict[str, Any]:
    return dict(jwt.decode(token, options={"verify_signature": False}))


def test_as_a_pool_a_users_token_carries_no_scope_its_client_may_not_ask_for(tmp_path: Path) -> None:
    """Cognito grants custom scopes only to the clients allowed them: a user of the people's client is an
    admin by the `admins` group, never by asking for the admin scope."""
    issuer = LocalIssuer.create(tmp_path, POOL_AUTH, CLIENTS)
    state = issuer_state(issuer, POOL_AUTH)
    with pytest.raises(LocalStateError, match=f"does not grant {ADMIN_SCOPE} in a user's token"):
        token_cli.run(parser().parse_args(["token", "--scope", ADMIN_SCOPE]), state)
    claims = _claims(of_state(state).token(subject="ana", scopes=["openid"], roles=["admins"]))  # type: ignore[union-attr]
    assert (claims["client_id"], claims["scope"], claims["cognito:groups"]) == ("people", "openid", ["admins"])
    admin = _claims(issuer.admin_token())  # the local tools': a user of the admins group
    assert (admin["sub"], admin["cognito:groups"], "scope" in admin) == (LOCAL_SUBJECT, ["admins"], False)


def test_as_a_pool_the_admin_scope_comes_in_the_machine_clients_token(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    issuer = LocalIssuer.create(tmp_path, POOL_AUTH, CLIENTS)
    token_cli.run(parser().parse_args(["token", "--client-credentials"]), issuer_state(issuer, POOL_AUTH))
    claims = _claims(capsys.readouterr().out.strip())
    assert (claims["sub"], claims["client_id"], claims["token_use"]) == ("machine", "machine", "access")
    assert claims["scope"] == ADMIN_SCOPE
    assert "cognito:groups" not in claims
    with pytest.raises(NotGrantedError, match="openid"):
        issuer.client_token(["openid"])


def test_a_deployed_pool_is_asked_for_its_machine_clients_token(monkeypatch: pytest.MonkeyPatch) -> None:
    """`asya token --stack`: the outputs name the client and the endpoint, DescribeUserPoolClient gives the
    secret, and the token endpoint gets the client credentials grant with them (HTTP Basic)."""
    token_url = "https://asya-n-111122223333.auth.us-east-1.amazoncognito.com/oauth2/token"
    outputs = {"ApiUrl": "https://api/", "ResultsBucket": "b", "TokenUrl": token_url}
    outputs |= {"MachineClientId": "machine", "UserPoolId": "us-east-1_Pool"}
    session = boto3.Session(region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    cloudformation, cognito = session.client("cloudformation"), session.client("cognito-idp")
    described = {
        "StackName": "asya-n",
        "CreationTime": datetime.now(UTC),
        "StackStatus": "CREATE_COMPLETE",
        "Outputs": [{"OutputKey": k, "OutputValue": v} for k, v in outputs.items()],
    }
    sent: list[Any] = []

    def post(url: str, **request: Any) -> httpx2.Response:
        sent.append((url, request))
        return httpx2.Response(200, json={"access_token": "the-token", "token_type": "Bearer", "expires_in": 3600})

    monkeypatch.setattr(httpx2, "post", post)
    with Stubber(cloudformation) as stacks, Stubber(cognito) as pools:
        stacks.add_response("describe_stacks", {"Stacks": [described]}, {"StackName": "asya-n"})
        pools.add_response(
            "describe_user_pool_client",
            {"UserPoolClient": {"ClientId": "machine", "ClientSecret": "a-client-secret-of-24-chars"}},
            {"UserPoolId": "us-east-1_Pool", "ClientId": "machine"},
        )
        clients = {"cloudformation": cloudformation, "cognito-idp": cognito}
        stubbed = SimpleNamespace(region_name="us-east-1", client=clients.__getitem__)
        assert token_cli.deployed_token("asya-n", [], session=stubbed) == "the-token"
    [(url, request)] = sent
    assert url == token_url
    assert (request["data"], request["auth"]) == (
        {"grant_type": "client_credentials"},
        ("machine", "a-client-secret-of-24-chars"),
    )


def test_a_stack_without_a_pool_of_its_own_says_so() -> None:
    session = boto3.Session(region_name="us-east-1", aws_access_key_id="k", aws_secret_access_key="s")
    cloudformation = session.client("cloudformation")
    described = {
        "StackName": "asya-n",
        "CreationTime": datetime.now(UTC),
        "StackStatus": "CREATE_COMPLETE",
        "Outputs": [{"OutputKey": "ApiUrl", "OutputValue": "u"}, {"OutputKey": "ResultsBucket", "OutputValue": "b"}],
    }
    with Stubber(cloudformation) as stacks:
        stacks.add_response("describe_stacks", {"Stacks": [described]}, {"StackName": "asya-n"})
        stubbed = SimpleNamespace(region_name="us-east-1", client=lambda _service: cloudformation)
        with pytest.raises(DiscoveryError, match="no TokenUrl, MachineClientId, UserPoolId"):
            token_cli.deployed_token("asya-n", [], session=stubbed)

"""`asya token`: a token of the running local stack's issuer, with the subject, scopes and lifetime asked
for; a stack whose mesh has no sign-in says so."""

from __future__ import annotations

import time
from pathlib import Path

import jwt
import pytest

from asya_local import token_cli
from asya_local.cli import parser
from asya_local.issuer import LocalIssuer, issuer_state
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

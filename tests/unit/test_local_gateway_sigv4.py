"""The local gateway server checks a SigV4-signed request as API Gateway's IAM authorization does: a
good signature reaches the function with its signer in `requestContext.identity`; a tampered, expired,
unknown or half-given one is API Gateway's 403 with its message, and the function never runs. Requests
are signed by the CLI's own `IamAuth` and sent over HTTP to the server on loopback."""

from __future__ import annotations

import datetime as dt
import json
import threading
from collections.abc import Iterator
from typing import Any

import boto3
import botocore.auth
import httpx2
import pytest
from botocore.credentials import Credentials
from moto import mock_aws

from asya_local.endpoint.process import free_port
from asya_local.endpoint.signers import signer
from asya_local.functions.gateway_server import Gateway, GatewayServer
from asya_local.functions.iam_auth import MISMATCH, UNKNOWN_KEY, Signer
from asya_local.functions.lambda_shapes import ACCOUNT, REGION
from asya_local.gateway_client import IamAuth
from tests.support.local_gateway import KEY, SPEC

ADMIN = Credentials("asya-local", "asya-local")
SESSION = Credentials("ASIASESSION", "session-secret", "the-session-token")
ADMIN_ARN = f"arn:aws:iam::{ACCOUNT}:user/asya-local-admin"
SESSION_ARN = f"arn:aws:sts::{ACCOUNT}:assumed-role/asya-t-operator/alice"
ISSUED = {  # what the local endpoint would answer for the keys it issued
    ("asya-local", None): Signer("asya-local", ADMIN_ARN, ACCOUNT, "AIDAADMIN"),
    ("ASIASESSION", "the-session-token"): Signer("session-secret", SESSION_ARN, ACCOUNT, "AROAOPERATOR:alice"),
}


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    gateway = Gateway(
        SPEC,
        lambda _id, _cursor, caller: iter([f"data: {caller}\n\n"]),  # the server's own stream, for its caller
        sign_in=lambda event: event["requestContext"]["identity"]["userArn"] or "the key's holder",
        signers=lambda key, token: ISSUED.get((key, token)),
    )
    server = GatewayServer(gateway, free_port())
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        yield server.url
    finally:
        server.stop()
        thread.join(10)


def call(url: str, credentials: Credentials, region: str = REGION, **request: Any) -> httpx2.Response:
    """`POST /api/v1/mesh` signed with `credentials` (the body and headers of `request` sent as signed,
    unless `tamper` changes the body after signing)."""
    tamper = request.pop("tamper", None)
    auth = IamAuth(credentials, region)
    with httpx2.Client(base_url=url, trust_env=False, timeout=20) as client:
        built = client.build_request("POST", "/api/v1/mesh?wait=1", json={"flow": "f", "payload": {"n": 1}})
        signed = next(auth.auth_flow(built))
        if tamper is not None:
            kept = {name: value for name, value in signed.headers.items() if name != "content-length"}
            signed = client.build_request("POST", signed.url, content=tamper, headers=kept)
        return client.send(signed)


def test_a_good_signature_reaches_the_function_with_its_signer_as_the_caller(url: str) -> None:
    answer = call(url, ADMIN)
    assert answer.status_code == 200, answer.text
    identity = answer.json()["requestContext"]["identity"]
    assert (identity["userArn"], identity["accountId"], identity["accessKey"]) == (ADMIN_ARN, ACCOUNT, "asya-local")
    assert identity["caller"] == "AIDAADMIN"
    assert identity["apiKey"] is None

    identity = call(url, SESSION).json()["requestContext"]["identity"]
    assert (identity["userArn"], identity["caller"]) == (SESSION_ARN, "AROAOPERATOR:alice"), "a role session"


def test_a_body_changed_after_signing_is_refused_with_api_gateways_403(url: str) -> None:
    answer = call(url, ADMIN, tamper=b'{"flow": "f", "payload": {"n": 2}}')
    assert (answer.status_code, answer.json()) == (403, {"message": MISMATCH})
    assert answer.headers["x-amzn-ErrorType"] == "ForbiddenException"


def test_a_wrong_secret_an_unknown_key_or_a_stolen_session_key_is_refused(url: str) -> None:
    assert call(url, Credentials("asya-local", "guessed")).json() == {"message": MISMATCH}
    assert call(url, Credentials("AKIANOBODY", "x")).json() == {"message": UNKNOWN_KEY}
    without_its_token = call(url, Credentials("ASIASESSION", "session-secret"))
    assert (without_its_token.status_code, without_its_token.json()) == (403, {"message": UNKNOWN_KEY})


def test_a_signature_older_than_five_minutes_or_for_another_region_is_refused(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert call(url, ADMIN, region="eu-west-1").json() == {"message": "Credential should be scoped to a valid region. "}
    signed_at = dt.datetime.now(dt.UTC).replace(tzinfo=None) - dt.timedelta(minutes=6)
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: signed_at)
    answer = call(url, ADMIN)
    assert answer.status_code == 403
    assert answer.json()["message"].startswith(f"Signature expired: {signed_at:%Y%m%dT%H%M%SZ} is now earlier than")


def test_a_request_without_a_signature_or_the_key_is_refused_and_the_key_still_works(url: str) -> None:
    with httpx2.Client(base_url=url, trust_env=False, timeout=20) as client:
        half_signed = client.post("/api/v1/mesh", headers={"Authorization": "AWS4-HMAC-SHA256 Credential=asya-local/"})
        assert (half_signed.status_code, half_signed.json()) == (
            403,
            {"message": "Authorization header requires 'Signature' parameter."},
        )
        assert client.post("/api/v1/mesh").status_code == 403
        keyed = client.post("/api/v1/mesh", headers={"x-api-key": KEY})
        assert keyed.status_code == 200
        assert keyed.json()["requestContext"]["identity"]["userArn"] is None


def test_the_endpoint_names_the_holder_of_a_user_key_or_a_role_session_and_no_one_else() -> None:
    with mock_aws():
        iam = boto3.client("iam")
        iam.create_user(UserName="bob")
        key = iam.create_access_key(UserName="bob")["AccessKey"]
        trust = {"Statement": [{"Effect": "Allow", "Principal": {"AWS": ACCOUNT}, "Action": "sts:AssumeRole"}]}
        role = iam.create_role(RoleName="operator", AssumeRolePolicyDocument=json.dumps(trust))["Role"]
        session = boto3.client("sts").assume_role(RoleArn=role["Arn"], RoleSessionName="alice")["Credentials"]

        user = signer(ACCOUNT, key["AccessKeyId"], None)
        assert user is not None
        assert (user["arn"], user["secret_access_key"]) == (f"arn:aws:iam::{ACCOUNT}:user/bob", key["SecretAccessKey"])
        assert signer(ACCOUNT, key["AccessKeyId"], "a-token") is None, "a user's key carries no session token"
        held = signer(ACCOUNT, session["AccessKeyId"], session["SessionToken"])
        assert held is not None
        assert (held["arn"], held["caller"]) == (
            f"arn:aws:sts::{ACCOUNT}:assumed-role/operator/alice",
            f"{role['RoleId']}:alice",
        )
        assert signer(ACCOUNT, session["AccessKeyId"], "another-token") is None
        iam.update_access_key(UserName="bob", AccessKeyId=key["AccessKeyId"], Status="Inactive")
        assert signer(ACCOUNT, key["AccessKeyId"], None) is None, "a deactivated key signs nothing"


def test_a_follow_streamed_by_the_server_is_its_signers_or_the_key_holders(url: str) -> None:
    """The server streams a task's events itself, for the caller the function would see (`sign_in`): a
    SigV4 signer's follow shows that signer's tasks only, as the function's answer would."""
    with httpx2.Client(base_url=url, trust_env=False, timeout=20) as client:
        signed = client.get("/api/v1/mesh/t-1/events", auth=IamAuth(SESSION, REGION))
        assert (signed.headers["content-type"], signed.text) == ("text/event-stream", f"data: {SESSION_ARN}\n\n")
        keyed = client.get("/api/v1/mesh/t-1/events", headers={"x-api-key": KEY})
        assert keyed.text == "data: the key's holder\n\n"
        refused = client.get("/api/v1/mesh/t-1/events", auth=IamAuth(Credentials("asya-local", "wrong"), REGION))
        assert refused.status_code == 403

"""Who a request's caller is when API Gateway authorized it (IAM or the API key), and what it sees."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from asya.variables import ConfigError
from asya_cdk.gateway_config import GatewayConfig
from asya_gateway.callers import OPERATOR, AuthSettings, Caller, aws_caller

ADMIN_ROLE = "arn:aws:sts::111122223333:assumed-role/MeshAdmin/*"


def _event(**identity: str | None) -> dict[str, object]:
    return {"requestContext": {"identity": identity}}


def test_an_aws_principal_owns_its_tasks_and_is_admin_only_when_declared() -> None:
    auth = AuthSettings.parse(f'{{"mode": "iam", "admins": {{"principals": ["{ADMIN_ROLE}"]}}}}')
    admin = aws_caller(_event(userArn="arn:aws:sts::111122223333:assumed-role/MeshAdmin/ana"), auth)
    user = aws_caller(_event(userArn="arn:aws:iam::111122223333:user/bo"), auth)
    assert admin == Caller(
        owner="iam:arn:aws:sts::111122223333:assumed-role/MeshAdmin",
        admin=True,
        principal="arn:aws:sts::111122223333:assumed-role/MeshAdmin/ana",
    )
    assert user == Caller(owner="iam:arn:aws:iam::111122223333:user/bo", admin=False)
    assert user.sees("iam:arn:aws:iam::111122223333:user/bo")
    assert (user.sees(admin.owner), user.sees(None)) == (False, False)
    assert (admin.sees(user.owner), admin.sees(None)) == (True, True)


def test_the_api_keys_holder_is_the_operator_and_nobody_unnamed_sees_anything() -> None:
    caller = aws_caller(_event(apiKeyId="k123"), AuthSettings(mode="api_key"))
    assert caller == Caller(owner="key:k123", admin=True)
    nobody = aws_caller(_event(), AuthSettings())
    assert nobody.owner is None
    assert (nobody.sees(None), nobody.sees("iam:x")) == (False, False)
    assert OPERATOR.sees(None)


def test_a_request_with_the_key_and_no_principal_is_the_keys_holder_in_any_mode() -> None:
    """The local stack's stand-in for API Gateway checks the mesh's key whatever `gateway.auth` says; on
    AWS, a request IAM authorized always names its principal, which then decides."""
    assert aws_caller(_event(apiKeyId="local"), AuthSettings()) == Caller(owner="key:local", admin=True)
    signed = aws_caller(_event(apiKeyId="local", userArn="arn:aws:iam::111122223333:user/bo"), AuthSettings())
    assert signed == Caller(owner="iam:arn:aws:iam::111122223333:user/bo", admin=False)


LOADER = "arn:aws:sts::111122223333:assumed-role/Loader"


@pytest.mark.parametrize("session", ["ecs-task-0b7c9d", "i-0123456789abcdef0", "ci-run-812"])
def test_every_session_of_a_role_is_the_role_and_is_kept_as_who_created(session: str) -> None:
    """ECS names a task role's session after the task, EC2 after the instance, a CI job as it likes:
    a restarted caller comes back under a new session and must find its tasks."""
    caller = aws_caller(_event(userArn=f"{LOADER}/{session}"), AuthSettings())
    assert caller == Caller(owner=f"iam:{LOADER}", admin=False, principal=f"{LOADER}/{session}")
    assert caller.sees(f"iam:{LOADER}")


def test_with_ownership_session_each_session_is_a_caller_of_its_own() -> None:
    auth = AuthSettings.parse('{"mode": "iam", "ownership": "session"}')
    caller = aws_caller(_event(userArn=f"{LOADER}/ci-run-812"), auth)
    assert caller == Caller(owner=f"iam:{LOADER}/ci-run-812")
    assert not caller.sees(f"iam:{LOADER}")


@pytest.mark.parametrize(
    ("declared", "admin"),
    [
        ("arn:aws:sts::111122223333:assumed-role/MeshAdmin/*", True),  # every session, as the docs show it
        ("arn:aws:sts::111122223333:assumed-role/MeshAdmin", True),  # the role, as its tasks' owner says it
        ("arn:aws:iam::111122223333:role/MeshAdmin", True),  # the role's own ARN
        ("arn:aws:iam::111122223333:role/ops/MeshAdmin", True),  # ... with its path, which sessions leave out
        ("arn:aws:iam::111122223333:role/Mesh*", True),
        ("arn:aws:sts::111122223333:assumed-role/MeshAdmin/ana", True),  # this session only
        ("arn:aws:sts::111122223333:assumed-role/MeshAdmin/bo", False),
        ("arn:aws:iam::111122223333:role/ops/*", False),  # a path: the session cannot say it is on it
        ("arn:aws:iam::111122223333:role/ops/Mesh*", False),
        ("arn:aws:iam::444455556666:role/MeshAdmin", False),  # another account's role of that name
        ("arn:aws:iam::111122223333:user/MeshAdmin", False),
    ],
)
def test_an_admin_role_is_matched_by_any_session_of_it(declared: str, admin: bool) -> None:
    auth = AuthSettings(admin_principals=(declared,))
    caller = aws_caller(_event(userArn="arn:aws:sts::111122223333:assumed-role/MeshAdmin/ana"), auth)
    assert caller.admin is admin


def test_the_caller_is_read_where_either_payload_format_names_it() -> None:
    """The REST API names an IAM caller in `requestContext.identity`; an HTTP API names it in
    `requestContext.authorizer.iam` in payload format 2.0, and may there in 1.0 too: either is read."""
    in_identity = _event(userArn=f"{LOADER}/job-7")
    in_authorizer = {
        "requestContext": {
            "identity": {"userArn": None, "sourceIp": "192.0.2.7"},
            "authorizer": {"iam": {"accountId": "111122223333", "userArn": f"{LOADER}/job-7"}},
        }
    }
    expected = Caller(owner=f"iam:{LOADER}", principal=f"{LOADER}/job-7")
    assert aws_caller(in_identity, AuthSettings()) == aws_caller(in_authorizer, AuthSettings()) == expected
    jwt_shaped = {"requestContext": {"authorizer": {"claims": None, "scopes": None}}}
    assert aws_caller(jwt_shaped, AuthSettings()) == Caller(owner=None)


@pytest.mark.parametrize(
    ("gateway", "ownership", "public_card"),
    [
        ({}, "role", "minimal"),
        ({"ownership": "session", "a2a": {"public_card": "off"}}, "session", "off"),
        ({"auth": "jwt", "jwt": {"issuer": "https://login.example.com", "audiences": ["a"]}}, "role", "minimal"),
        ({"auth": "api_key", "a2a": {"public_card": "full"}}, "role", "full"),
    ],
)
def test_the_mesh_files_ownership_and_public_card_reach_the_function(
    gateway: dict[str, object], ownership: str, public_card: str
) -> None:
    document = GatewayConfig.model_validate(gateway).auth_document()
    auth = AuthSettings.parse(json.dumps(document))
    assert (auth.ownership, auth.public_card) == (ownership, public_card)


@pytest.mark.parametrize("raw", ["{", '{"mode": "cognito"}', "[]", '{"ownership": "user"}', '{"public_card": "yes"}'])
def test_a_bad_auth_variable_is_refused_naming_it(raw: str) -> None:
    with pytest.raises(ConfigError, match="ASYA_GATEWAY_AUTH"):
        AuthSettings.parse(raw)


def test_a_mesh_without_sign_in_never_loads_the_token_library() -> None:
    """PyJWT and its cryptography are about a sixth of the API function's import time: a cold start of
    an `iam` or `api_key` mesh does not pay for them, only a `jwt` mesh's first verification does."""
    loads = "import sys, asya_gateway.api; print('jwt' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", loads], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.strip() == "False"

"""Who a request's caller is when API Gateway authorized it (IAM or the API key), and what it sees."""

from __future__ import annotations

import subprocess
import sys

import pytest

from asya.variables import ConfigError
from asya_gateway.callers import OPERATOR, AuthSettings, Caller, aws_caller

ADMIN_ROLE = "arn:aws:sts::111122223333:assumed-role/MeshAdmin/*"


def _event(**identity: str | None) -> dict[str, object]:
    return {"requestContext": {"identity": identity}}


def test_an_aws_principal_owns_its_tasks_and_is_admin_only_when_declared() -> None:
    auth = AuthSettings.parse(f'{{"mode": "iam", "admins": {{"principals": ["{ADMIN_ROLE}"]}}}}')
    admin = aws_caller(_event(userArn="arn:aws:sts::111122223333:assumed-role/MeshAdmin/ana"), auth)
    user = aws_caller(_event(userArn="arn:aws:iam::111122223333:user/bo"), auth)
    assert admin == Caller(owner="iam:arn:aws:sts::111122223333:assumed-role/MeshAdmin/ana", admin=True)
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


@pytest.mark.parametrize("raw", ["{", '{"mode": "cognito"}', "[]"])
def test_a_bad_auth_variable_is_refused_naming_it(raw: str) -> None:
    with pytest.raises(ConfigError, match="ASYA_GATEWAY_AUTH"):
        AuthSettings.parse(raw)


def test_a_mesh_without_sign_in_never_loads_the_token_library() -> None:
    """PyJWT and its cryptography are about a sixth of the API function's import time: a cold start of
    an `iam` or `api_key` mesh does not pay for them, only a `jwt` mesh's first verification does."""
    loads = "import sys, asya_gateway.api; print('jwt' in sys.modules)"
    loaded = subprocess.run([sys.executable, "-c", loads], capture_output=True, text=True, check=True, timeout=60)
    assert loaded.stdout.strip() == "False"

"""Who holds an access key the local endpoint issued, for the local gateway's SigV4 check.

API Gateway's IAM authorization knows the caller's secret through IAM; locally the endpoint's process
holds every credential (the administrator's fixed key, IAM users' keys, role sessions `AssumeRole`
handed out), so the gateway server asks it here (`POST /asya-local/signer`, on loopback) and verifies
the signature itself. The answer carries the secret, as moto's own state does to anyone on loopback.
"""

from __future__ import annotations

from typing import Any

from moto.iam.models import iam_backends
from moto.sts.models import sts_backends

from asya_local.functions.iam_auth import Signer
from asya_local.functions.lambda_shapes import ACCOUNT

PARTITION = "aws"


def signer(account: str, access_key_id: str, session_token: str | None) -> dict[str, str] | None:
    """The holder of an access key (with a role session's token): its secret, its ARN, its account, and
    `caller` as API Gateway names it (an IAM user's id, or `<role id>:<session name>`); None if the
    endpoint issued no such active key (or the token is not the session's)."""
    if session_token is None:
        return _user_key(account, access_key_id)
    for session in sts_backends[account][PARTITION].assumed_roles:
        if session.access_key_id == access_key_id and session.session_token == session_token:
            return _holder(session.secret_access_key, session.arn, account, session.user_id)
    return None


def _user_key(account: str, access_key_id: str) -> dict[str, str] | None:
    iam: Any = iam_backends[account][PARTITION]
    for user in iam.list_users("/", None, None):
        for key in user.access_keys:
            if key.access_key_id == access_key_id and key.status == "Active":
                return _holder(key.secret_access_key, user.arn, account, user.id)
    return None


def _holder(secret: str, arn: str, account: str, caller: str) -> dict[str, str]:
    return {"secret_access_key": secret, "arn": arn, "account": account, "caller": caller}


def in_process_signer(access_key_id: str, session_token: str | None) -> Signer | None:
    """`signer` as the endpoint's own checks take it (the local Event API's: `asya_local.endpoint.event_api`)."""
    held = signer(ACCOUNT, access_key_id, session_token)
    return Signer(**held) if held is not None else None

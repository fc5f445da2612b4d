"""The local endpoint refuses the Cognito app clients Cognito refuses (`asya_local.endpoint.moto_cognito`):
a name outside Cognito's ASCII pattern, a callback over plain http to a host other than loopback, one
with a fragment. A registration of an MCP host (`asya_gateway.oauth`) that would fail on AWS fails here."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from botocore.exceptions import ClientError

from asya_local.roles import local_client


@pytest.fixture
def pool(patched_endpoint: str) -> tuple[Any, str]:
    cognito = local_client("cognito-idp", patched_endpoint)
    return cognito, cognito.create_user_pool(PoolName=f"asya-unit-{uuid.uuid4().hex[:12]}")["UserPool"]["Id"]


@pytest.mark.parametrize(
    "settings",
    [
        {"ClientName": "mcp-Café"},
        {"ClientName": "mcp-host/1"},
        {"ClientName": "x" * 129},
        {"ClientName": "mcp-host", "CallbackURLs": ["http://example.com/cb"]},
        {"ClientName": "mcp-host", "CallbackURLs": ["https://example.com/cb#frag"]},
        {"ClientName": "mcp-host", "CallbackURLs": ["/relative/cb"]},
    ],
    ids=["non-ASCII name", "slash in name", "long name", "http elsewhere", "fragment", "relative"],
)
def test_a_client_cognito_refuses_is_refused_and_not_made(pool: tuple[Any, str], settings: dict[str, Any]) -> None:
    cognito, pool_id = pool
    with pytest.raises(ClientError) as refused:
        cognito.create_user_pool_client(UserPoolId=pool_id, **settings)
    assert refused.value.response["Error"]["Code"] == "InvalidParameterException"
    assert cognito.list_user_pool_clients(UserPoolId=pool_id, MaxResults=60)["UserPoolClients"] == []


def test_what_cognito_takes_is_made(pool: tuple[Any, str]) -> None:
    cognito, pool_id = pool
    callbacks = ["http://localhost:8080/cb", "http://127.0.0.1:5/cb", "http://[::1]:7/cb", "https://claude.ai/cb"]
    made = cognito.create_user_pool_client(
        UserPoolId=pool_id, ClientName="mcp-Claude Code  asya  +=,.@-_", CallbackURLs=[*callbacks, "myapp://cb"]
    )["UserPoolClient"]
    assert made["CallbackURLs"] == [*callbacks, "myapp://cb"]
    with pytest.raises(ClientError) as refused:
        cognito.update_user_pool_client(UserPoolId=pool_id, ClientId=made["ClientId"], ClientName="Café")
    assert refused.value.response["Error"]["Code"] == "InvalidParameterException"

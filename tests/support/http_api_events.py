"""What an HTTP API hands its Lambda integration with payload format 1.0 (`gateway.api: http`), shaped as
AWS documents it: the REST API's proxy event, with the stage `$default`, the path without a stage,
lower-case header names and, on a route with IAM authorization, the caller in `requestContext.identity`."""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import parse_qsl, urlsplit

API_ID = "abc123defg"
HOST = f"{API_ID}.execute-api.us-east-1.amazonaws.com"
IDENTITY_FIELDS = (
    "accessKey",
    "accountId",
    "caller",
    "cognitoAuthenticationProvider",
    "cognitoAuthenticationType",
    "cognitoIdentityId",
    "cognitoIdentityPoolId",
    "principalOrgId",
    "user",
    "userArn",
)


def http_api_event(
    method: str,
    target: str,
    body: bytes = b"",
    headers: dict[str, str] | None = None,
    *,
    arrived_seconds_ago: float = 0.0,
    identity: dict[str, str] | None = None,
) -> dict[str, Any]:
    """`target` is the path and query as the client sent them; `identity` what IAM authorization fills."""
    split = urlsplit(target)
    pairs = parse_qsl(split.query, keep_blank_values=True)
    sent = {"host": HOST, "user-agent": "unit", "x-forwarded-proto": "https", "content-length": str(len(body))}
    sent.update({name.lower(): value for name, value in (headers or {}).items()})
    queries: dict[str, list[str]] = {}
    for name, value in pairs:
        queries.setdefault(name, []).append(value)
    arrived = time.time() - arrived_seconds_ago
    caller = dict.fromkeys(IDENTITY_FIELDS) | {"sourceIp": "192.0.2.7", "userAgent": "unit"} | (identity or {})
    return {
        "version": "1.0",
        "resource": "/{proxy+}",
        "path": split.path,
        "httpMethod": method,
        "headers": sent,
        "multiValueHeaders": {name: [value] for name, value in sent.items()},
        "queryStringParameters": {name: values[-1] for name, values in queries.items()} or None,
        "multiValueQueryStringParameters": queries or None,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": API_ID,
            "authorizer": {"claims": None, "scopes": None},
            "domainName": HOST,
            "domainPrefix": API_ID,
            "extendedRequestId": "Yx1abcdefghijk=",
            "httpMethod": method,
            "identity": caller,
            "path": split.path,
            "protocol": "HTTP/1.1",
            "requestId": "Yx1abcdefghijk=",
            "requestTime": time.strftime("%d/%b/%Y:%H:%M:%S +0000", time.gmtime(arrived)),
            "requestTimeEpoch": int(arrived * 1000),
            "resourceId": None,
            "resourcePath": "/{proxy+}",
            "stage": "$default",
        },
        "pathParameters": {"proxy": split.path.lstrip("/")} if split.path != "/" else None,
        "stageVariables": None,
        "body": body.decode() if body else None,
        "isBase64Encoded": False,
    }

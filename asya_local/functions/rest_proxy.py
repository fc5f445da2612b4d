"""What API Gateway's REST API does around a Lambda proxy integration, minus the network.

An HTTP request becomes the proxy event (payload format 1.0) that API Gateway would hand the
function, and the function's result becomes the HTTP response API Gateway would send: the status
code, `headers` and `multiValueHeaders` merged, a base64 body decoded. API Gateway's own answers
(no API key, a failed or malformed invocation) keep its status codes and `{"message": ...}` bodies.

Request bodies pass as UTF-8 text, undecodable bytes replaced, as API Gateway passes them to an API
without binary media types: the gateway's API declares none (and moto would not keep them if it did).

The local server is reached as a custom domain would be: the path carries no stage, the `Host`
header is the domain name, and `X-Forwarded-Proto` says `http`, so URLs the function builds from
them point back at the local server.
"""

from __future__ import annotations

import base64
import binascii
import json
import time
import uuid
from dataclasses import dataclass, field
from email.utils import formatdate
from typing import Any
from urllib.parse import parse_qsl, unquote, urlsplit

from asya_local.functions.lambda_shapes import ACCOUNT

STAGE = "local"
API_KEY_HEADER = "x-api-key"
_HOP_BY_HOP = {"connection", "content-length", "keep-alive", "transfer-encoding"}


@dataclass(frozen=True)
class HttpRequest:
    method: str
    target: str  # the request line's path and query, as sent
    headers: list[tuple[str, str]]
    body: bytes = b""
    source_ip: str = "127.0.0.1"
    request_id: str = field(default_factory=lambda: str(uuid.uuid4()))

    @property
    def path(self) -> str:
        return unquote(urlsplit(self.target).path) or "/"

    @property
    def query(self) -> list[tuple[str, str]]:
        return parse_qsl(urlsplit(self.target).query, keep_blank_values=True)

    def header(self, name: str) -> str | None:
        """The last value of a header, by case-insensitive name (API Gateway's `headers` rule)."""
        values = [value for key, value in self.headers if key.lower() == name.lower()]
        return values[-1] if values else None


@dataclass(frozen=True)
class HttpResponse:
    status: int
    headers: list[tuple[str, str]]
    body: bytes


class MalformedResponseError(ValueError):
    """The function returned something API Gateway cannot turn into a response (it answers 502)."""


def proxy_event(request: HttpRequest, rest_api_id: str, signer: dict[str, str] | None = None) -> dict[str, Any]:
    """The event API Gateway hands a `/{proxy+}` Lambda proxy integration for this request; `signer`:
    who signed it, when IAM authorized it (`accessKey`, `accountId`, `caller`, `userArn`)."""
    path, now = request.path, time.time()
    headers = [*request.headers, *_forwarded(request)]
    resource = "/" if path == "/" else "/{proxy+}"
    api_key = request.header(API_KEY_HEADER)
    return {
        "resource": resource,
        "path": path,
        "httpMethod": request.method,
        "headers": _last_values(headers),
        "multiValueHeaders": _all_values(headers),
        "queryStringParameters": _last_values(request.query),
        "multiValueQueryStringParameters": _all_values(request.query),
        "pathParameters": None if path == "/" else {"proxy": path.lstrip("/")},
        "stageVariables": None,
        "requestContext": {
            "accountId": ACCOUNT,
            "apiId": rest_api_id,
            "domainName": request.header("host") or "127.0.0.1",
            "domainPrefix": (request.header("host") or "127.0.0.1").split(".")[0],
            "extendedRequestId": request.request_id,
            "httpMethod": request.method,
            "identity": {
                "apiKey": api_key,
                "apiKeyId": "local" if api_key else None,
                "sourceIp": request.source_ip,
                "userAgent": request.header("user-agent"),
                "accessKey": None,
                "accountId": None,
                "caller": None,
                "user": None,
                "userArn": None,
                **(signer or {}),
            },
            "path": path,
            "protocol": "HTTP/1.1",
            "requestId": request.request_id,
            "requestTime": formatdate(now, usegmt=True),
            "requestTimeEpoch": int(now * 1000),
            "resourceId": "local",
            "resourcePath": resource,
            "stage": STAGE,
        },
        "body": request.body.decode("utf-8", errors="replace") if request.body else None,
        "isBase64Encoded": False,
    }


def http_response(result: Any) -> HttpResponse:
    """API Gateway's reading of a proxy integration's result; `MalformedResponseError` if it has none."""
    if not isinstance(result, dict) or "statusCode" not in result:
        raise MalformedResponseError(f"no statusCode in the function's result: {str(result)[:200]}")
    try:
        status = int(result["statusCode"])
        body = result.get("body") or ""
        if not isinstance(body, str):
            raise MalformedResponseError(f"the body is a {type(body).__name__}, not a string")
        raw = base64.b64decode(body, validate=True) if result.get("isBase64Encoded") else body.encode("utf-8")
    except (TypeError, ValueError, binascii.Error) as exc:
        raise MalformedResponseError(str(exc)) from exc
    headers = _merged_headers(result.get("headers") or {}, result.get("multiValueHeaders") or {})
    if not any(name.lower() == "content-type" for name, _ in headers):
        headers.append(("Content-Type", "application/json"))
    return HttpResponse(status, headers, raw)


def gateway_answer(status: int, message: str, request_id: str = "") -> HttpResponse:
    """One of API Gateway's own responses (403 without an API key, 429 over the stage's throttle, 502
    when the function failed)."""
    headers = [("Content-Type", "application/json"), ("x-amzn-ErrorType", _ERROR_TYPES.get(status, "Error"))]
    if request_id:
        headers.append(("x-amzn-RequestId", request_id))
    return HttpResponse(status, headers, json.dumps({"message": message}).encode())


_ERROR_TYPES = {403: "ForbiddenException", 429: "ThrottlingException", 502: "InternalServerErrorException"}


def _forwarded(request: HttpRequest) -> list[tuple[str, str]]:
    """The headers API Gateway adds, so code that builds URLs from them gets the local ones."""
    port = (request.header("host") or "").rpartition(":")[2]
    added = [("X-Forwarded-For", request.source_ip), ("X-Forwarded-Proto", "http")]
    return [*added, ("X-Forwarded-Port", port)] if port.isdigit() else added


def _last_values(pairs: list[tuple[str, str]]) -> dict[str, str] | None:
    return dict(pairs) or None


def _all_values(pairs: list[tuple[str, str]]) -> dict[str, list[str]] | None:
    grouped: dict[str, list[str]] = {}
    for key, value in pairs:
        grouped.setdefault(key, []).append(value)
    return grouped or None


def _merged_headers(single: dict[str, Any], multi: dict[str, Any]) -> list[tuple[str, str]]:
    """Both maps, merged: a name and value given in both appears once (API Gateway's rule)."""
    merged = [(name, str(value)) for name, values in multi.items() for value in values]
    seen = {(name.lower(), value) for name, value in merged}
    merged += [(name, str(value)) for name, value in single.items() if (name.lower(), str(value)) not in seen]
    return [(name, value) for name, value in merged if name.lower() not in _HOP_BY_HOP]

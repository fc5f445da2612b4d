"""What the gateway function answers before Powertools routes a request, in the shape of the routes'
errors: the paths anyone may read, a sign-in refusal with the challenge that says where to sign in, a
body that is not JSON or nests too deep; and the API's URL as the request names it."""

from __future__ import annotations

import base64
import os
from collections.abc import Mapping
from typing import Any

import orjson
from aws_lambda_powertools.event_handler import content_types

from asya import variables
from asya.names import OAUTH_REGISTER_PATH
from asya_gateway.issuers import SignInRefusedError
from asya_gateway.nesting import MAX_NESTING, too_deep

WELL_KNOWN = "/.well-known"
DEFAULT_STAGE = "$default"  # an HTTP API's stage (`gateway.api: http`): not part of its URL


def base_url_of(event: dict[str, Any]) -> str:
    return url_base(event.get("headers") or {}, (event.get("requestContext") or {}).get("stage"))


def url_base(headers: Mapping[str, str], stage: str | None) -> str:
    configured = variables.PUBLIC_URL.read(os.environ)
    if configured:
        return configured.rstrip("/")
    headers = {str(key).lower(): value for key, value in headers.items()}
    host = headers.get("host", "localhost")
    local = host.startswith(("127.0.0.1", "localhost", "[::1]"))
    scheme = headers.get("x-forwarded-proto", "http" if local else "https")
    # a REST API's stage is in its URL; an HTTP API's `$default` stage is served at the root
    prefix = f"/{stage}" if ".execute-api." in host and stage and stage != DEFAULT_STAGE else ""
    return f"{scheme}://{host}{prefix}"


def raw_body(event: dict[str, Any]) -> bytes:
    body = event.get("body") or ""
    if event.get("isBase64Encoded"):
        try:
            return base64.b64decode(body)
        except ValueError:
            return b"\x00"  # not JSON: a parse error
    return str(body).encode("utf-8", "surrogatepass")


def is_open(event: dict[str, Any]) -> bool:
    """What anyone may read: liveness, and where to sign in; and what an MCP host sends before anyone
    has signed in, its registration (`asya_gateway.oauth`, which 404s it where the mesh registers none)."""
    path, method = str(event.get("path") or ""), event.get("httpMethod")
    if method == "POST":
        return path == OAUTH_REGISTER_PATH
    return method == "GET" and (path == "/health" or path.startswith(f"{WELL_KNOWN}/"))


def signin_refused(event: dict[str, Any], refusal: SignInRefusedError) -> dict[str, Any]:
    """401 naming why, with the challenge the MCP authorization spec asks for: where the protected
    resource's metadata is, so a client finds the issuer to sign in with (503 if the keys are away)."""
    challenge = {"WWW-Authenticate": _challenge(event, refusal)} if refusal.status == 401 else {}
    return answered_early(refusal.status, str(refusal), {"reason": refusal.reason}, challenge)


def _challenge(event: dict[str, Any], refusal: SignInRefusedError) -> str:
    """`WWW-Authenticate` (RFC 6750, RFC 9728): no error code when no token was sent."""
    metadata = f'resource_metadata="{_quotable(base_url_of(event))}{WELL_KNOWN}/oauth-protected-resource"'
    if refusal.reason == "missing_token":
        return f"Bearer {metadata}"
    return f'Bearer error="invalid_token", error_description="{_quotable(str(refusal))}", {metadata}'


def _quotable(text: str) -> str:
    """Text as RFC 6750 allows it in a quoted value (printable ASCII but `"` and `\\`): nothing a
    request sends (a token, a Host) can end the header or start another."""
    return "".join(c if " " <= c <= "~" and c not in '"\\' else " " for c in text.replace('"', "'"))[:200]


def not_json(event: dict[str, Any]) -> dict[str, Any] | None:
    """A body that says it is not JSON gets 415 before Powertools would read it as a form."""
    if not event.get("body"):
        return None
    headers = {str(name).lower(): value for name, value in (event.get("headers") or {}).items()}
    media_type = str(headers.get("content-type") or "").split(";")[0].strip().lower()
    if not media_type or media_type == content_types.APPLICATION_JSON or media_type.endswith("+json"):
        return None
    return answered_early(415, f"content-type: the body must be application/json, not {media_type[:80]!r}")


def too_deep_body(event: dict[str, Any]) -> dict[str, Any] | None:
    """A body nested deeper than the gateway takes (`asya_gateway.nesting`) gets 400, at every door."""
    if not event.get("body") or not too_deep(raw_body(event)):
        return None
    return answered_early(400, f"body: arrays and objects nest deeper than {MAX_NESTING} levels")


def answered_early(
    status: int, message: str, more: dict[str, Any] | None = None, headers: dict[str, str] | None = None
) -> dict[str, Any]:
    """A proxy response given before the resolver runs, in the shape of the routes' errors."""
    return {
        "statusCode": status,
        "headers": {"Content-Type": content_types.APPLICATION_JSON, **(headers or {})},
        "body": orjson.dumps({"statusCode": status, "message": message, **(more or {})}).decode(),
        "isBase64Encoded": False,
    }

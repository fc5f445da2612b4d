"""Cross-origin calls to the gateway from a browser (`gateway.cors_origins`, docs/callers.md).

One set of rules for the three places that answer them, so a browser sees the same answers on AWS and on
the local stack: the API (the HTTP API's CORS configuration, the REST API's preflight methods,
`asya_cdk`), the gateway function (`asya_gateway.api`, which adds the allowed origin to every answer it
gives, a 401 included, so a page can read why it was refused) and the local stand-in for API Gateway
(`asya_local.functions.gateway_server`, which answers preflights as API Gateway does).

Origins are listed one by one (no `*`) and credentials are never allowed: the gateway reads no cookies,
a caller's proof (a bearer token, a SigV4 signature, an API key) is a header the page sets itself.
"""

from __future__ import annotations

from collections.abc import Mapping

# what a preflight may ask for: the methods the gateway serves, and the headers its callers send
ALLOW_METHODS = ("GET", "POST", "DELETE", "OPTIONS")
ALLOW_HEADERS = (
    "authorization",
    "content-type",
    "idempotency-key",
    "last-event-id",
    "a2a-version",
    "x-api-key",
    "x-amz-date",
    "x-amz-security-token",
    "x-amz-content-sha256",
)
EXPOSE_HEADERS = ("www-authenticate",)  # why a 401 refused: a page reads it to find where to sign in
MAX_AGE_SECONDS = 600  # a browser asks again after ten minutes (Chromium keeps a preflight at most 2 h)
ORIGIN_PATTERN = r"^(https://[a-z0-9.-]+|http://(localhost|127\.0\.0\.1))(:[0-9]{1,5})?$"


def parse_origins(raw: str) -> tuple[str, ...]:
    """The origins of `ASYA_GATEWAY_CORS_ORIGINS` (comma-separated)."""
    return tuple(origin.strip() for origin in raw.split(",") if origin.strip())


def allowed_origin(headers: Mapping[str, str], origins: tuple[str, ...]) -> str | None:
    """The request's `Origin`, when it is one of `origins`."""
    origin = next((value for name, value in headers.items() if name.lower() == "origin"), None)
    return origin if origin in origins else None


def answer_headers(origin: str) -> dict[str, str]:
    """What an answer to a request from an allowed origin carries."""
    return {
        "Access-Control-Allow-Origin": origin,
        "Access-Control-Expose-Headers": ",".join(EXPOSE_HEADERS),
        "Vary": "Origin",
    }


def preflight_headers(method: str, headers: Mapping[str, str], origins: tuple[str, ...]) -> dict[str, str] | None:
    """The headers of a 204 answering a preflight (`OPTIONS` with `Access-Control-Request-Method`) from
    an allowed origin; None for any other request, which is answered as it would be without CORS."""
    asked = next((value for name, value in headers.items() if name.lower() == "access-control-request-method"), None)
    origin = allowed_origin(headers, origins)
    if method != "OPTIONS" or asked is None or origin is None:
        return None
    return {
        **answer_headers(origin),
        "Access-Control-Allow-Methods": ",".join(ALLOW_METHODS),
        "Access-Control-Allow-Headers": ",".join(ALLOW_HEADERS),
        "Access-Control-Max-Age": str(MAX_AGE_SECONDS),
    }

"""The local administrator's signatures, verified: whoever names its key must hold its secret.

moto authenticates a request by its access key id alone (`asya_local.endpoint.moto_iam` turns its
signature check off: it refuses some correctly signed requests), so with a key id anyone can name, any
local process, or a web page through a browser, acted as the administrator. The secret is now drawn
per endpoint (`LocalEndpoint`), and a request that names the administrator's key is checked here, on
the raw request before moto reads it, as AWS checks it: SigV4 in the `Authorization` header, or a
presigned S3 link (SigV4's `X-Amz-*` or SigV2's `AWSAccessKeyId` in the query), the signature botocore
computes with the secret equal to the one sent, and a header signature's `X-Amz-Date` within 15
minutes of now. Requests naming other keys (role sessions, IAM users' keys) are left to moto's
authentication by key and session token.
"""

from __future__ import annotations

import hmac
import io
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qs, urlsplit

from botocore.auth import HmacV1Auth, S3SigV4Auth, SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

AMZ_DATE = "%Y%m%dT%H%M%SZ"
SKEW = timedelta(minutes=15)  # AWS's own allowance for a request's clock


def admin_signature_refused(environ: dict[str, Any], key_id: str, secret: str, now: datetime) -> str | None:
    """Why a request naming the administrator's key is refused (None: it does not name it, or its
    signature is right). Reads the body and puts it back for moto."""
    query = parse_qs(str(environ.get("QUERY_STRING", "")), keep_blank_values=True)
    authorization = str(environ.get("HTTP_AUTHORIZATION", ""))
    if authorization.startswith("AWS4-HMAC-SHA256 "):
        fields = _fields(authorization)
        if fields.get("Credential", "").split("/")[0] != key_id:
            return None
        return _header_refused(environ, fields, Credentials(key_id, secret), now)
    if query.get("X-Amz-Credential", [""])[0].split("/")[0] == key_id:
        return _presigned_v4_refused(environ, query, Credentials(key_id, secret))
    if query.get("AWSAccessKeyId", [""])[0] == key_id:
        return _presigned_v2_refused(environ, query, Credentials(key_id, secret))
    if authorization.startswith(f"AWS {key_id}:"):
        return "SigV2 headers are not accepted for the local administrator's key"
    return None


def _header_refused(
    environ: dict[str, Any], fields: Mapping[str, str], credentials: Credentials, now: datetime
) -> str | None:
    _, _, region, service, *_ = [*fields["Credential"].split("/"), "", "", "", ""]
    stamp = str(environ.get("HTTP_X_AMZ_DATE", ""))
    try:
        signed_at = datetime.strptime(stamp, AMZ_DATE).replace(tzinfo=UTC)
    except ValueError:
        return "the request has no X-Amz-Date"
    if abs(now - signed_at) > SKEW:
        return "the request's X-Amz-Date is more than 15 minutes from now"
    names = fields.get("SignedHeaders", "").split(";")
    request = _rebuilt(environ, {name: _header(environ, name) for name in names})
    request.context["timestamp"] = stamp
    signer = (S3SigV4Auth if service == "s3" else SigV4Auth)(credentials, service, region)
    expected = signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request)
    return None if hmac.compare_digest(expected, fields.get("Signature", "")) else "the signature does not match"


def _presigned_v4_refused(
    environ: dict[str, Any], query: Mapping[str, list[str]], credentials: Credentials
) -> str | None:
    _, _, region, service, *_ = [*query["X-Amz-Credential"][0].split("/"), "", "", "", ""]
    names = query.get("X-Amz-SignedHeaders", ["host"])[0].split(";")
    unsigned = "&".join(
        part for part in str(environ.get("QUERY_STRING", "")).split("&") if not part.startswith("X-Amz-Signature=")
    )
    request = _rebuilt(environ, {name: _header(environ, name) for name in names}, unsigned)
    request.context["timestamp"] = query.get("X-Amz-Date", [""])[0]
    signer = S3SigV4Auth(credentials, service, region)
    canonical = signer.canonical_request(request).rsplit("\n", 1)[0] + "\nUNSIGNED-PAYLOAD"
    expected = signer.signature(signer.string_to_sign(request, canonical), request)
    given = query.get("X-Amz-Signature", [""])[0]
    return None if hmac.compare_digest(expected, given) else "the presigned link's signature does not match"


def _presigned_v2_refused(
    environ: dict[str, Any], query: Mapping[str, list[str]], credentials: Credentials
) -> str | None:
    headers = {name: _header(environ, name) for name in ("content-md5", "content-type") if _header(environ, name)}
    split = urlsplit(_raw_target(environ))
    signer = _ExpiringV1(credentials, query.get("Expires", [""])[0])
    expected = signer.get_signature(str(environ.get("REQUEST_METHOD", "GET")), split, headers)
    given = query.get("Signature", [""])[0]
    return None if hmac.compare_digest(expected, given) else "the presigned link's signature does not match"


class _ExpiringV1(HmacV1Auth):
    """SigV2 as a presigned link signs it: its `Expires` where a request's `Date` would be."""

    def __init__(self, credentials: Credentials, expires: str) -> None:
        super().__init__(credentials)
        self.expires = expires

    def _get_date(self) -> str:
        return self.expires


def _fields(authorization: str) -> dict[str, str]:
    parts = authorization.removeprefix("AWS4-HMAC-SHA256 ").split(",")
    return dict(part.strip().split("=", 1) for part in parts if "=" in part)


def _header(environ: Mapping[str, Any], name: str) -> str:
    key = name.upper().replace("-", "_")
    return str(environ.get(key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}", ""))


def _raw_target(environ: Mapping[str, Any]) -> str:
    """The path and query as the client sent them (werkzeug's server keeps it): what the client signed."""
    return str(environ.get("RAW_URI") or environ.get("REQUEST_URI") or environ.get("PATH_INFO", "/"))


def _rebuilt(environ: dict[str, Any], headers: dict[str, str], query: str | None = None) -> AWSRequest:
    """The request as its signer built it, from the raw request line; its body read and put back."""
    length = int(environ.get("CONTENT_LENGTH") or 0)
    body = environ["wsgi.input"].read(length) if length else b""
    environ["wsgi.input"] = io.BytesIO(body)
    target = urlsplit(_raw_target(environ))
    shown_query = target.query if query is None else query
    url = f"http://{headers.get('host') or environ.get('HTTP_HOST', '')}{target.path}" + (
        f"?{shown_query}" if shown_query else ""
    )
    return AWSRequest(method=str(environ.get("REQUEST_METHOD", "GET")), url=url, data=body, headers=headers)

"""API Gateway's IAM authorization, as the local gateway server applies it to a SigV4-signed request.

A request whose `Authorization` is `AWS4-HMAC-SHA256 Credential=<key>/<date>/<region>/execute-api/
aws4_request, SignedHeaders=..., Signature=...` is checked as API Gateway checks it before the function
runs: the scope names this service and the local region, `X-Amz-Date` is within five minutes of now, the
key (with its session token, for a role session) is one the local endpoint issued, and the signature
botocore computes from the request's method, path, query, signed headers and body with that key's secret
equals the one sent. A refusal is API Gateway's 403 with its message; an accepted request's signer goes
into the proxy event's `requestContext.identity` (`userArn`, `caller`, `accountId`, `accessKey`), where
the gateway function finds the AWS principal it serves.

What is not checked: the signer's `execute-api:Invoke` permission (every principal the endpoint knows
may call the local API; on AWS its policies must allow it), and presigned query-string signatures.
"""

from __future__ import annotations

import hmac
import json
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials

from asya_local import admin_key
from asya_local.functions.rest_proxy import HttpRequest

SCHEME = "AWS4-HMAC-SHA256"
SERVICE = "execute-api"
AMZ_DATE = "%Y%m%dT%H%M%SZ"
SKEW = timedelta(minutes=5)  # how far X-Amz-Date may be from now, either way
SIGNER_ACTION = "/asya-local/signer"  # the local endpoint's own call (`asya_local.endpoint.signers`)
MISMATCH = (
    "The request signature we calculated does not match the signature you provided. Check your AWS Secret "
    "Access Key and signing method. Consult the service documentation for details."
)
UNKNOWN_KEY = "The security token included in the request is invalid."


@dataclass(frozen=True)
class Signer:
    """The holder of an access key, as the endpoint that issued it knows it."""

    secret_access_key: str
    arn: str
    account: str
    caller: str


# (access key id, session token) → its holder, or None if no such credential was issued
Signers = Callable[[str, str | None], Signer | None]


class SignatureRefusedError(Exception):
    """A signed request API Gateway would refuse; the message is the one it answers with (403)."""


@dataclass(frozen=True)
class Identity:
    """Who signed an accepted request: what `requestContext.identity` says of the caller."""

    access_key: str
    signer: Signer

    def fields(self) -> dict[str, str]:
        """As the proxy event's `requestContext.identity` names them."""
        return {
            "accessKey": self.access_key,
            "accountId": self.signer.account,
            "caller": self.signer.caller,
            "user": self.signer.caller,
            "userArn": self.signer.arn,
        }


def is_signed(request: HttpRequest) -> bool:
    """Whether the request claims a SigV4 signature (a bearer token or an API key is something else)."""
    return (request.header("authorization") or "").startswith(SCHEME)


def verify(
    request: HttpRequest,
    signers: Signers,
    region: str,
    now: Callable[[], float] = time.time,
    *,
    service: str = SERVICE,
) -> Identity:
    """The identity that signed `request`, or `SignatureRefusedError` with API Gateway's message. The
    local Event API checks its own requests the same way, for the service `appsync`."""
    fields = _fields(request.header("authorization") or "")
    key, date, scope_region, scope_service, *_ = [*fields["Credential"].split("/"), "", "", "", ""]
    if scope_service != service:
        raise SignatureRefusedError(f"Credential should be scoped to correct service: '{service}'. ")
    if scope_region != region:
        raise SignatureRefusedError("Credential should be scoped to a valid region. ")
    stamp = request.header("x-amz-date")
    if not stamp:
        raise SignatureRefusedError(
            "Authorization header requires existence of either a 'X-Amz-Date' or a 'Date' header."
        )
    _within_skew(stamp, now())
    token = request.header("x-amz-security-token")
    holder = signers(key, token)
    if holder is None:
        raise SignatureRefusedError(UNKNOWN_KEY)
    credentials = Credentials(key, holder.secret_access_key, token)
    expected = _signature(request, fields["SignedHeaders"], credentials, region, service)
    if date != stamp[:8] or not hmac.compare_digest(expected, fields["Signature"]):
        raise SignatureRefusedError(MISMATCH)
    return Identity(access_key=key, signer=holder)


def _fields(authorization: str) -> dict[str, str]:
    """`Credential`, `SignedHeaders` and `Signature` of the header (API Gateway names the first missing)."""
    given = dict(part.strip().split("=", 1) for part in authorization.removeprefix(SCHEME).split(",") if "=" in part)
    for name in ("Credential", "Signature", "SignedHeaders"):
        if not given.get(name):
            raise SignatureRefusedError(f"Authorization header requires '{name}' parameter.")
    return given


def _within_skew(stamp: str, now: float) -> None:
    try:
        signed_at = datetime.strptime(stamp, AMZ_DATE).replace(tzinfo=UTC)
    except ValueError:
        raise SignatureRefusedError(f"Date must be in ISO-8601 'basic format'. Got '{stamp}'.") from None
    current = datetime.fromtimestamp(now, UTC)
    shown = current.strftime(AMZ_DATE)
    if signed_at < current - SKEW:
        earliest = (current - SKEW).strftime(AMZ_DATE)
        raise SignatureRefusedError(f"Signature expired: {stamp} is now earlier than {earliest} ({shown} - 5 min.)")
    if signed_at > current + SKEW:
        latest = (current + SKEW).strftime(AMZ_DATE)
        raise SignatureRefusedError(
            f"Signature not yet current: {stamp} is still later than {latest} ({shown} + 5 min.)"
        )


def _signature(request: HttpRequest, signed_headers: str, credentials: Credentials, region: str, service: str) -> str:
    """The signature the signer would have sent: botocore's, over the headers the request says it signed."""
    names = signed_headers.split(";")
    headers = {name: request.header(name) or "" for name in names}
    url = f"http://{request.header('host') or ''}{request.target}"
    rebuilt = AWSRequest(method=request.method, url=url, data=request.body, headers=headers)
    rebuilt.context["timestamp"] = request.header("x-amz-date")
    sigv4 = SigV4Auth(credentials, service, region)
    if sorted(sigv4.headers_to_sign(rebuilt).keys()) != sorted(names):  # signed what botocore leaves out, or no host
        return ""
    return str(sigv4.signature(sigv4.string_to_sign(rebuilt, sigv4.canonical_request(rebuilt)), rebuilt))


def endpoint_signers(endpoint: str) -> Signers:
    """Holders of keys as the local endpoint knows them, remembered once found (a key the endpoint
    issued keeps its holder; an unknown one is asked again, as it may be issued later)."""
    known: dict[tuple[str, str | None], Signer] = {}

    def signer(access_key_id: str, session_token: str | None) -> Signer | None:
        if (access_key_id, session_token) not in known:
            body = json.dumps({"access_key_id": access_key_id, "session_token": session_token}).encode()
            asked = urllib.request.Request(
                f"{endpoint}{SIGNER_ACTION}", data=body, method="POST", headers=admin_key.headers(endpoint)
            )
            try:
                with urllib.request.urlopen(asked, timeout=10) as answer:
                    known[(access_key_id, session_token)] = Signer(**json.loads(answer.read()))
            except urllib.error.HTTPError as exc:
                if exc.code == 404:
                    return None
                raise
        return known[(access_key_id, session_token)]

    return signer

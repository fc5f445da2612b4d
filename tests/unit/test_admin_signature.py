"""The local administrator's signatures as the endpoint checks them (`asya_local.endpoint.admin_signature`):
what botocore signs with the secret passes, in the header and in presigned links (SigV4 and SigV2);
a made-up signature, another secret or a stale date does not; other keys are left to moto."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import urlsplit

import boto3
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.config import Config
from botocore.credentials import Credentials

from asya_local.admin_key import KEY_ID
from asya_local.endpoint.admin_signature import admin_signature_refused

SECRET = "the-endpoints-secret"
ENDPOINT = "http://127.0.0.1:4566"


def _environ(method: str, url: str, headers: dict[str, str], body: bytes = b"") -> dict[str, Any]:
    """What the endpoint's WSGI server makes of the request."""
    split = urlsplit(url)
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method,
        "RAW_URI": split.path + (f"?{split.query}" if split.query else ""),
        "QUERY_STRING": split.query,
        "HTTP_HOST": split.netloc,
        "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body),
    }
    for name, value in headers.items():
        key = name.upper().replace("-", "_")
        environ[key if key == "CONTENT_TYPE" else f"HTTP_{key}"] = value
    return environ


def _signed(secret: str, key_id: str = KEY_ID) -> dict[str, Any]:
    body = b"Action=ListQueues&Version=2012-11-05"
    request = AWSRequest(
        "POST", f"{ENDPOINT}/", data=body, headers={"Content-Type": "application/x-www-form-urlencoded"}
    )
    SigV4Auth(Credentials(key_id, secret), "sqs", "us-east-1").add_auth(request)
    return _environ("POST", str(request.url), dict(request.headers.items()), body)


def _link(secret: str, version: str) -> str:
    s3 = boto3.client(
        "s3",
        endpoint_url=ENDPOINT,
        region_name="us-east-1",
        aws_access_key_id=KEY_ID,
        aws_secret_access_key=secret,
        config=Config(signature_version=version),
    )
    return str(s3.generate_presigned_url("get_object", Params={"Bucket": "results", "Key": "a b/c.json"}))


def test_a_header_signature_with_the_secret_passes_and_its_body_is_left_for_moto() -> None:
    environ = _signed(SECRET)
    assert admin_signature_refused(environ, KEY_ID, SECRET, datetime.now(UTC)) is None
    assert environ["wsgi.input"].read() == b"Action=ListQueues&Version=2012-11-05"


def test_a_header_signature_without_the_secret_or_out_of_date_is_refused() -> None:
    now = datetime.now(UTC)
    assert admin_signature_refused(_signed("asya-local"), KEY_ID, SECRET, now) == "the signature does not match"
    forged = _signed(SECRET)
    forged["HTTP_AUTHORIZATION"] = forged["HTTP_AUTHORIZATION"].rsplit("Signature=", 1)[0] + "Signature=" + "0" * 64
    assert admin_signature_refused(forged, KEY_ID, SECRET, now) == "the signature does not match"
    stale = admin_signature_refused(_signed(SECRET), KEY_ID, SECRET, now + timedelta(minutes=16))
    assert stale == "the request's X-Amz-Date is more than 15 minutes from now"


def test_another_keys_request_is_left_to_moto() -> None:
    assert admin_signature_refused(_signed("whatever", "ASIAROLESESSION"), KEY_ID, SECRET, datetime.now(UTC)) is None
    assert admin_signature_refused(_environ("GET", f"{ENDPOINT}/", {}), KEY_ID, SECRET, datetime.now(UTC)) is None


def test_presigned_links_pass_with_the_secret_and_are_refused_without_it() -> None:
    for version, signature in (("s3v4", "X-Amz-Signature="), ("s3", "Signature=")):
        link = _link(SECRET, version)
        assert admin_signature_refused(_environ("GET", link, {}), KEY_ID, SECRET, datetime.now(UTC)) is None, version
        wrong = _environ("GET", _link("asya-local", version), {})
        assert admin_signature_refused(wrong, KEY_ID, SECRET, datetime.now(UTC)) is not None, version
        forged = _environ("GET", link.replace(signature, f"{signature}0"), {})
        assert admin_signature_refused(forged, KEY_ID, SECRET, datetime.now(UTC)) is not None, version

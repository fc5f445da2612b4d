"""Claim check: an envelope too large to travel well in SQS travels with its payload in S3.

SQS takes at most 1 MiB a message and bills every 64 KiB of it as a request; ML payloads (images,
embeddings, documents as base64) pass that quickly. When an envelope's body is over the mesh's
threshold (`payloads.claim_check_bytes`, `ASYA_CLAIM_CHECK_BYTES`), whoever sends it (an actor's
sidecar, a Spark job, the gateway) writes the payload to `claims/<ns>/<envelope id>/<sha256>.json` in
the mesh's bucket and sends the envelope with `payload: null` and a reference beside it:

    "payload_ref": {"uri": "s3://<bucket>/claims/<ns>/<id>/<sha256>.json", "bytes": 5242880, "sha256": "..."}

Whoever reads it (the next sidecar before its handler, a Spark job, x-sink and x-pause before they
keep it) puts the payload back, checked against its digest, so handlers, results and the gateway
see the real payload. Keys are named by content, so a redelivered hop writes the same object again
rather than a new one; objects expire with the bucket's results (`results.retention_days`). An
envelope whose reference cannot be read (the object expired, or the reference points outside this
mesh's claims) goes to x-sump with reason `PayloadUnreadable`.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import orjson

from asya.clients import LazyClient

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

    from asya.envelope import Envelope

REF_FIELD = "payload_ref"
PREFIX = "claims"
MISSING = ("NoSuchKey", "AccessDenied", "404", "403")  # without s3:ListBucket a missing key is a 403
# Reads at once a join's completing arrival makes (`asya.gathering`): the client keeps that many
# connections, where botocore keeps 10 and would open and drop the rest on every round.
READS_AT_ONCE = 16


class PayloadUnreadableError(Exception):
    """A reference that can never be read: the message says why."""


def claim_prefix(namespace: str) -> str:
    return f"{PREFIX}/{namespace}/"


class Claims:
    """The mesh's claim checks, for one namespace and bucket."""

    s3: LazyClient[S3Client] = LazyClient("s3", max_pool_connections=READS_AT_ONCE)

    def __init__(self, bucket: str, namespace: str, threshold: int, s3: S3Client | None = None) -> None:
        self.bucket = bucket
        self.namespace = namespace
        self.threshold = threshold
        self._s3 = s3
        self._own = f"s3://{bucket}/{claim_prefix(namespace)}"

    def check_in(self, wire: Mapping[str, Any], body: str) -> str:
        """The body to send for `wire` (already written as `body`): itself when it is within the
        threshold, else the envelope with its payload in S3 and a reference in its place."""
        # a character is at most 4 bytes of UTF-8: most bodies are told small without encoding them
        if len(body) * 4 <= self.threshold or len(body.encode()) <= self.threshold:
            return body
        return self.slim(wire, self.put(wire))

    def put(self, wire: Mapping[str, Any]) -> dict[str, Any]:
        """Write the envelope's payload to the bucket, whatever its size; the reference that names it."""
        payload = orjson.dumps(wire.get("payload"))
        digest = hashlib.sha256(payload).hexdigest()
        key = f"{claim_prefix(self.namespace)}{wire['id']}/{digest}.json"
        self.s3.put_object(Bucket=self.bucket, Key=key, Body=payload, ContentType="application/json")
        return {"uri": f"s3://{self.bucket}/{key}", "bytes": len(payload), "sha256": digest}

    @staticmethod
    def slim(wire: Mapping[str, Any], reference: dict[str, Any]) -> str:
        """The body of the envelope with `reference` in place of its payload."""
        slim = {name: value for name, value in wire.items() if name not in ("payload", REF_FIELD)}
        return orjson.dumps({**slim, "payload": None, REF_FIELD: reference}).decode()

    def check_in_body(self, body: str) -> str:
        """`check_in` for an envelope already written, read only when it is over the threshold."""
        return self.check_in(orjson.loads(body), body) if len(body) * 4 > self.threshold else body

    def check_out(self, reference: Any) -> Any:
        """The payload a reference names. `PayloadUnreadableError` if it can never be read; S3's other
        errors (throttling) are raised as they are, so the message is delivered again."""
        from botocore.exceptions import ClientError  # here: a Spark job imports this module without botocore

        uri = reference.get("uri") if isinstance(reference, dict) else None
        if not isinstance(uri, str) or not uri.startswith(self._own) or ".." in uri:
            raise PayloadUnreadableError(f"{REF_FIELD} does not name an object under {self._own}: {str(uri)[:200]!r}")
        try:
            body = self.s3.get_object(Bucket=self.bucket, Key=uri.removeprefix(f"s3://{self.bucket}/"))["Body"].read()
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in MISSING:
                raise PayloadUnreadableError(f"{uri} is gone (past the results' retention?)") from None
            raise
        if hashlib.sha256(body).hexdigest() != reference.get("sha256"):
            raise PayloadUnreadableError(f"{uri} does not hold the payload its digest names")
        return orjson.loads(body)

    def restore(self, document: dict[str, Any]) -> dict[str, Any]:
        """A document (an envelope as JSON) with its payload back in place of its reference."""
        if REF_FIELD not in document:
            return document
        payload = self.check_out(document[REF_FIELD])
        return {**{name: value for name, value in document.items() if name != REF_FIELD}, "payload": payload}

    def restore_envelope(self, envelope: Envelope) -> None:
        """An envelope's payload back in place of its reference, in place."""
        extra = envelope.model_extra or {}
        if REF_FIELD in extra:
            envelope.payload = self.check_out(extra[REF_FIELD])
            del extra[REF_FIELD]


def unrestorable(envelope: Envelope, claims: Claims | None, without: str) -> PayloadUnreadableError | None:
    """Put an envelope's claim-checked payload back in place (`Claims.restore_envelope`); why it never
    can be, if not. `without`: what stands in for the claim checks where there are none."""
    if claims is None:
        return PayloadUnreadableError(without)
    try:
        claims.restore_envelope(envelope)
    except PayloadUnreadableError as exc:
        return exc
    return None


def referenced(envelope: Envelope) -> bool:
    """Whether the envelope's payload is in S3."""
    return REF_FIELD in (envelope.model_extra or {})

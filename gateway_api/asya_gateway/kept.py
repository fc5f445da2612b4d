"""What the crew kept in the results bucket (results, x-sump copies, paused envelopes), as the gateway's
answers carry it: whole while the answer stays within what Lambda can return, as a short-lived
presigned link beyond that."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import orjson
from botocore.exceptions import ClientError

from asya.clients import LazyClient

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

MISSING_OBJECT = ("NoSuchKey", "AccessDenied")  # S3's answers for a key not there (yet)
# A Lambda function's answer is at most 6 MB (6,291,456 bytes of its JSON); an object the crew kept goes
# into an answer only while the whole answer stays under this, the rest of it (ids, links, headers) in
# the margin. A larger one is answered with a short-lived presigned link instead.
ANSWER_MAX_BYTES = 5 * 1024 * 1024
LINK_SECONDS = 900  # how long such a link works


@dataclass(frozen=True)
class Carried:
    """How an answer carries a kept object: JSON-encoded `encodings` more times after its own encoding
    (the REST answer's body is a JSON string; an MCP result's text is one more), in `copies` places (an
    MCP result has it as text and as structured content)."""

    encodings: int
    copies: int

    def size(self, value: Any) -> int:
        """Bytes of `value` as the answer will hold it: JSON escapes every non-ASCII character as
        `\\uXXXX`, and every `"` and `\\` again at each encoding."""
        encoded = json.dumps(value, separators=(",", ":"))
        for _ in range(self.encodings):
            encoded = json.dumps(encoded)
        return self.copies * len(encoded)


IN_REST = Carried(encodings=1, copies=1)
IN_MCP = Carried(encodings=2, copies=2)


@dataclass(frozen=True)
class Kept:
    """An object the crew kept, as an answer may carry it: its document, or a link when it is too large."""

    document: Any = None
    link: str | None = None


class KeptObjects:
    """The results bucket, as the gateway reads it (None: the mesh keeps nothing, and nothing is found)."""

    s3: LazyClient[S3Client] = LazyClient("s3")

    def __init__(self, bucket: str | None, s3: Any = None) -> None:
        self.bucket = bucket
        self._s3 = s3

    def answer(self, key: str, carried: Carried, part: str | None = None) -> Kept | None:
        """An object the crew kept, as an answer carried as `carried` may hold it (its `part`, or all of
        it): the parsed document, or, when it would pass `ANSWER_MAX_BYTES`, a presigned link that works
        for `LINK_SECONDS`; None if it is not there. An object too large is not even read."""
        kept = self._get(key)
        if kept is None:
            return None
        if kept["ContentLength"] <= ANSWER_MAX_BYTES:
            body: bytes = kept["Body"].read()
            try:
                document: Any = orjson.loads(body)
            except orjson.JSONDecodeError:
                document = body.decode("utf-8", "replace")
            carried_part = document.get(part) if isinstance(document, dict) and part else document
            if carried.size(carried_part) <= ANSWER_MAX_BYTES:
                return Kept(document=document)
        kept["Body"].close()
        link = self.s3.generate_presigned_url(
            "get_object", Params={"Bucket": str(self.bucket), "Key": key}, ExpiresIn=LINK_SECONDS
        )
        return Kept(link=str(link))

    def read(self, key: str, max_bytes: int | None = None) -> bytes | None:
        """An object the crew kept; None if it is not there (not yet, or not any more) or is over
        `max_bytes`."""
        kept = self._get(key)
        if kept is None:
            return None
        if max_bytes is not None and kept["ContentLength"] > max_bytes:
            return None
        body: bytes = kept["Body"].read()
        return body

    def _get(self, key: str) -> Any:
        """S3's answer for the object, or None if it is not there. Without s3:ListBucket (deliberately
        not granted: it would list every task's results), S3 answers a missing key with 403
        AccessDenied, not 404 NoSuchKey."""
        if self.bucket is None:
            return None
        try:
            return self.s3.get_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if exc.response.get("Error", {}).get("Code") not in MISSING_OBJECT:
                raise
            return None

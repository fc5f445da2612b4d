"""Where a Spark batch lives in S3 while its job runs.

    spark/<namespace>/<actor>/<batch id>/input.jsonl      the envelopes, as received (dispatcher)
    spark/<namespace>/<actor>/<batch id>/output/part-*     the routed envelopes (the job)
    spark/<namespace>/<actor>/<batch id>/output/_SUCCESS   written by Spark once every part is complete

The key depends only on the batch id, so a redelivered batch overwrites its own input. The bucket's
lifecycle rule expires the prefix, so staged data does not outlive the results' retention.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from asya.batch import Routed, read_staged_record, staged_record
from asya.clients import LazyClient

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client

PREFIX = "spark"
SUCCESS_MARKER = "_SUCCESS"


def staging_prefix(namespace: str, actor: str) -> str:
    return f"{PREFIX}/{namespace}/{actor}/"


class Staging:
    client: LazyClient[S3Client] = LazyClient("s3")

    def __init__(self, bucket: str, namespace: str, actor: str, client: S3Client | None = None) -> None:
        self.bucket = bucket
        self.prefix = staging_prefix(namespace, actor)
        self._client = client

    def input_key(self, batch_id: str) -> str:
        return f"{self.prefix}{batch_id}/input.jsonl"

    def output_prefix(self, batch_id: str) -> str:
        return f"{self.prefix}{batch_id}/output/"

    def uri(self, key: str) -> str:
        return f"s3://{self.bucket}/{key}"

    def put_input(self, batch_id: str, records: Iterable[tuple[str, str]]) -> None:
        body = "".join(staged_record(message_id, text) + "\n" for message_id, text in records)
        self.client.put_object(Bucket=self.bucket, Key=self.input_key(batch_id), Body=body.encode())

    def read_input(self, batch_id: str) -> list[tuple[str, str]]:
        body = self.client.get_object(Bucket=self.bucket, Key=self.input_key(batch_id))["Body"].read()
        return [read_staged_record(line) for line in body.splitlines() if line.strip()]

    def read_output(self, batch_id: str) -> list[Routed] | None:
        """The job's routed envelopes, or None if Spark did not mark the output complete."""
        keys = self._keys(self.output_prefix(batch_id))
        if not any(key.endswith(f"/{SUCCESS_MARKER}") for key in keys):
            return None
        routed: list[Routed] = []
        for key in sorted(keys):
            if key.rsplit("/", 1)[-1].startswith("part-"):
                body = self.client.get_object(Bucket=self.bucket, Key=key)["Body"].read()
                routed.extend(Routed.from_json(line) for line in body.splitlines() if line.strip())
        return routed

    def _keys(self, prefix: str) -> list[str]:
        pages: Any = self.client.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        return [item["Key"] for page in pages for item in page.get("Contents", [])]

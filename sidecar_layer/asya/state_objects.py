"""Large state values in the mesh's state bucket (`asya.state_store`): one object per written value.

A value over what one DynamoDB item takes is written to `<actor>/<sha256 of the key>/<random>.json`
before its item, which then names the object instead of holding the value. A new object per write,
never an overwrite: the item's conditional put decides which write won, and a reader that read the
item just before a newer write still finds the object it names until the winner deletes it (then it
reads the item again). An object whose write lost, or whose item was written over or deleted, is
deleted; what an expired key leaves behind the bucket's lifecycle removes (`asya_cdk.actor_state`).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import TYPE_CHECKING, Any

from asya.claims import MISSING
from asya.clients import LazyClient

if TYPE_CHECKING:
    from types_boto3_s3.client import S3Client


class StateObjects:
    """One actor's large values in `bucket`, under its own prefix (its role may touch nothing else)."""

    client: LazyClient[S3Client] = LazyClient("s3")

    def __init__(self, bucket: str, actor: str, *, client: Any = None) -> None:
        self.bucket = bucket
        self.actor = actor
        self._client = client

    def put(self, key: str, text: str) -> str:
        """Write a value; returns the object's key, for its item to name."""
        name = f"{self.actor}/{hashlib.sha256(key.encode()).hexdigest()[:32]}/{secrets.token_hex(8)}.json"
        self.client.put_object(Bucket=self.bucket, Key=name, Body=text.encode(), ContentType="application/json")
        return name

    def get(self, name: str) -> str | None:
        """The value an item names; None if its object is gone (a newer write deleted it)."""
        try:
            answer = self.client.get_object(Bucket=self.bucket, Key=name)
        except self.client.exceptions.ClientError as exc:
            if exc.response.get("Error", {}).get("Code") in MISSING:  # without ListBucket a missing key is a 403
                return None
            raise
        return answer["Body"].read().decode()

    def delete(self, name: str) -> None:
        """Delete an object no item names any more; a failure leaves it to the bucket's lifecycle."""
        try:
            self.client.delete_object(Bucket=self.bucket, Key=name)
        except self.client.exceptions.ClientError:
            return

"""Reads an object of a bucket of the user's, with the function's own role."""

from __future__ import annotations

import json
import os
from typing import Any

import boto3


def read(payload: dict[str, Any]) -> dict[str, Any]:
    body = boto3.client("s3").get_object(Bucket=os.environ["REFERENCE_BUCKET"], Key=payload["key"])["Body"]
    return {**payload, "content": json.loads(body.read())}

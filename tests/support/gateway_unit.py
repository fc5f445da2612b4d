"""What the gateway's function runs with in the unit tests, in this process: fake credentials, its
region, and Powertools quiet (no metrics flushed, JSON logs)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya_local.functions.lambda_shapes import REGION
from asya_local.testing.tables import create_tables

UNIT_ENVIRONMENT = {
    "AWS_DEFAULT_REGION": REGION,
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "POWERTOOLS_DEV": "false",
    "POWERTOOLS_METRICS_DISABLED": "true",
}


@contextmanager
def unit_aws() -> Iterator[tuple[Any, Any]]:
    """moto with the gateway's tables made, in `UNIT_ENVIRONMENT`: (DynamoDB client, SQS client)."""
    with pytest.MonkeyPatch.context() as patch, mock_aws():
        for name, value in UNIT_ENVIRONMENT.items():
            patch.setenv(name, value)
        patch.delenv("AWS_ENDPOINT_URL", raising=False)
        dynamodb = boto3.client("dynamodb")
        create_tables(dynamodb)
        yield dynamodb, boto3.client("sqs")

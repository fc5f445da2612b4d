"""`asya results` shows whatever the crew kept, including bodies x-sump kept deeper than a JSON printer goes."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import boto3
import pytest
from moto import mock_aws

from asya_local import results_cli
from asya_local.results import read_objects
from tests.support import hostile

BUCKET = "results"


@pytest.fixture
def s3() -> Iterator[Any]:
    with mock_aws():
        client = boto3.client("s3", region_name="us-east-1")
        client.create_bucket(Bucket=BUCKET)
        yield client


@pytest.mark.parametrize("depth", [3, 500, 1100], ids=["shallow", "past the printer", "past the parser"])
def test_a_kept_body_of_any_depth_is_read_and_shown(s3: Any, depth: int, capsys: pytest.CaptureFixture[str]) -> None:
    key = f"results/n/env-{depth}/sump.json"
    s3.put_object(Bucket=BUCKET, Key=key, Body=hostile.nested(depth).join(['{"payload": ', "}"]).encode())
    [doc] = read_objects(s3, BUCKET, "results/n/")
    assert (doc["key"], doc["outcome"]) == (key, "sump")
    results_cli.print_result(doc)
    shown = capsys.readouterr().out
    assert key in shown
    assert shown.count("[") >= depth

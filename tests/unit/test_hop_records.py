"""An untracked hop's claim in the idempotency table as a lease (`asya.hop_records`): it is moved on
only while it is still the one this delivery wrote, in the record Powertools itself reads back. These
tests also pin the Powertools internals the layer relies on against the installed version."""

from __future__ import annotations

import time
from collections.abc import Iterator

import boto3
import pytest
from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyItemAlreadyExistsError
from moto import mock_aws

from asya.dedup import Hop, dynamodb_store
from asya.hop_records import HopRecords
from asya_local.testing.tables import create_idempotency_table
from tests.support.consumers import in_progress_until

TABLE = "asya-unit-hops"
HOP = Hop("a", "env-1", 0).key()


@pytest.fixture
def records() -> Iterator[HopRecords]:
    with mock_aws():
        create_idempotency_table(boto3.client("dynamodb", region_name="us-east-1"), TABLE)
        yield dynamodb_store(TABLE, 3600, "unit")


def held_until(records: HopRecords) -> int | None:
    return in_progress_until(records, HOP)


def test_a_claim_says_the_expiry_it_wrote(records: HopRecords) -> None:
    before = int(time.time() * 1000)
    written = records.claim(HOP, 2_000)
    assert written is not None
    assert before + 2_000 <= written <= int(time.time() * 1000) + 2_000
    assert held_until(records) == written


def test_a_lease_is_moved_on_while_it_is_still_this_deliverys(records: HopRecords) -> None:
    written = records.claim(HOP, 2_000)
    assert written is not None

    assert records.renew(HOP, written, written + 5_000)
    assert held_until(records) == written + 5_000
    record = records.get_record(data=HOP)
    assert record is not None
    assert record.expiry_timestamp == (written + 5_000) // 1000 + 3600  # the record outlives the lease by its TTL
    with pytest.raises(IdempotencyItemAlreadyExistsError):  # still held: a redelivery finds it taken
        records.claim(HOP, 2_000)


def test_a_lease_renewed_past_the_records_ttl_keeps_the_hop_claimed(records: HopRecords) -> None:
    """A container hop longer than the idempotency TTL (here 1 s): Powertools lets a claim overwrite a
    record past its `expiration`, so the renewal moves that on with the lease, and a redelivery two
    seconds later still finds the hop held."""
    short_lived = dynamodb_store(TABLE, 1, "unit")
    written = short_lived.claim(HOP, 60_000)
    assert written is not None
    assert short_lived.renew(HOP, written, written + 60_000)
    time.sleep(2.1)
    with pytest.raises(IdempotencyItemAlreadyExistsError):
        short_lived.claim(HOP, 60_000)


def test_a_lapsed_lease_taken_by_another_delivery_is_not_moved(records: HopRecords) -> None:
    first = records.claim(HOP, 1)
    time.sleep(0.01)
    second = records.claim(HOP, 60_000)  # the first lapsed: the redelivery claimed the hop
    assert first is not None
    assert second is not None

    assert not records.renew(HOP, first, first + 60_000)
    assert held_until(records) == second


def test_a_settled_hop_is_not_held_again(records: HopRecords) -> None:
    written = records.claim(HOP, 2_000)
    assert written is not None
    records.save_success(data=HOP, result={})

    assert not records.renew(HOP, written, written + 5_000)
    assert held_until(records) is None  # completed

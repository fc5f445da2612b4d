"""The idempotency table's hop records (`asya.dedup`), with the lease a container consumer renews.

An untracked hop (a stealth envelope, or a mesh without a task table) is claimed by an *in progress*
record of Powertools' DynamoDB persistence layer, which lapses at the expiry the claim wrote. A Lambda
hop writes its invocation's end there. A container hop has no invocation: its batch may run for
hours, so it claims one lease (its queue's visibility timeout, `asya.claim_leases`) and its heartbeat
moves the expiry on while the hop runs, as it does for a tracked hop's claim in its task record.

Powertools has no call that moves an in-progress record's expiry, so this layer adds one. It writes
the attributes the layer itself writes, keyed as the layer keys it, and only while the record is still
in progress with the very expiry this delivery wrote: a renewal never takes over or revives a claim
another delivery made after this one lapsed. It moves the record's own expiry (`expiration`, the
idempotency TTL from the claim) on with the lease too: Powertools lets any claim overwrite a record
past it, and DynamoDB's TTL deletes it, so a hop longer than the TTL would otherwise lose its claim.
It uses two of the layer's helpers Powertools names private (`_get_hashed_idempotency_key`,
`_get_key`) and hooks `_put_record` to learn the expiry a claim wrote; `tests/unit/test_hop_records.py`
pins all three against the installed version.
"""

from __future__ import annotations

from typing import Any

from aws_lambda_powertools.utilities.idempotency import DynamoDBPersistenceLayer
from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import STATUS_CONSTANTS, DataRecord


class HopRecords(DynamoDBPersistenceLayer):
    """Powertools' DynamoDB persistence layer, whose in-progress claims can be held on as leases.

    A sidecar claims its hops one at a time (its batch runs in one thread), so the expiry the last
    claim wrote is an attribute, read right after the claim (`claim`)."""

    def __init__(self, table_name: str) -> None:
        super().__init__(table_name=table_name)
        self._written: int | None = None

    def _put_record(self, data_record: DataRecord) -> None:
        super()._put_record(data_record)
        self._written = data_record.in_progress_expiry_timestamp

    def claim(self, data: dict[str, Any], hold_ms: int | None) -> int | None:
        """`save_inprogress` for `hold_ms`, returning the expiry it wrote (epoch ms; None with no
        hold). Raises Powertools' `IdempotencyItemAlreadyExistsError` as `save_inprogress` does."""
        self._written = None
        self.save_inprogress(data=data, remaining_time_in_millis=hold_ms)
        return self._written

    def renew(self, data: dict[str, Any], held_until_ms: int, until_ms: int) -> bool:
        """Move the hop's in-progress claim on to `until_ms` if it is still the one written with
        `held_until_ms`; returns whether it was."""
        key = self._get_hashed_idempotency_key(data=data)
        if key is None:  # Powertools' key was switched off: no record was written
            return False
        try:
            self.client.update_item(
                TableName=self.table_name,
                Key=self._get_key(key),
                UpdateExpression="SET #held = :until, #expiry = :expiry",
                ConditionExpression="#status = :in_progress AND #held = :held",
                ExpressionAttributeNames={
                    "#held": self.in_progress_expiry_attr,
                    "#status": self.status_attr,
                    "#expiry": self.expiry_attr,
                },
                ExpressionAttributeValues={
                    ":until": {"N": str(until_ms)},
                    ":expiry": {"N": str(until_ms // 1000 + self.expires_after_seconds)},
                    ":held": {"N": str(held_until_ms)},
                    ":in_progress": {"S": STATUS_CONSTANTS["INPROGRESS"]},
                },
            )
        except self.client.exceptions.ConditionalCheckFailedException:
            return False
        return True

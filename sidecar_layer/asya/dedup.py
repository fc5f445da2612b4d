"""Dropping duplicate deliveries of the same envelope at the same hop (docs/faults.md).

A hop is identified by actor, envelope id, route position and attempt (and how many times the
envelope was redriven from x-sump): a retry is a new attempt, not a duplicate. Within one batch a
set suffices. Across invocations, a tracked envelope's hop is claimed in its task record, by the
status write the hop makes anyway (`TaskStore.claim_hop`). An untracked one (stealth mode, or no
task table) is claimed, when `ASYA_IDEMPOTENCY_TABLE` is set, in Powertools' DynamoDB persistence
layer, which records each hop: *in progress* before the handler runs (expiring with the invocation,
so a crash frees it), *completed* only after every output was sent, and deleted when sending failed
so that the redelivery runs the hop again. A container consumer's claim there is a lease its heartbeat
renews (`asya.hop_records`), as its claim in a task record is.

The Powertools `@idempotent` decorators are not used because they mark completion when the decorated
function returns, while a hop completes only after the batch's grouped sends succeed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from functools import cached_property, partial
from typing import TYPE_CHECKING, Any

from asya.names import mesh_prefix
from asya.task_record import redrives

if TYPE_CHECKING:
    from asya.claim_leases import ClaimLeases
    from asya.envelope import Envelope
    from asya.hop_records import HopRecords


class Claim(Enum):
    NEW = "new"
    DUPLICATE = "duplicate"  # the hop already completed: drop this delivery
    IN_PROGRESS = "in_progress"  # another delivery is running it right now: retry this one later
    HALTED = "halted"  # the task is paused or has ended: the hop does not run (claims on the task record)
    TAKEN = "taken"  # the id is another task's, and the envelope came from outside the mesh (`asya.admission`)


@dataclass(frozen=True, slots=True)
class HopClaim:
    """What claiming a hop found."""

    claim: Claim
    held_until: int | None = None  # IN_PROGRESS: when the other delivery's hold lapses (epoch ms)
    halted: str | None = None  # HALTED: the task's status ("paused", "canceled", or how it ended)


# The claims that carry nothing more, made once: a frozen dataclass costs a microsecond to build
NEW_HOP = HopClaim(Claim.NEW)
DUPLICATE_HOP = HopClaim(Claim.DUPLICATE)


@dataclass(frozen=True, slots=True)
class Hop:
    """A hop's identity, the one every claim of a hop is made from: which actor runs which envelope at
    which route position, in which attempt and in which run of the envelope (`redrives`: how many
    times it was redriven from x-sump). A retry is a new attempt and a redrive a new run: neither is a
    duplicate of what came before."""

    actor: str
    envelope_id: str
    position: int
    attempt: int = 1
    redrives: int = 0

    @classmethod
    def of(cls, envelope: Envelope) -> Hop:
        """The hop an envelope is on: at `route.curr`."""
        return cls(*_identity(envelope))

    @staticmethod
    def key_of(envelope: Envelope) -> dict[str, Any]:
        """`Hop.of(envelope).key()`, for every hop's claim, without making the frozen hop (most of the
        cost: each field is set through `object.__setattr__`)."""
        return _key(*_identity(envelope))

    def key(self) -> dict[str, Any]:
        """The hop as the ledger keys it (a first run's key names no redrive, as before redrives were)."""
        return _key(self.actor, self.envelope_id, self.position, self.attempt, self.redrives)


def _identity(envelope: Envelope) -> tuple[str, str, int, int, int]:
    """A hop's fields (`Hop`) as the envelope says them."""
    attempt = envelope.status.attempt if envelope.status else 1
    return envelope.route.curr, envelope.id, envelope.route.position, attempt, redrives(envelope.headers)


def _key(actor: str, envelope_id: str, position: int, attempt: int, redrives: int) -> dict[str, Any]:
    key: dict[str, Any] = {"actor": actor, "id": envelope_id, "position": position}
    key["attempt"] = attempt
    if redrives:
        key["redrives"] = redrives
    return key


class HopLedger:
    """Claims hops before they run and settles them after their outputs were sent.

    `open_store` opens the idempotency table's persistence layer (none: claims hold per batch only).
    It is opened at the first hop claimed there, an untracked one (`store`), not when the function
    starts: Powertools' layer builds a boto3 session and a DynamoDB client of its own, tens of
    milliseconds of every cold start, and a function whose hops are all claimed in their task
    records never needs it."""

    def __init__(self, open_store: Callable[[], HopRecords] | None = None) -> None:
        self._open_store = open_store
        self._batch: dict[tuple[Any, ...], str] = {}
        self._stored: set[tuple[Any, ...]] = set()

    def start_batch(self) -> None:
        self._batch.clear()
        self._stored.clear()

    def first_in_batch(self, key: dict[str, Any], claimant: str) -> bool:
        """Whether the record `claimant` (its SQS message id) is the first of its batch on this hop; a
        later one is a duplicate and shares the first one's fate (`claimant`)."""
        marker = tuple(key.values())
        if marker in self._batch:
            return False
        self._batch[marker] = claimant
        return True

    def claim(
        self, key: dict[str, Any], claimant: str, remaining_ms: int | None, leases: ClaimLeases | None = None
    ) -> HopClaim:
        """Claim a hop for the record `claimant`: once per batch, then in the idempotency table if the
        function keeps one, until `remaining_ms` from now. (A tracked envelope's hop is claimed in its
        task record instead, by the hop's status write: `StatusReporter.claim_hop`, after
        `first_in_batch`.) `leases`: a container consumer's; the claim then holds for one lease,
        renewed while the hop runs (`asya.claim_leases`)."""
        if not self.first_in_batch(key, claimant):
            return DUPLICATE_HOP
        store = self.store
        if store is None:
            return NEW_HOP
        from aws_lambda_powertools.utilities.idempotency.exceptions import IdempotencyItemAlreadyExistsError
        from aws_lambda_powertools.utilities.idempotency.persistence.datarecord import STATUS_CONSTANTS

        if leases is not None:
            remaining_ms = leases.hold_ms(remaining_ms)
        try:
            held_until = store.claim(key, remaining_ms)
        except IdempotencyItemAlreadyExistsError as exc:
            record = exc.old_data_record or store.get_record(data=key)
            if record is not None and record.status == STATUS_CONSTANTS["COMPLETED"]:
                return DUPLICATE_HOP
            expiry = record.in_progress_expiry_timestamp if record is not None else None
            return HopClaim(Claim.IN_PROGRESS, held_until=None if expiry is None else int(expiry))
        self._stored.add(tuple(key.values()))
        if leases is not None and held_until is not None:
            leases.add(held_until, partial(store.renew, key))
        return NEW_HOP

    @cached_property
    def store(self) -> HopRecords | None:
        """The idempotency table's persistence layer, opened on first use; None without a table."""
        return self._open_store() if self._open_store is not None else None

    def claimant(self, key: dict[str, Any]) -> str | None:
        """The record of this batch that claimed the hop first: a duplicate shares its fate."""
        return self._batch.get(tuple(key.values()))

    def settle(self, key: dict[str, Any], sent: bool) -> None:
        """Record the hop as done when its outputs went out; otherwise free it for the redelivery.
        Only claims made in the idempotency table are settled: a task record's claim is settled by
        the next hop's."""
        store = self.store if tuple(key.values()) in self._stored else None  # only a claim made there opened it
        if store is None:
            return
        if sent:
            store.save_success(data=key, result={})
        else:
            store.delete_record(data=key, exception=RuntimeError("outputs not sent"))


def hop_ledger(table: str | None, ttl_seconds: int, namespace: str) -> HopLedger:
    """The ledger a function keeps: across invocations in `table` when one is set, else per batch only."""
    return HopLedger(partial(dynamodb_store, table, ttl_seconds, namespace) if table else None)


def idempotency_key_prefix(namespace: str) -> str:
    """Every hop record's key starts with this (then `#<hash>`), so IAM can scope a namespace's items."""
    return mesh_prefix(namespace)


def dynamodb_store(table: str, ttl_seconds: int, namespace: str) -> HopRecords:
    from aws_lambda_powertools.utilities.idempotency import IdempotencyConfig

    from asya.hop_records import HopRecords

    store = HopRecords(table)
    store.configure(IdempotencyConfig(expires_after_seconds=ttl_seconds), key_prefix=idempotency_key_prefix(namespace))
    return store

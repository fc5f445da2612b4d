"""A join actor's arrivals (`asya.joins`): each branch is kept and counted, and the arrival that
completes its fan sends the joined envelope to the join's own queue, or, once more branches have
failed than `on_failure` tolerates, the joined envelope's failure (`JoinFailed`) to x-sink.

An arrival is a branch that reached the join, or one that ended before it (x-sink and x-sump send
its ending here). It is not a hop: no claim, no handler. Its cost is two writes to the joins table
(`asya.join_table`) and, for a branch that is not `into`, the write that ends its task record, made at
once with the first (`asya.together`: each is safe to repeat, and only the count waits for the branch
to be kept); the arrival that completes the fan reads the fan back in one query. Everything is safe
to repeat: a redelivered arrival keeps and counts nothing twice, and an arrival that completed (or
gave up on) its fan sends the same envelope again, which the join's hop claim (or x-sink's first
final status) drops. A branch that fails after its join gave up costs one write more, on the joined
envelope's record, so that the join's failure counts it (`asya.join_failure`).

A branch's envelope is kept as it arrived: a payload that travels in S3 stays there, and one that
would make the kept item dear (over `SLOT_INLINE_BYTES`) is moved there (`asya.claims`). Payloads are
read back only when the fan completes; one that cannot be read any more counts as a failed branch.
"""

from __future__ import annotations

import datetime as dt
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import orjson

from asya import routing
from asya.claims import READS_AT_ONCE, REF_FIELD, Claims, PayloadUnreadableError
from asya.config import SidecarConfig
from asya.envelope import Envelope, Phase
from asya.headers import JOINED_HEADER, TRACEPARENT
from asya.join_failure import (
    FAILED_BRANCHES,
    FAILED_BRANCHES_NAMED,
    FAILED_COUNT,
    failed_branch,
    join_failure_message,
    later_entry,
)
from asya.join_table import JoinTable, Kept
from asya.joins import Gathered, JoinFrame, JoinPolicy, arrival_outcome, joined_payload, without
from asya.outcomes import HopOutcome
from asya.reasons import Reason
from asya.routing import Outbound, error_details, error_payload
from asya.task_record import root_of, stealthy
from asya.task_store import TaskStore
from asya.together import together

# A kept branch larger than this has its payload moved to S3: DynamoDB bills a write per kilobyte, and
# an S3 PUT costs what about eight write units do (the same reasoning as `results.inline_max_bytes`).
SLOT_INLINE_BYTES = 8_192
RESTORE_THREADS = READS_AT_ONCE  # S3 reads of kept payloads at once, when a fan completes
# What a completing arrival's reading takes, for the bound `join.max_width` is checked against: an S3
# read of a kept payload (tens of milliseconds at the median; its tail), and a page of the fan's query
# (DynamoDB answers 1 MB a page, at most `SLOT_INLINE_BYTES` a branch).
RESTORE_SECONDS = 0.1
QUERY_PAGE_SECONDS = 0.05
QUERY_PAGE_BYTES = 1_048_576


def completing_seconds(width: int) -> float:
    """The longest a fan of `width` branches takes its completing arrival to read back: every branch's
    payload kept in S3, `RESTORE_THREADS` at a time, and every page of the fan's query."""
    restores = -(-width // RESTORE_THREADS) * RESTORE_SECONDS
    pages = -(-width * SLOT_INLINE_BYTES // QUERY_PAGE_BYTES) * QUERY_PAGE_SECONDS
    return restores + pages


# What a completing arrival holds in memory per branch, for the bound `memory` is checked against: the
# branch's payload as read (JSON bytes) and as parsed (Python objects take about as much again), on top
# of what the runtime, boto3 and the handler's module take before any branch is read.
RESTORED_COPIES = 2
RUNTIME_MB = 150


def completing_megabytes(width: int, branch_bytes: int) -> float:
    """What the completing arrival of a fan of `width` branches of `branch_bytes` each holds at its
    peak: every branch restored at once (`Gatherer._gathered`), read and parsed."""
    return RUNTIME_MB + width * branch_bytes * RESTORED_COPIES / 2**20


def widest_in_memory(megabytes: int, branch_bytes: int) -> int:
    """The widest fan of `branch_bytes` branches whose completing arrival fits `megabytes` (at least 1)."""
    return max(1, int((megabytes - RUNTIME_MB) * 2**20 // (branch_bytes * RESTORED_COPIES)))


def widest_fan(seconds: float, most: int) -> int:
    """The widest fan, up to `most`, whose completing arrival reads it back within `seconds` (at least 1)."""
    low, high = 1, most
    while low < high:
        middle = (low + high + 1) // 2
        low, high = (middle, high) if completing_seconds(middle) <= seconds else (low, middle - 1)
    return low


class Gathering:
    def __init__(self, config: SidecarConfig, policy: JoinPolicy, table: JoinTable, store: TaskStore | None) -> None:
        self.actor = config.actor
        self.policy = policy
        self.table = table
        self.store = store
        self.max_width = config.join_max_width
        self.claims = config.claims()
        self.slot_claims = (
            Claims(config.claim_bucket, config.namespace, SLOT_INLINE_BYTES) if config.claim_bucket else None
        )

    def arrive(self, envelope: Envelope, frame: JoinFrame, now: dt.datetime) -> tuple[HopOutcome, list[Outbound]]:
        """Keep and count one arrival; what it sends (nothing until its fan completes or gives up) and
        the outcome it is counted under. A fan wider than the join takes (`join.max_width`) gives up at
        its first arrival, saying why: its completing arrival could not restore and join it in time."""
        outcome = arrival_outcome(envelope)
        if frame.width > self.max_width:
            if envelope.id != frame.into:
                self._end_branch(envelope, frame, outcome)
            why = (
                f"a fan of {frame.width} branches is wider than this join takes (join.max_width {self.max_width}); "
                "join it in stages (a join of joins), or raise max_width with the join's function_timeout"
            )
            return self._give_up(frame, envelope, now, why)
        wire = envelope.to_dict()
        body = orjson.dumps(wire).decode()
        if self.slot_claims is not None:
            body = self.slot_claims.check_in(wire, body)
        writes = [lambda: self.table.keep(frame, outcome, body)]
        if envelope.id != frame.into:  # its own record, not the join's: nothing orders the two writes
            writes.append(lambda: self._end_branch(envelope, frame, outcome))
        together(writes)
        head = self.table.arrive(frame, failed=outcome is not Phase.SUCCEEDED)
        if head.given_up_by == frame.slot:
            return HopOutcome.JOIN_FAILED, [self._failure(frame, envelope, now)]
        if head.given_up_by is not None:
            self._failed_later(envelope, frame, head.failed)
            return HopOutcome.ABSORBED, []
        if self.policy.gives_up(len(head.failed), frame.width):
            return self._give_up(frame, envelope, now, failed=head.failed)
        if not head.complete:
            return HopOutcome.GATHERED, []
        gathered = self._gathered(frame)
        failed = sum(branch.outcome is not Phase.SUCCEEDED for branch in gathered)
        if self.policy.gives_up(failed, frame.width):  # a payload that could not be read back
            return self._give_up(frame, envelope, now)
        payload, failed_slots = joined_payload(gathered, self.policy)
        return HopOutcome.JOINED, [self._joined(frame, envelope, gathered, payload, failed_slots, now)]

    def _give_up(
        self,
        frame: JoinFrame,
        envelope: Envelope,
        now: dt.datetime,
        why: str | None = None,
        *,
        failed: frozenset[int] = frozenset(),
    ) -> tuple[HopOutcome, list[Outbound]]:
        """`failed`: the fan's failed slots as this arrival counted them, for its own failure's count
        when another arrival gave up first (its failure may have been gathered in time, or not)."""
        if self.table.give_up(frame):
            return HopOutcome.JOIN_FAILED, [self._failure(frame, envelope, now, why)]
        self._failed_later(envelope, frame, failed)
        return HopOutcome.ABSORBED, []  # another arrival gave up first and sent the failure

    def _failed_later(self, envelope: Envelope, frame: JoinFrame, failed: frozenset[int]) -> None:
        """A branch that failed after its join gave up, counted on the joined envelope's record
        (`asya.join_failure`): the join's failure, sent when it gave up, could not count it."""
        if frame.slot not in failed or self.store is None or stealthy(envelope.headers):
            return
        named = len(failed) <= FAILED_BRANCHES_NAMED  # among the first failures: its place and error too
        branch = later_entry(failed_branch(envelope.to_dict(), frame.slot, frame.width)) if named else None
        self.store.count_join_failure(frame.into, len(failed), branch)

    def _end_branch(self, envelope: Envelope, frame: JoinFrame, outcome: Phase) -> None:
        """A branch that does not go on as the joined envelope ends here: its record says how (the join,
        not its root, accounts for it)."""
        if self.store is None or stealthy(envelope.headers):
            return
        ended = envelope.status if outcome is not Phase.SUCCEEDED else None  # how it failed, if it did
        details = {
            "reason": ended.reason if ended is not None else Reason.JOINED.value,
            "error": ended.error if ended is not None else None,
            "actor": ended.actor if ended is not None else self.actor,
            "route": {"prev": envelope.route.prev, "curr": envelope.route.curr, "next": envelope.route.next},
            "joined_into": frame.into,
            "parent_id": envelope.parent_id,
            "root_id": root_of(envelope.id, envelope.headers),
        }
        self.store.finish_gathered(envelope.id, outcome.value, details)

    def _gathered(self, frame: JoinFrame) -> list[Gathered]:
        """Every kept branch with its payload back: those kept in S3 are read `RESTORE_THREADS` at a
        time, so a wide fan's completing arrival spends its width over that many in S3 requests."""
        kept = self.table.gathered(frame.fan)
        if sum(REF_FIELD in branch.body for branch in kept) < 2:
            return [self._read(branch) for branch in kept]
        with ThreadPoolExecutor(RESTORE_THREADS) as pool:
            return list(pool.map(self._read, kept))

    def _read(self, kept: Kept) -> Gathered:
        """A kept branch with its payload back; one whose payload cannot be read counts as failed."""
        document: dict[str, Any] = orjson.loads(kept.body)
        if REF_FIELD not in document:
            return Gathered(kept.slot, kept.outcome, document)
        try:
            if self.claims is None:
                raise PayloadUnreadableError(f"{REF_FIELD}: no ASYA_CLAIM_BUCKET to read it from")
            return Gathered(kept.slot, kept.outcome, self.claims.restore(document))
        except PayloadUnreadableError as exc:
            details = error_details(exc)
            failure = error_payload(Reason.PAYLOAD_UNREADABLE, details, None)
            status = {**document.get("status", {}), "reason": Reason.PAYLOAD_UNREADABLE.value, "error": details}
            unread = {**document, "payload": failure, "status": status}
            unread.pop(REF_FIELD, None)
            return Gathered(kept.slot, Phase.FAILED, unread)

    def _joined(  # noqa: PLR0917 - called once, by `arrive`
        self,
        frame: JoinFrame,
        envelope: Envelope,
        gathered: list[Gathered],
        payload: list[Any],
        failed: list[int],
        now: dt.datetime,
    ) -> Outbound:
        """The joined envelope: `into`'s, at this join, carrying the gathered payload; sent by the arrival
        that completed the fan (`envelope`)."""
        into = next(branch.document for branch in gathered if branch.document["id"] == frame.into)
        return self._rejoin(Envelope.model_validate(into), envelope, frame, payload, failed, now)

    def _failure(self, frame: JoinFrame, envelope: Envelope, now: dt.datetime, why: str | None = None) -> Outbound:
        """The joined envelope's failure: `into`'s (or, before it arrived, the arriving branch's under
        `into`'s id), with what was gathered so far as its original payload (a branch not arrived:
        `null`; a failed one: its error payload) and why in its error."""
        gathered = self._gathered(frame)
        into = next((branch.document for branch in gathered if branch.document["id"] == frame.into), None)
        base = Envelope.model_validate(into) if into is not None else envelope.model_copy(update={"id": frame.into})
        if into is None:
            base.parent_id = None  # not known here; the record keeps the one its first hop wrote
        so_far: list[Any] = [None] * frame.width
        for branch in gathered:
            so_far[branch.slot] = branch.document.get("payload")
        failed = [branch for branch in gathered if branch.outcome is not Phase.SUCCEEDED]
        joined = self._rejoin(base, envelope, frame, so_far, [branch.slot for branch in failed], now)
        named = [failed_branch(branch.document, branch.slot, frame.width) for branch in failed]
        told: dict[str, Any] = {FAILED_BRANCHES: named[:FAILED_BRANCHES_NAMED]}
        if why is None:  # it gave up for its failed branches: counted, and counted on as more fail
            why = join_failure_message(len(failed), frame.width, self.policy.describe(), named)
            told[FAILED_COUNT] = len(failed)
        return routing.fail(
            Envelope.model_validate(joined.wire),
            self.actor,
            reason=Reason.JOIN_FAILED,
            details={**error_details(None, why), **told},
            now=now,
        )

    def _rejoin(  # noqa: PLR0917 - the two callers above
        self,
        base: Envelope,
        sender: Envelope,
        frame: JoinFrame,
        payload: list[Any],
        failed: list[int],
        now: dt.datetime,
    ) -> Outbound:
        """`base` (the branch it goes on as) at this join; its trace context the `sender`'s, the arrival
        whose hop sends it, so the next hop's segment names that hop as its parent, not `base`'s arrival."""
        marker = {"fan": frame.fan, "width": frame.width, "failed": failed}
        headers = {**without(base.headers, frame), JOINED_HEADER: marker}
        if TRACEPARENT in sender.headers:
            headers[TRACEPARENT] = sender.headers[TRACEPARENT]
        return routing.rejoin(base, self.actor, payload, headers, now)

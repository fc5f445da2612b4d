"""Keep moto's SQS fast when a queue is deep: `apply_depth_fix()` patches moto 5.2.5 in place.

moto keeps a queue's messages in one list and answers nearly every call by scanning it. `Queue.messages` filters
the whole list on each receive pass and each long-poll wake-up; the three `ApproximateNumberOfMessages*`
attributes rescan it, and `Queue.attributes` (which computes all three) is read on every send and twice per
received message; delete and change-visibility search the list for the receipt handle and delete rebuilds it;
a redrive removes from the list; FIFO deduplication scans it. Measured here at a depth of 10,000 (moto server over
loopback, `python -m bench.moto_sqs_depth`): about 6 messages/s sent and 2 received.

The patch keeps, per queue, an index beside the messages (`_Book`): a heap of ready messages in queue order, heaps
of delay and visibility deadlines, counters of ready / delayed / not-visible messages that move when a deadline
passes, and maps from receipt handle and deduplication id to the message. Message objects, their timestamps and
the order messages are delivered in are moto's own; `Queue._messages` still reads and assigns as a list (purge
and anything else that assigns it rebuild the index), so behaviour stays that of unpatched moto, minus the scans.
The pinned moto version is checked because this depends on its internals.
"""

from __future__ import annotations

import functools
import heapq
import itertools
from copy import deepcopy

from moto.core.utils import unix_time, unix_time_millis
from moto.sqs import models as sqs_models
from moto.sqs.exceptions import InvalidParameterValue, ReceiptHandleIsInvalid
from moto.sqs.models import Message, Queue, SQSBackend

_ORIGINAL_DELETE = Queue.delete_message
_ORIGINAL_CHANGE_VISIBILITY = SQSBackend.change_message_visibility
_MAX_TOTAL_VISIBILITY_MS = 43200 * 1000


class _Entry:
    """One message of one queue: its place in queue order and which counters it is in."""

    __slots__ = ("delayed", "invisible", "live", "msg", "seq", "ver")

    def __init__(self, msg: Message, seq: int) -> None:
        self.msg = msg
        self.seq = seq
        self.ver = 0  # bumped on every state change: heap items carrying an older one are stale
        self.live = True
        self.delayed = False
        self.invisible = False

    @property
    def ready(self) -> bool:
        return not self.delayed and not self.invisible


class _Book:
    """Everything moto's scans computed, kept up to date per message; used with the queue's lock held."""

    def __init__(self) -> None:
        self.entries: dict[Message, _Entry] = {}  # in queue order, like moto's list
        self.handles: dict[str, _Entry] = {}  # every receipt handle a message in the queue ever had
        self.dedup: dict[str, dict[_Entry, None]] = {}
        self.ready: list[tuple[int, int, _Entry]] = []  # (seq, ver, entry)
        self.delays: list[tuple[float, int, int, _Entry]] = []  # (delayed_until, seq, ver, entry)
        self.hidden: list[tuple[float, int, int, _Entry]] = []  # (visible_at, seq, ver, entry)
        self.n_ready = self.n_delayed = self.n_invisible = 0
        self._seq = itertools.count()

    def add(self, msg: Message, now: float) -> _Entry:
        entry = _Entry(msg, next(self._seq))
        self.entries[msg] = entry
        self.n_ready += 1  # a new entry's flags say ready: count it so, `settle` moves it where it belongs
        self.index_handles(entry)
        if msg.deduplication_id is not None:
            self.dedup.setdefault(msg.deduplication_id, {})[entry] = None
        self.settle(entry, now)
        return entry

    def index_handles(self, entry: _Entry) -> None:
        for handle in entry.msg.all_receipt_handles:
            if handle is not None:
                self.handles[handle] = entry

    def drop(self, entry: _Entry) -> None:
        entry.live = False
        self.n_delayed -= entry.delayed
        self.n_invisible -= entry.invisible
        self.n_ready -= entry.ready
        msg = entry.msg
        del self.entries[msg]
        for handle in msg.all_receipt_handles:
            if handle is not None and self.handles.get(handle) is entry:
                del self.handles[handle]
        if msg.deduplication_id is not None:
            same = self.dedup.get(msg.deduplication_id, {})
            same.pop(entry, None)
            if not same:
                self.dedup.pop(msg.deduplication_id, None)

    def settle(self, entry: _Entry, now: float) -> None:
        """Recompute the entry's state from the message's timestamps, with moto's own comparisons."""
        msg = entry.msg
        delayed = now < msg.delayed_until  # Message.delayed
        invisible = not now > msg.visible_at  # not Message.visible
        self.n_delayed += delayed - entry.delayed
        self.n_invisible += invisible - entry.invisible
        self.n_ready += (not delayed and not invisible) - entry.ready
        entry.delayed, entry.invisible = delayed, invisible
        entry.ver += 1
        if delayed:
            heapq.heappush(self.delays, (msg.delayed_until, entry.seq, entry.ver, entry))
        if invisible:
            heapq.heappush(self.hidden, (msg.visible_at, entry.seq, entry.ver, entry))
        if entry.ready:
            heapq.heappush(self.ready, (entry.seq, entry.ver, entry))

    def advance(self, now: float) -> None:
        """Settle the messages whose delay or visibility timeout has passed by `now`."""
        while self.delays and self.delays[0][0] <= now:
            _, _, ver, entry = heapq.heappop(self.delays)
            if entry.live and entry.ver == ver:
                self.settle(entry, now)
        while self.hidden and self.hidden[0][0] < now:
            _, _, ver, entry = heapq.heappop(self.hidden)
            if entry.live and entry.ver == ver:
                self.settle(entry, now)
        self._compact()

    def pop_ready(self) -> tuple[int, int, _Entry] | None:
        """The first ready message in queue order, taken off the ready heap (push it back to keep it there)."""
        while self.ready:
            item = heapq.heappop(self.ready)
            entry = item[2]
            if entry.live and entry.ver == item[1] and entry.ready:
                return item
        return None

    def ready_messages(self) -> list[Message]:
        items = sorted(item for item in self.ready if item[2].live and item[2].ver == item[1] and item[2].ready)
        return [item[2].msg for item in items]

    def _compact(self) -> None:
        """Drop stale heap items (deleted or re-settled messages) once they outnumber the live ones."""
        limit = 2 * len(self.entries) + 64
        for heap in (self.delays, self.hidden):
            if len(heap) > limit:
                heap[:] = [item for item in heap if item[3].live and item[3].ver == item[2]]
                heapq.heapify(heap)
        if len(self.ready) > limit:
            self.ready[:] = [item for item in self.ready if item[2].live and item[2].ver == item[1]]
            heapq.heapify(self.ready)


def _now_ms() -> float:
    return unix_time_millis()


def _book(queue: Queue) -> _Book:
    book: _Book | None = queue.__dict__.get("_asya_book")
    if book is None:  # a queue created before the patch: index its list once
        book = _new_book(queue.__dict__.pop("_messages", []))
        queue.__dict__["_asya_book"] = book
    return book


def _new_book(messages: list[Message]) -> _Book:
    book, now = _Book(), _now_ms()
    for msg in messages:
        book.add(msg, now)
    return book


def _get_messages(queue: Queue) -> list[Message]:
    with queue._messages_lock:
        return list(_book(queue).entries)


def _set_messages(queue: Queue, messages: list[Message]) -> None:
    book = _new_book(list(messages))
    lock = queue.__dict__.get("_messages_lock")  # None while Queue.__init__ runs
    if lock is None:
        queue.__dict__["_asya_book"] = book
        return
    with lock:
        queue.__dict__["_asya_book"] = book


def _counter(name: str) -> property:
    def read(queue: Queue) -> int:
        with queue._messages_lock:
            book = _book(queue)
            book.advance(_now_ms())
            count: int = getattr(book, name)
            return count

    return property(read)


def _visible_messages(queue: Queue) -> list[Message]:
    with queue._messages_lock:
        book = _book(queue)
        book.advance(_now_ms())
        return book.ready_messages()


def _has_ready(queue: Queue) -> bool:
    book = _book(queue)
    book.advance(_now_ms())
    return book.n_ready > 0


def _wait_for_messages(queue: Queue, timeout: int) -> None:
    with queue._messages_lock:
        queue._messages_lock.wait_for(lambda: _has_ready(queue), timeout=timeout)


def _is_duplicate(queue: Queue, message: Message) -> bool:
    """moto's FIFO deduplication (a same-id message still in the queue, sent < 5 minutes earlier), by index."""
    if message.deduplication_id is None:
        candidates = [m for m in _book(queue).entries if m.deduplication_id is None]
    else:
        candidates = [e.msg for e in _book(queue).dedup.get(message.deduplication_id, {})]
    return any(
        (message.sent_timestamp - m.sent_timestamp) / 1000 < sqs_models.DEDUPLICATION_TIME_IN_SECONDS  # type: ignore[operator]
        for m in candidates
    )


def _add_message(queue: Queue, message: Message) -> None:
    with queue._messages_lock:
        if (
            queue.fifo_queue
            and (queue.attributes.get("ContentBasedDeduplication") == "true" or message.deduplication_id)
            and _is_duplicate(queue, message)
        ):
            return
        _book(queue).add(message, _now_ms())
        queue._messages_lock.notify_all()
    _feed_event_source_mappings(queue)


def _feed_event_source_mappings(queue: Queue) -> None:
    """Unchanged from moto's `Queue.add_message`: moto's own Lambda event source mappings."""
    for arn, esm in queue.lambda_event_source_mappings.items():
        if not esm.enabled:
            continue
        backend = sqs_models.sqs_backends[queue.account_id][queue.region]
        messages = backend.receive_message(
            queue.name,
            esm.batch_size,
            queue.receive_message_wait_time_seconds,  # type: ignore[attr-defined]
            queue.visibility_timeout,  # type: ignore[attr-defined]
        )
        from moto.awslambda.utils import get_backend

        if get_backend(queue.account_id, queue.region).send_sqs_batch(arn, messages, queue.queue_arn):
            for m in messages:
                backend.delete_message(queue.name, m.receipt_handle)  # type: ignore[arg-type]
        else:
            for m in messages:
                backend.change_message_visibility(queue.name, m.receipt_handle, visibility_timeout=0)  # type: ignore[arg-type]


def _delete_message(queue: Queue, receipt_handle: str) -> None:
    if not isinstance(receipt_handle, str):  # moto matches every message on a missing handle: keep that as it was
        _ORIGINAL_DELETE(queue, receipt_handle)
        return
    with queue._messages_lock:
        if receipt_handle in queue.deleted_messages:
            return
        book = _book(queue)
        entry = book.handles.get(receipt_handle)
        if entry is None:
            raise ReceiptHandleIsInvalid()
        queue.pending_messages.discard(entry.msg)
        queue.deleted_messages.update(entry.msg.all_receipt_handles)  # type: ignore[arg-type]
        book.drop(entry)


def _change_message_visibility(
    backend: SQSBackend, queue_name: str, receipt_handle: str, visibility_timeout: int
) -> None:
    queue = backend.get_queue(queue_name)
    if not isinstance(receipt_handle, str):
        _ORIGINAL_CHANGE_VISIBILITY(backend, queue_name, receipt_handle, visibility_timeout)
        queue._messages = queue._messages  # re-index: moto changed a message behind the book's back
        return
    with queue._messages_lock:
        book = _book(queue)
        entry = book.handles.get(receipt_handle)
        if entry is None:
            raise ReceiptHandleIsInvalid
        message = entry.msg
        given_visibility_timeout = _now_ms() + int(visibility_timeout) * 1000
        if given_visibility_timeout - message.sent_timestamp > _MAX_TOTAL_VISIBILITY_MS:  # type: ignore[operator]
            raise InvalidParameterValue(
                f"Value {visibility_timeout} for parameter VisibilityTimeout is invalid. Reason: Total "
                "VisibilityTimeout for the message is beyond the limit [43200 seconds]"
            )
        message.change_visibility(visibility_timeout)
        if message.visible and message in queue.pending_messages:
            queue.pending_messages.remove(message)
        book.settle(entry, _now_ms())


def _receive_message(  # noqa: PLR0917 - moto's signature, called positionally
    backend: SQSBackend,
    queue_name: str,
    count: int,
    wait_seconds_timeout: int,
    visibility_timeout: int,
    message_attribute_names: list[str] | None = None,
) -> list[Message]:
    """moto's `SQSBackend.receive_message` with the pass over `queue.messages` done by `_receive_pass`."""
    queue = backend.get_queue(queue_name)
    result: list[Message] = []
    previous_result_count = 0
    polling_end = unix_time() + wait_seconds_timeout
    pending_groups = deepcopy(queue.pending_message_groups) if queue.fifo_queue else set()
    while not result and not (wait_seconds_timeout and unix_time() > polling_end):
        with queue._messages_lock:
            to_dlq, pending_groups = _receive_pass(
                backend,
                queue,
                count=count,
                visibility_timeout=visibility_timeout,
                message_attribute_names=message_attribute_names or [],
                result=result,
                pending_groups=pending_groups,
            )
        for message in to_dlq:
            queue.dead_letter_queue.add_message(message)  # type: ignore[union-attr]
        if previous_result_count == len(result):
            if wait_seconds_timeout == 0:
                break
            queue.wait_for_messages(1)
            continue
        previous_result_count = len(result)
    return result


def _receive_pass(
    backend: SQSBackend,
    queue: Queue,
    *,
    count: int,
    visibility_timeout: int,
    message_attribute_names: list[str],
    result: list[Message],
    pending_groups: set[str],
) -> tuple[list[Message], set[str]]:
    """One pass over the ready messages in queue order, as moto's loop; only the messages it looks at are touched."""
    book = _book(queue)
    book.advance(_now_ms())
    kept: list[tuple[int, int, _Entry]] = []  # looked at, still ready: back on the heap after the pass
    touched: list[_Entry] = []  # received (or changed by someone else): settled after the pass
    to_dlq: list[_Entry] = []
    while (item := book.pop_ready()) is not None:
        entry = item[2]
        message = entry.msg
        if not message.visible or message.delayed:
            touched.append(entry)
            continue
        if message in queue.pending_messages:  # visible again: the consumer timed out
            queue.pending_messages.remove(message)
            if queue.fifo_queue:
                pending_groups = deepcopy(queue.pending_message_groups)
        if message.group_id and queue.fifo_queue and message.group_id in pending_groups:
            kept.append(item)
            continue
        redrive = queue.redrive_policy
        if (
            queue.dead_letter_queue is not None
            and redrive
            and message.approximate_receive_count >= redrive["maxReceiveCount"]
        ):
            to_dlq.append(entry)
            continue
        queue.pending_messages.add(message)
        message.mark_received(visibility_timeout=visibility_timeout)
        touched.append(entry)
        message_copy = deepcopy(message)
        sqs_models._filter_message_attributes(message_copy, message_attribute_names)
        if not backend.is_message_valid_based_on_retention_period(queue.name, message):
            break
        result.append(message_copy)
        if len(result) >= count:
            break
    for item in kept:
        heapq.heappush(book.ready, item)
    now = _now_ms()
    for entry in touched:
        book.index_handles(entry)
        book.settle(entry, now)
    for entry in to_dlq:
        book.drop(entry)
    return [entry.msg for entry in to_dlq], pending_groups


def apply_depth_fix() -> None:
    """Patch moto's SQS models in this process (idempotent); queues that already exist are indexed on first use."""
    if getattr(Queue, "_asya_depth_fix", False):
        return
    setattr(Queue, "_messages", property(_get_messages, _set_messages))  # noqa: B010 - mypy: no method-assign
    setattr(Queue, "messages", property(_visible_messages))  # noqa: B010
    setattr(Queue, "approximate_number_of_messages", _counter("n_ready"))  # noqa: B010
    setattr(Queue, "approximate_number_of_messages_delayed", _counter("n_delayed"))  # noqa: B010
    setattr(Queue, "approximate_number_of_messages_not_visible", _counter("n_invisible"))  # noqa: B010
    setattr(Queue, "add_message", _add_message)  # noqa: B010
    setattr(Queue, "delete_message", _delete_message)  # noqa: B010
    setattr(Queue, "wait_for_messages", _wait_for_messages)  # noqa: B010
    setattr(SQSBackend, "receive_message", _receive_message)  # noqa: B010
    setattr(SQSBackend, "change_message_visibility", _change_message_visibility)  # noqa: B010
    # Not a scan, but most of what is left of a send or a receive: `Queue.attributes` (read on each send and twice per
    # received message) converts 14 names from CamelCase each time. The conversion is a pure function of the name.
    convert = functools.lru_cache(maxsize=1024)(sqs_models.camelcase_to_underscores)  # type: ignore[attr-defined]
    setattr(sqs_models, "camelcase_to_underscores", convert)  # noqa: B010
    setattr(Queue, "_asya_depth_fix", True)  # noqa: B010


def oldest_message_ages(prefix: str) -> dict[str, float]:
    """Seconds since the oldest message still in each queue whose name starts with `prefix` was sent
    (in flight and delayed ones included), as CloudWatch's `ApproximateAgeOfOldestMessage` tells it
    on AWS; 0 for an empty queue. The book keeps messages in queue order: the first is the oldest."""
    from moto.core.models import DEFAULT_ACCOUNT_ID
    from moto.sqs.models import sqs_backends

    now = _now_ms()
    ages: dict[str, float] = {}
    for backend in sqs_backends[DEFAULT_ACCOUNT_ID].values():
        for name, queue in list(backend.queues.items()):
            if not name.startswith(prefix):
                continue
            with queue._messages_lock:
                oldest = next(iter(_book(queue).entries), None)
            sent = oldest.sent_timestamp if oldest is not None else None
            ages[name] = max(0.0, (now - sent) / 1000) if sent is not None else 0.0
    return ages

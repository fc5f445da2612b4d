"""Enforcing the per-message time limit on a handler (docs/actors.md, "Resiliency").

Lambda runs the entry point in the main thread, so the handler is *stopped*: a timer aimed at the
main thread (`asya.alarm_clock`) raises `HandlerTimeout` inside it. That interrupts sleeps, socket
waits and lock waits as well as Python code, and leaves no stray thread mutating state.

The timer is armed lazily, because arming and disarming it are system calls (a few microseconds each
in a sandbox, a sizeable share of a hop) while the handlers of one batch usually get the same limit.
A handler's call only records its deadline; the timer is (re)armed only when it is not running or
would go off too late for that deadline, and it is not disarmed between calls. When it goes off, the
running call's deadline decides: passed, the handler is stopped; not yet (the timer was set for an
earlier call), it is armed again for the rest; between calls, it is ignored. So a batch of quick
handlers arms it once and disarms it once, at the end of the batch.
`HandlerTimeout` derives from `BaseException` so a handler's `except Exception` cannot swallow it; a
handler that swallows even that is still reported as timed out, because the timer's firing is
recorded. Where signals are unavailable (any other thread), the handler runs in a worker thread that
is *abandoned* when the limit passes; its late result is discarded.
"""

from __future__ import annotations

import signal
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from typing import Any, TypeVar

from asya.alarm_clock import set_alarm

T = TypeVar("T")


class HandlerTimeout(BaseException):
    """Raised inside a handler whose time limit has passed."""


class TimedOut(Exception):  # noqa: N818 - names the outcome the router acts on
    """The call did not finish within its limit."""

    def __init__(self, limit: float) -> None:
        super().__init__(f"handler did not finish within {limit:.3f}s")
        self.limit = limit


def run_with_timeout(function: Callable[[], T], limit: float | None) -> T:
    """Run `function`; raise `TimedOut` if it has not returned within `limit` seconds."""
    if limit is None:
        return function()
    if limit <= 0:
        raise TimedOut(limit)
    if threading.get_ident() != threading.main_thread().ident:
        return _run_in_worker(function, limit)
    if _alarm.installed:
        return _run_with_alarm(function, limit)
    with alarm_installed():
        return _run_with_alarm(function, limit)


class _Alarm:
    """The timer's state. One instance (`_alarm`), not class attributes: it is written three times
    on every hop, and writing a class's attribute also empties Python's look-up cache for the class."""

    __slots__ = ("armed_for", "deadline", "fired", "installed")

    def __init__(self) -> None:
        self.installed = False  # `_on_alarm` handles SIGALRM (a stretch of work, usually a batch)
        self.deadline: float | None = None  # the running call's deadline (`time.monotonic`); None between calls
        self.armed_for: float | None = None  # when the timer goes off; None if it is disarmed or went off
        self.fired = False


_alarm = _Alarm()


def _arm(deadline: float) -> None:
    _alarm.armed_for = deadline
    set_alarm(max(deadline - time.monotonic(), 1e-6))


def _on_alarm(_signum: int, _frame: Any) -> None:
    _alarm.armed_for = None
    deadline = _alarm.deadline
    if deadline is None:
        return  # between calls: the timer was set for a call that has returned
    if time.monotonic() < deadline:
        _arm(deadline)  # set for an earlier call's deadline: wait for this call's own
        return
    _alarm.fired = True
    raise HandlerTimeout


@contextmanager
def alarm_installed() -> Iterator[None]:
    """Install the SIGALRM handler for a stretch of work (a whole batch): swapping signal handlers
    per message costs four times as much as arming the timer. Nested uses keep the outer one. The
    timer is disarmed when the stretch ends, so no alarm outlives it."""
    if threading.get_ident() != threading.main_thread().ident or _alarm.installed:
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    _alarm.installed = True
    try:
        yield
    finally:
        _alarm.deadline = None
        if _alarm.armed_for is not None:
            _alarm.armed_for = None
            set_alarm(0)
        _alarm.installed = False
        signal.signal(signal.SIGALRM, previous)


def _run_with_alarm(function: Callable[[], T], limit: float) -> T:
    """The alarm may go off at any bytecode once the deadline is set, even before `function` starts
    (a loaded machine) or just after it returned: all of that is inside the `try` that turns it into
    `TimedOut`. The deadline is cleared before that `try` ends, so a later alarm is ignored."""
    deadline = time.monotonic() + limit
    try:
        _alarm.fired = False
        try:
            _alarm.deadline = deadline
            if _alarm.armed_for is None or _alarm.armed_for > deadline:
                _arm(deadline)
            result = function()
        finally:
            _alarm.deadline = None
    except HandlerTimeout:
        raise TimedOut(limit) from None
    if _alarm.fired:
        raise TimedOut(limit)
    return result


class _Worker:
    """A single worker thread, replaced whenever a handler overruns and has to be abandoned."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="asya-handler")

    def submit(self, function: Callable[[], T]) -> Future[T]:
        with self._lock:
            return self._pool.submit(function)

    def abandon(self) -> None:
        with self._lock:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="asya-handler")


_worker = _Worker()


def _run_in_worker(function: Callable[[], T], limit: float) -> T:
    future = _worker.submit(function)
    try:
        return future.result(timeout=limit)
    except FutureTimeout:
        _worker.abandon()
        raise TimedOut(limit) from None

"""Enforcing the per-message time limit on a handler (SPEC §7).

Lambda runs the entry point in the main thread, so the handler is *stopped*: a timer aimed at the
main thread (`asya.alarm_clock`) raises `HandlerTimeout` inside it. That interrupts sleeps, socket
waits and lock waits as well as Python code, costs about a microsecond per message, and leaves no
stray thread mutating state.
`HandlerTimeout` derives from `BaseException` so a handler's `except Exception` cannot swallow it; a
handler that swallows even that is still reported as timed out, because the timer's firing is
recorded. Where signals are unavailable (any other thread), the handler runs in a worker thread that
is *abandoned* when the limit passes; its late result is discarded.
"""

from __future__ import annotations

import signal
import threading
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
    if threading.current_thread() is threading.main_thread():
        with alarm_installed():
            return _run_with_alarm(function, limit)
    return _run_in_worker(function, limit)


class _Alarm:
    armed = False
    fired = False


def _on_alarm(_signum: int, _frame: Any) -> None:
    if _Alarm.armed:
        _Alarm.fired = True
        raise HandlerTimeout


@contextmanager
def alarm_installed() -> Iterator[None]:
    """Install the SIGALRM handler for a stretch of work (a whole batch): swapping signal handlers
    per message costs four times as much as arming the timer. Nested uses keep the outer one."""
    if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGALRM) is _on_alarm:
        yield
        return
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    try:
        yield
    finally:
        signal.signal(signal.SIGALRM, previous)


def _run_with_alarm(function: Callable[[], T], limit: float) -> T:
    """The alarm may go off at any bytecode once it is armed, even before `function` starts (a loaded
    machine) or while it is being disarmed: all of that is inside the `try` that turns it into
    `TimedOut`. It is marked unarmed before it is disarmed, so a late signal is ignored."""
    try:
        _Alarm.armed, _Alarm.fired = True, False
        try:
            set_alarm(limit)
            result = function()
        finally:
            _Alarm.armed = False
            set_alarm(0)
    except HandlerTimeout:
        raise TimedOut(limit) from None
    if _Alarm.fired:
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

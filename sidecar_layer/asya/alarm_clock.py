"""A one-shot SIGALRM aimed at the main thread, to stop a handler that overruns its time limit.

`setitimer(ITIMER_REAL)` signals the *process*, and Linux may hand a process-directed signal to any
thread that does not block it. When a handler has started threads (an HTTP pool, a model's thread
pool; in tests, a local AWS endpoint), the signal can land on one of them: CPython then runs the
Python-level handler only when the main thread next executes bytecode, so a main thread blocked in a
sleep, a socket or a lock is not interrupted until that call returns on its own. This was seen in
the test suite: a 30 s sleep ran to its end although the 2 s alarm had fired.

On Linux the clock is a POSIX timer that signals one thread (`timer_create` with `SIGEV_THREAD_ID`):
the main thread, where the handler runs. Elsewhere, or if the timer cannot be made, it falls back to
`setitimer`. Arming and disarming cost about a microsecond either way.
"""

from __future__ import annotations

import ctypes
import os
import signal
import sys
import threading

_CLOCK_MONOTONIC = 1
_SIGEV_THREAD_ID = 4  # Linux: deliver to the thread named in `sigev_notify_thread_id`


class _Timespec(ctypes.Structure):
    _fields_ = (("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long))


class _ITimerSpec(ctypes.Structure):
    _fields_ = (("it_interval", _Timespec), ("it_value", _Timespec))


class _SigEvent(ctypes.Structure):
    """Linux's 64-byte `struct sigevent`; the thread id is the first member of its trailing union."""

    _fields_ = (
        ("sigev_value", ctypes.c_void_p),
        ("sigev_signo", ctypes.c_int),
        ("sigev_notify", ctypes.c_int),
        ("sigev_notify_thread_id", ctypes.c_int),
        ("_padding", ctypes.c_int * 11),
    )


class _ThreadTimer:
    """A POSIX timer of the calling thread's process that sends SIGALRM to that thread."""

    def __init__(self) -> None:
        libc = _timer_library()
        self._settime = libc.timer_settime
        self._settime.argtypes = (ctypes.c_void_p, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
        event = _SigEvent(sigev_signo=signal.SIGALRM, sigev_notify=_SIGEV_THREAD_ID)
        event.sigev_notify_thread_id = threading.get_native_id()
        self._timer = ctypes.c_void_p()
        libc.timer_create.argtypes = (ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p)
        if libc.timer_create(_CLOCK_MONOTONIC, ctypes.byref(event), ctypes.byref(self._timer)) != 0:
            raise OSError(ctypes.get_errno(), "timer_create failed")
        self._spec = _ITimerSpec()
        self._spec_ref = ctypes.byref(self._spec)
        self.pid = os.getpid()

    def set(self, seconds: float) -> None:
        """Fire once after `seconds`; 0 disarms."""
        whole = int(seconds)
        nanoseconds = int((seconds - whole) * 1e9)
        if seconds > 0 and not whole and not nanoseconds:
            nanoseconds = 1  # a zero value would disarm instead
        self._spec.it_value.tv_sec, self._spec.it_value.tv_nsec = whole, nanoseconds
        self._settime(self._timer, 0, self._spec_ref, None)


def _timer_library() -> ctypes.CDLL:
    """glibc has the POSIX timers in libc since 2.34, in librt before."""
    for name in (None, "librt.so.1"):
        library = ctypes.CDLL(name, use_errno=True)
        if hasattr(library, "timer_create"):
            return library
    raise OSError("no timer_create in libc or librt")


_timer: _ThreadTimer | None = None
_unavailable = not sys.platform.startswith("linux")


def set_alarm(seconds: float) -> None:
    """Arm (or with 0, disarm) the main thread's alarm. Call it from the main thread only."""
    global _timer, _unavailable
    if not _unavailable and (_timer is None or _timer.pid != os.getpid()):  # timers do not survive a fork
        try:
            _timer = _ThreadTimer()
        except (OSError, AttributeError):
            _unavailable = True
    if _unavailable or _timer is None:
        signal.setitimer(signal.ITIMER_REAL, seconds)
    else:
        _timer.set(seconds)

"""Lambda's own limits around each local execution environment: the function timeout and its memory.

On AWS the runtime, not the function, enforces both. An invocation that runs past the function's
timeout ends with `Task timed out after N.NN seconds` and its execution environment is discarded;
one whose environment uses more memory than `MemorySize` is killed (`Runtime exited with error:
signal: killed`). Either way the invocation is a function error: an SQS event source deletes
nothing of the batch (its messages return after the visibility timeout and count toward
`maxReceiveCount`), a stream event source retries the batch.

Locally the stack's process plays the runtime. Each worker marks the start and the end of every
invocation in a small file of its own (`InvocationClock`, two `pwrite`s per invocation), and one
thread in the stack's process (`Watchdog`) reads those files and each worker's resident memory every
`CHECK_SECONDS`, and SIGKILLs a worker that passes either limit. The check runs outside the worker,
so a handler stuck in C code that never returns to the interpreter (and holds the GIL), or blocked
in a sleep with signals masked, is stopped all the same; the stack then starts a new environment.
The local API's execution environments are its own children, so it runs a `Watchdog` of its own
over them (`asya_local.functions.environments`); its own process runs no invocation.

Memory is measured as the worker's resident set size (`/proc/<pid>/statm`), sampled, so a burst of
allocation can overshoot by what it allocates within one check. Lambda counts the whole sandbox's
memory (the runtime's own included), which RSS approximates; the local worker also carries the
poller that Lambda runs outside the sandbox, so `MEMORY_MARGIN_MB` is allowed on top of `MemorySize`
(measured in docs/local-stack.md).
"""

from __future__ import annotations

import os
import signal
import struct
import tempfile
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

CHECK_SECONDS = 0.05
# What a local worker holds that a Lambda sandbox does not: the event source's own poller, mostly its
# boto3 client's service model (~9 MB measured), plus what one sampling interval lets through. A queue
# worker of the test mesh holds ~58 MB idle and ~72 MB after its first batches (docs/local-stack.md).
MEMORY_MARGIN_MB = 16
_IDLE = struct.pack("d36s", 0.0, b"")
_RECORD = struct.Struct("d36s")  # invocation start (CLOCK_MONOTONIC, shared by every process), request id


def rss_mb(pid: int) -> float | None:
    """A process's resident memory in MiB, None if it is gone (or the system has no /proc)."""
    try:
        resident_pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return None
    return resident_pages * os.sysconf("SC_PAGE_SIZE") / 2**20


class InvocationClock:
    """The worker's side: marks when an invocation starts and ends, for the stack's `Watchdog`."""

    def __init__(self, path: str | None) -> None:
        self._fd = os.open(path, os.O_WRONLY) if path else None

    def started(self, request_id: str) -> None:
        if self._fd is not None:
            os.pwrite(self._fd, _RECORD.pack(time.monotonic(), request_id.encode()[:36]), 0)

    def ended(self) -> None:
        if self._fd is not None:
            os.pwrite(self._fd, _IDLE, 0)


@dataclass
class Watched:
    """One worker process under the watchdog, with its function's limits."""

    source: str  # how its lines are labelled
    pid: int
    timeout: float
    memory_mb: int
    clock_path: str
    killed: str | None = None  # why the watchdog killed it, once it has


@dataclass
class Watchdog:
    """Stops workers that pass their function's timeout or memory; `on_line(source, line)` gets
    Lambda's log lines for it. `clock_file()` makes a worker's clock, `watch` adds the worker."""

    on_line: Callable[[str, str], None]
    memory_margin_mb: int = MEMORY_MARGIN_MB
    check_seconds: float = CHECK_SECONDS
    _watched: dict[int, Watched] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _stopped: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _folder: tempfile.TemporaryDirectory[str] = field(
        default_factory=lambda: tempfile.TemporaryDirectory(prefix="asya-clocks-")
    )

    def clock_file(self) -> str:
        """A fresh, idle clock file for one worker process."""
        descriptor, path = tempfile.mkstemp(dir=self._folder.name, suffix=".clock")
        os.write(descriptor, _IDLE)
        os.close(descriptor)
        return path

    def watch(self, watched: Watched) -> None:
        with self._lock:
            self._watched[watched.pid] = watched
        if self._thread is None:
            self._thread = threading.Thread(target=self._run, name="asya-watchdog", daemon=True)
            self._thread.start()

    def forget(self, pid: int) -> Watched | None:
        """Stop watching a process that has ended; returns what was known of it."""
        with self._lock:
            watched = self._watched.pop(pid, None)
        if watched is not None:
            Path(watched.clock_path).unlink(missing_ok=True)
        return watched

    def stop(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self._folder.cleanup()

    def _run(self) -> None:
        while not self._stopped.wait(self.check_seconds):
            with self._lock:
                watched = [w for w in self._watched.values() if w.killed is None]
            for worker in watched:
                try:
                    self.check(worker)
                except Exception:  # noqa: BLE001 - one worker's trouble must not end the watch over all
                    traceback.print_exc()

    def check(self, worker: Watched) -> None:
        """Kill `worker` if its invocation has run past the timeout or it holds too much memory."""
        started, request_id = self._invocation(worker)
        now = time.monotonic()
        if started and now - started > worker.timeout:
            self._kill(worker, request_id, f"{request_id} Task timed out after {worker.timeout:.2f} seconds")
            return
        used = rss_mb(worker.pid)
        if used is not None and used > worker.memory_mb + self.memory_margin_mb:
            self._kill(
                worker,
                request_id,
                f"RequestId: {request_id or '-'} Error: Runtime exited with error: signal: killed "
                f"(out of memory: {used:.0f} MB resident, Memory Size: {worker.memory_mb} MB "
                f"+ {self.memory_margin_mb} MB local margin) Runtime.ExitError",
            )

    @staticmethod
    def _invocation(worker: Watched) -> tuple[float, str]:
        try:
            with open(worker.clock_path, "rb") as clock:
                started, request_id = _RECORD.unpack(clock.read(_RECORD.size))
        except (OSError, struct.error):
            return 0.0, ""
        return started, request_id.rstrip(b"\0").decode()

    def _kill(self, worker: Watched, request_id: str, line: str) -> None:
        worker.killed = line
        self.on_line(worker.source, line)
        try:
            os.kill(worker.pid, signal.SIGKILL)
        except ProcessLookupError:
            return
        if request_id:
            self.on_line(worker.source, f"END RequestId: {request_id}")

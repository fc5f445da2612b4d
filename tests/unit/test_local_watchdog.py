"""Lambda's own limits around a local execution environment: a worker whose invocation runs past the
function's timeout, or whose memory passes its size, is killed from outside, however it is stuck."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from asya_local.functions.watchdog import InvocationClock, Watchdog, Watched

# A tiny worker: marks an invocation on its clock file, then does what the test asks inside it.
WORKER = """
import signal, sys, time
from asya_local.functions.watchdog import InvocationClock
clock = InvocationClock(sys.argv[1])
clock.started("req-1")
if sys.argv[2] == "stuck":
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGTERM})  # like C code: no signal gets in
    time.sleep(30)
elif sys.argv[2] == "grow":
    chunks = []
    for _ in range(100):  # up to 400 MB, 4 MB at a time, each page touched so it is resident
        chunks.append(b"x" * 2**22)
        time.sleep(0.001)
clock.ended()
print("finished", flush=True)
"""


@pytest.fixture
def watchdog() -> Iterator[tuple[Watchdog, list[str]]]:
    lines: list[str] = []
    made = Watchdog(lambda source, line: lines.append(f"{source}: {line}"), memory_margin_mb=0, check_seconds=0.02)
    yield made, lines
    made.stop()


def run(watchdog: Watchdog, mode: str, timeout: float, memory_mb: int) -> tuple[subprocess.Popen[str], float]:
    clock = watchdog.clock_file()
    started = time.monotonic()
    process = subprocess.Popen([sys.executable, "-c", WORKER, clock, mode], stdout=subprocess.PIPE, text=True)
    watchdog.watch(Watched("tiny", process.pid, timeout, memory_mb, clock))
    process.wait(timeout=20)
    return process, time.monotonic() - started


def test_an_invocation_past_the_timeout_is_killed_even_with_signals_blocked(
    watchdog: tuple[Watchdog, list[str]],
) -> None:
    made, lines = watchdog
    process, elapsed = run(made, "stuck", timeout=0.3, memory_mb=1024)
    assert process.returncode == -signal.SIGKILL
    assert elapsed < 5
    assert lines[0] == "tiny: req-1 Task timed out after 0.30 seconds"
    assert lines[1] == "tiny: END RequestId: req-1"


def test_memory_past_the_function_size_kills_the_worker(watchdog: tuple[Watchdog, list[str]]) -> None:
    made, lines = watchdog
    process, _ = run(made, "grow", timeout=60, memory_mb=128)
    assert process.returncode == -signal.SIGKILL
    assert "Runtime exited with error: signal: killed" in lines[0]
    assert "Memory Size: 128 MB" in lines[0]


def test_a_worker_within_its_limits_is_left_alone(watchdog: tuple[Watchdog, list[str]]) -> None:
    made, lines = watchdog
    process, _ = run(made, "quick", timeout=5, memory_mb=128)
    assert process.returncode == 0
    assert process.stdout is not None
    assert process.stdout.read() == "finished\n"
    assert lines == []


def test_an_idle_worker_is_not_timed(watchdog: tuple[Watchdog, list[str]]) -> None:
    made, lines = watchdog
    clock = made.clock_file()
    InvocationClock(clock).started("req-2")
    InvocationClock(clock).ended()
    idle = Watched("idle", pid=2**22 + 1, timeout=0.0, memory_mb=128, clock_path=clock)  # no such process
    made.check(idle)
    assert lines == []
    assert idle.killed is None

"""`python -m asya.consumer`: a container actor's entry point (docs/containers.md).

`ASYA_CONSUMER_CONCURRENCY` processes run hops at once, each a full consumer with its own sidecar.
Processes, not threads: the handler runs in its process's main thread, where the sidecar's timer can
stop it at its limit (in another thread a handler past its limit is only abandoned, still running,
`asya.timeouts`); a handler's module state, event loop and GPU context are its own, as in a Lambda
execution environment; and a handler that takes its process down (a segfault, the OOM killer)
returns only that process's batch to the queue. With one, the task's main process is the consumer.
This process forwards SIGTERM to its children, starts a new one for any that dies, and exits 0 once
all have stopped. Before any of that it fetches the actor's secrets and files into its environment
(`asya.startup`, what `asya.actor` does at a Lambda actor's init), once per task: its children inherit
the variables. On ECS it also keeps the task protected from scale-in while any of its consumers holds
messages (`asya.consumer.protection`): each marks its slot of an array it shares with this process.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import signal
import sys
import time
from collections.abc import MutableSequence
from typing import Any

from asya.consumer.process import run_child, run_process
from asya.consumer.protection import flag, outlasts_drain, protect_while_busy
from asya.consumer.settings import RELEASE_MARGIN, ConsumerSettings
from asya.startup import prepare

LOG = logging.getLogger("asya.consumer")
RESTART_PAUSE = 1.0  # seconds between a child's death and its replacement: a crash loop does not spin


SPAWN = multiprocessing.get_context("spawn")  # a fresh interpreter: no forked boto3 sessions or CUDA state


def supervise(settings: ConsumerSettings, busy: MutableSequence[float]) -> int:
    me = os.getpid()
    children = [
        SPAWN.Process(target=run_child, args=(me, busy, n), name=f"asya-consumer-{n}")
        for n in range(settings.concurrency)
    ]
    stopping: list[float] = []

    def on_stop(_signum: int, _frame: Any) -> None:
        if not stopping:
            stopping.append(time.monotonic())
            for child in children:
                if child.is_alive() and child.pid is not None:
                    child.terminate()  # SIGTERM: each drains and releases by itself

    signal.signal(signal.SIGTERM, on_stop)
    signal.signal(signal.SIGINT, on_stop)
    for child in children:
        child.start()
    while any(child.is_alive() for child in children) or not stopping:
        for index, child in enumerate(children):
            if not stopping and not child.is_alive():
                LOG.warning("consumer process %s ended (exit %s); starting another", child.name, child.exitcode)
                busy[index] = 0.0  # what it held comes back to the queue: it no longer keeps the task protected
                time.sleep(RESTART_PAUSE)
                children[index] = SPAWN.Process(target=run_child, args=(me, busy, index), name=child.name)
                children[index].start()
        if stopping and time.monotonic() - stopping[0] > settings.stop_grace + RELEASE_MARGIN:
            break
        time.sleep(0.2)
    return 0


def main() -> int:
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(processName)s %(levelname)s %(message)s")
    prepare()  # the actor's secrets and files, once per task, as a Lambda actor's init: its processes inherit them
    settings = ConsumerSettings.from_env()
    busy = SPAWN.RawArray("d", settings.concurrency)  # one slot per consumer process, shared with them
    if outlasts_drain(settings.hop_time_limit, settings.release_after):
        protect_while_busy(busy, settings.hop_time_limit, os.environ)
    if settings.concurrency == 1:
        run_process(flag(busy, 0))
        return 0
    return supervise(settings, busy)


if __name__ == "__main__":
    sys.exit(main())

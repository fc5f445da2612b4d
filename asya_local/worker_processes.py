"""The local stack's workers as processes: started, their lines passed on, replaced when one dies,
stopped with the stack (`asya_local.stack` says what each one runs).

Workers are separate processes, like Lambda execution environments: handlers run in their main
thread (so time limits stop them), user modules cannot collide, and two cores are used. Lambda's own
limits (the function timeout, its memory size) are enforced from outside them by one watchdog
(`asya_local.functions.watchdog`), and a worker that dies is replaced. With a fault spec
(`asya_local.functions.faults`) workers fail on purpose, and the gateway's, stream poller's and
schedule's are restarted at intervals.

A container actor's consumer worker is a task: with `tasks` (the stack's `asya_local.task_agent`) it
gets an `ECS_AGENT_URI` of its own, and `retire` never stops one whose task is protected from
scale-in, as ECS never does.

Each worker starts in a session of its own: a terminal's Ctrl-C signals its whole foreground process
group, and workers in it would die under `asya up` at the same moment, to be replaced against an
endpoint that is stopping too. Out of that group only `asya up` gets the signal, and stops them in
order. A worker still ends with the stack's process, however that ends (`asya_local.parent_watch`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from asya.consumer.protection import AGENT_URI
from asya_local.deployed_functions import (
    ContainerTrigger,
    HttpTrigger,
    LocalFunction,
    QueueTrigger,
    ScheduleTrigger,
    StreamTrigger,
)
from asya_local.functions.faults import FaultSpec
from asya_local.functions.watchdog import Watchdog, Watched
from asya_local.runtime import FunctionPython
from asya_local.task_agent import TaskAgent

# What runs each kind of trigger, in the order they start: consumers before the API that feeds them.
WORKERS = {
    QueueTrigger: "asya_local.functions.esm",
    ContainerTrigger: "asya_local.functions.consumer_worker",  # started by the scaler, `asya_local.container_scaling`
    StreamTrigger: "asya_local.functions.stream_poller",
    ScheduleTrigger: "asya_local.functions.scheduler",
    HttpTrigger: "asya_local.functions.gateway_server",
}
CRASH_LOOP_SECONDS = 2.0  # a worker that dies sooner than this after starting is restarted after a pause
# How long the workers, told to stop, are given to end before they are killed: an invocation in flight is
# not waited for (a stopped stack keeps nothing), only a worker's own orderly end.
STOP_SECONDS = 3.0


@dataclass
class WorkerProcesses:
    """The running workers of one stack. `spec` is what a function's worker is given, `python` its
    import path, `source` how its lines are labelled; each worker's temporary folder is made in `folder`."""

    on_line: Callable[[str, str], None]
    spec: Callable[[LocalFunction], dict[str, Any]]
    python: Callable[[LocalFunction], FunctionPython]
    source: Callable[[LocalFunction], str]
    folder: Path
    faults: FaultSpec | None = None
    _processes: list[tuple[str, subprocess.Popen[str]]] = field(default_factory=list)
    _stopping: bool = False
    _lock: threading.Lock = field(default_factory=threading.Lock)  # spawning (after a crash) vs stopping
    _watchdog: Watchdog | None = None  # made with the first worker
    _spawned: dict[str, int] = field(default_factory=dict)  # workers started per function: fault streams
    _stopped: threading.Event = field(default_factory=threading.Event)  # ends the restart timers
    _retired: set[int] = field(default_factory=set)  # pids stopped on purpose (scaled in): not replaced
    # container actors' tasks: each consumer worker is one, with an `ECS_AGENT_URI` of this agent
    tasks: TaskAgent | None = None
    _task_ids: dict[int, str] = field(default_factory=dict)  # a consumer worker's pid -> its task's id

    def spawn(self, function: LocalFunction) -> None:
        with self._lock:
            if self._stopping:
                return
            if self._watchdog is None:
                self._watchdog = Watchdog(self.on_line)
            watchdog = self._watchdog
        clock = watchdog.clock_file()
        source = self.source(function)
        spec = {**self.spec(function), "clock_file": clock, "parent": os.getpid()}
        task_id = None
        if self.tasks is not None and isinstance(function.trigger, ContainerTrigger):
            task_id, agent_uri = self.tasks.register(function.name, function.role)
            spec["environment"] = {**spec["environment"], AGENT_URI: agent_uri}
        faults = self.faults.for_worker(source) if self.faults is not None else None
        if faults is not None:
            spawned = self._spawned[function.name] = self._spawned.get(function.name, 0) + 1
            spec |= {
                "faults": faults.model_dump(mode="json"),
                "fault_stream": f"{faults.seed}:{function.name}:{spawned}",
            }
        # like Lambda's /tmp, each execution environment has a temporary folder of its own
        temporary = Path(tempfile.mkdtemp(prefix=f"{source}-", dir=self.folder))
        environment = self.python(function).environment(dict(os.environ))
        process = subprocess.Popen(
            # -S: no site-packages, so the function imports what it ships (`asya_local.runtime`)
            [sys.executable, "-S", "-m", WORKERS[type(function.trigger)], json.dumps(spec)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            cwd=str(function.code_dir),
            env={**environment, "PYTHONUNBUFFERED": "1", "TMPDIR": str(temporary)},
            start_new_session=True,
        )
        with self._lock:
            if self._stopping:  # a replacement started while the stack stops: end it at once
                process.terminate()
                if task_id is not None and self.tasks is not None:
                    self.tasks.forget(task_id)
                return
            self._processes.append((source, process))
            if task_id is not None:
                self._task_ids[process.pid] = task_id
        watchdog.watch(Watched(source, process.pid, function.timeout, function.memory, clock))
        threading.Thread(target=self._relay, args=(function, source, process), daemon=True).start()

    def _relay(self, function: LocalFunction, source: str, process: subprocess.Popen[str]) -> None:
        """Pass the worker's lines on; if it dies while the stack runs, start a new one, as Lambda
        starts a new execution environment after a crash (after a pause if it keeps dying at once,
        say on an import error, so a crash loop does not spin). Once the stack stops, a worker's end
        is expected, and a replacement that cannot start (the endpoint is going) says nothing."""
        assert process.stdout is not None
        started = time.monotonic()
        for line in process.stdout:
            self.on_line(source, line.rstrip())
        code = process.wait()
        watchdog = self._watchdog  # None once the stack has stopped
        watched = watchdog.forget(process.pid) if watchdog is not None else None
        task_id = self._task_ids.pop(process.pid, None)
        if task_id is not None and self.tasks is not None:
            self.tasks.forget(task_id)  # a task that stopped: a new worker is a new task
        if self._stopping or process.pid in self._retired:
            return
        why = "was stopped" if watched is not None and watched.killed else f"exited with code {code}"
        self.on_line(source, f"execution environment {why}; starting a new one")
        if time.monotonic() - started < CRASH_LOOP_SECONDS:
            time.sleep(CRASH_LOOP_SECONDS)
        try:
            self.spawn(function)
        except Exception as exc:  # noqa: BLE001 - said on the worker's lines, not as a thread's traceback
            if not self._stopping:
                self.on_line(source, f"a new execution environment did not start: {type(exc).__name__}: {exc}")

    def running(self, source: str) -> int:
        """How many of `source`'s workers are alive and not being stopped."""
        with self._lock:
            return sum(1 for label, process in self._live() if label == source)

    def retire(self, source: str) -> bool:
        """Stop one of `source`'s workers (SIGTERM: a consumer drains its hop) without replacing it;
        as ECS on a scale-in, never a task protected from it. False if every one is protected."""
        with self._lock:
            for label, process in self._live():
                if label == source and not self._protected(process.pid):
                    self._retired.add(process.pid)
                    process.terminate()
                    return True
        return False

    def _protected(self, pid: int) -> bool:
        task_id = self._task_ids.get(pid)
        return task_id is not None and self.tasks is not None and self.tasks.protected(task_id)

    def _live(self) -> list[tuple[str, subprocess.Popen[str]]]:
        return [(s, p) for s, p in self._processes if p.poll() is None and p.pid not in self._retired]

    def restart_every(self, sources: set[str], every: float) -> None:
        """Fault: kill the workers labelled `sources` every `every` seconds; `_relay` starts new ones."""
        while not self._stopped.wait(every):
            for source, process in list(self._processes):
                if source in sources and process.poll() is None:
                    self.on_line(source, "fault: restart of the execution environment")
                    process.kill()

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
        self._stopped.set()
        for _, process in self._processes:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + STOP_SECONDS
        for _, process in self._processes:
            try:
                process.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._processes.clear()
        if self._watchdog is not None:
            self._watchdog.stop()
            self._watchdog = None

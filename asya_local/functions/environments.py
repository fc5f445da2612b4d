"""The gateway function's execution environments behind the local API, each a process of its own.

On Lambda every concurrent invocation runs in an execution environment of its own: a process that
imported the handler's module once, at its init, and runs one invocation at a time, so whatever the
module keeps (Powertools' resolver and the event it is resolving, what the function built at its
first event) is that invocation's alone. The local API's process (the front,
`asya_local.functions.gateway_server`) does the same: `Environments` starts a child process when every
existing one is busy, up to a limit, and hands each invocation to an idle one. A child is a worker
like the queue workers (`worker.main`): the same interpreter, flags and import path (the front's,
which the stack gave the function's, `asya_local.runtime`), the deployed environment set before the
init, the init's errors reported as Lambda's runtime reports them, its own faults stream, and every
invocation marked on a clock file of its own, which a `Watchdog` in the front reads to kill an
environment past the function's timeout or memory size, as the stack's does for its workers. An
environment that ends (crashed, killed) is dropped, and a new one is started when one is needed, as
Lambda makes a new one after a crash.

The front talks to a child over pipes, one JSON line per event (its stdin) and one per answer (a pipe
of its own, `answers_fd`, whose first line says the init is done): the proxy event and the function's
result are JSON on AWS too (Lambda's runtime refuses a result that is not, `Runtime.MarshalError`), so
nothing richer than a line is needed, and the child's stdout stays its log, as every worker's is,
shared with the front's. A child reads its stdin in a thread of its own and ends at once when it
closes: the front closes it to stop the child, and it closes by itself when the front dies (the
stack's fault restarts SIGKILL it), so no environment outlives its front and holds the stack's log
pipe open. `multiprocessing` would pickle the same dicts, and add a resource tracker and a re-import
of the front's main module, for nothing.

    python -m asya_local.functions.environments '<json spec>'   (started by `Environments` only)
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import subprocess
import sys
import threading
import traceback
from dataclasses import dataclass
from typing import Any, TextIO

from asya_local.functions import worker
from asya_local.functions.watchdog import Watchdog, Watched

MODULE = "asya_local.functions.environments"
READY = '{"initialized": true}\n'  # the child's first line: its init is done
INIT_SECONDS = 10.0  # Lambda's limit on an on-demand environment's init
ENDED = "Runtime.ExitError"  # what Lambda reports for an invocation whose environment died under it


@dataclass(frozen=True)
class Answer:
    """What became of one invocation: the function's result, or the error type Lambda would report."""

    result: Any = None
    error: str | None = None


class Environment:
    """The front's handle on one child: it sends an event and waits for the answer line."""

    def __init__(self, spec: dict[str, Any], number: int, watchdog: Watchdog) -> None:
        self.number = number
        clock = watchdog.clock_file()
        answers, answers_fd = os.pipe()
        child = {**spec, "clock_file": clock, "answers_fd": answers_fd, "parent": os.getpid()}
        if "fault_stream" in spec:  # each environment draws its own faults, as each worker does
            child["fault_stream"] = f"{spec['fault_stream']}:{number}"
        flags = ["-S"] if sys.flags.no_site else []
        try:
            self.process = subprocess.Popen(
                [sys.executable, *flags, "-m", MODULE, json.dumps(child)],
                stdin=subprocess.PIPE,
                text=True,
                pass_fds=(answers_fd,),
            )
        finally:
            os.close(answers_fd)
        self._answers: queue.SimpleQueue[Answer] = queue.SimpleQueue()
        self._initialized = threading.Event()  # its init is done, or it ended
        threading.Thread(target=self._read, args=(os.fdopen(answers, encoding="utf-8"),), daemon=True).start()
        watchdog.watch(Watched(f"environment {number}", self.process.pid, spec["timeout"], spec["memory"], clock))

    def send(self, event: dict[str, Any]) -> None:
        assert self.process.stdin is not None
        try:
            self.process.stdin.write(json.dumps(event) + "\n")
            self.process.stdin.flush()
        except (BrokenPipeError, ValueError):  # ended already: `_read` answers for it
            pass

    def answer(self, timeout: float) -> Answer | None:
        """The answer to the event sent last, or None if it did not come within `timeout` seconds."""
        try:
            return self._answers.get(timeout=timeout)
        except queue.Empty:
            return None

    def late_answer(self) -> Answer:
        """The answer that did not come in time: it comes, or the watchdog ends the environment."""
        return self._answers.get()

    @property
    def ended(self) -> bool:
        return self.process.poll() is not None

    def initialized(self, timeout: float) -> bool:
        """Whether its init succeeded within `timeout` seconds (one that failed has been reported)."""
        return self._initialized.wait(timeout) and not self.ended

    def _read(self, answers: TextIO) -> None:
        with answers:
            for line in answers:
                if line == READY:
                    self._initialized.set()
                else:
                    self._answers.put(Answer(**json.loads(line)))
        self.process.wait()  # the pipe closes when the child exits
        self._initialized.set()
        self._answers.put(Answer(error=ENDED))

    def stop(self) -> None:
        """End the child: its stdin closes, so it exits (a stuck one is killed)."""
        assert self.process.stdin is not None
        with contextlib.suppress(BrokenPipeError):
            self.process.stdin.close()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


class Environments:
    """Up to `limit` environments of the function in `spec`. The first is started, and its init waited
    for, before anything is served, as the API's one process imported the handler before it listened:
    the API answers once the function can. Past the limit a request waits for one to be free."""

    def __init__(self, spec: dict[str, Any], limit: int) -> None:
        self._spec = spec
        self._watchdog = Watchdog(lambda _source, line: worker.say(line))
        self._slots = threading.BoundedSemaphore(limit)
        self._lock = threading.Lock()
        self._started = 0
        self._stopping = False
        self._running: list[Environment] = []
        first = self._start()
        if not first.initialized(INIT_SECONDS):
            self.stop()
            raise RuntimeError(f"the first execution environment of {spec['function']} did not initialize")
        self._free = [first]

    def take(self, timeout: float) -> Environment | None:
        """An idle environment, a new one if none is, or None if none came free within `timeout` s."""
        if not self._slots.acquire(timeout=timeout):
            return None
        while True:
            with self._lock:
                idle = self._free.pop() if self._free else None
            if idle is None:
                break
            if not idle.ended:
                return idle
            self._drop(idle)  # ended while idle (killed for its memory): never handed an event
        try:
            return self._start()
        except BaseException:
            self._slots.release()
            raise

    def invoke(self, environment: Environment, event: dict[str, Any], timeout: float) -> Answer | None:
        """Run one invocation in `environment` (taken); None if it did not answer within `timeout` s. An
        environment that has not answered stays busy until it does, or until the watchdog ends it."""
        environment.send(event)
        answer = environment.answer(timeout)
        if answer is None:
            threading.Thread(target=self._give_back_late, args=(environment,), daemon=True).start()
        else:
            self._give_back(environment, answer)
        return answer

    def stop(self) -> None:
        with self._lock:
            self._stopping = True
            running, self._running = self._running, []
        for environment in running:
            environment.stop()
        self._watchdog.stop()

    def _start(self) -> Environment:
        with self._lock:
            self._started += 1
            number = self._started
        environment = Environment(self._spec, number, self._watchdog)
        with self._lock:
            self._running.append(environment)
        return environment

    def _give_back_late(self, environment: Environment) -> None:
        self._give_back(environment, environment.late_answer())

    def _give_back(self, environment: Environment, answer: Answer) -> None:
        if answer.error == ENDED:
            self._drop(environment)
        else:
            with self._lock:
                self._free.append(environment)
        self._slots.release()

    def _drop(self, environment: Environment) -> None:
        """Forget an environment that has ended; the next request that finds none idle starts another."""
        environment.process.wait()
        watched = self._watchdog.forget(environment.process.pid)
        with self._lock:
            stopping = self._stopping
            if environment in self._running:
                self._running.remove(environment)
        if not stopping:
            code = environment.process.returncode
            why = "was stopped" if watched is not None and watched.killed else f"exited with code {code}"
            worker.say(f"execution environment {environment.number} {why}; a new one starts when one is needed")


class Runtime:
    """The child's side: the handler's module imported once, then one invocation per event line, each
    answered with one line (a `worker.Worker`)."""

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
        _, self.handler = worker.handler_module(spec)  # a failed init: `worker.main` reports it and exits
        self._answers = os.fdopen(spec["answers_fd"], "w", encoding="utf-8")
        self._tell(READY)
        self._events: queue.SimpleQueue[str] = queue.SimpleQueue()
        threading.Thread(target=self._read, daemon=True).start()

    def _tell(self, line: str) -> None:
        try:
            self._answers.write(line)
            self._answers.flush()
        except BrokenPipeError:  # the front died (during the init, or just now): so does this environment
            self.stop()

    def _read(self) -> None:
        for line in sys.stdin:
            self._events.put(line)
        self.stop()  # the front is stopping this environment, or is gone: end now, mid-invocation or not

    def run(self) -> None:
        while True:
            self._tell(self.invoke(json.loads(self._events.get())) + "\n")

    def invoke(self, event: dict[str, Any]) -> str:
        """The answer line: the result, or the error type Lambda would report for the invocation."""
        try:
            with worker.invocation(self.spec) as context:
                result = self.handler(event, context)
        except Exception as exc:  # noqa: BLE001 - a function error: API Gateway answers 502
            traceback.print_exc(file=sys.stdout)
            return json.dumps({"error": type(exc).__name__})
        try:
            return json.dumps({"result": result})
        except (TypeError, ValueError) as exc:
            worker.say(f"Runtime.MarshalError: Unable to marshal response: {exc}")
            return json.dumps({"error": "Runtime.MarshalError"})

    def stop(self) -> None:
        sys.stdout.flush()
        os._exit(0)


if __name__ == "__main__":
    worker.main(Runtime)

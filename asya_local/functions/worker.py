"""What every local execution environment does around its own job, whatever invokes the function.

A worker is one process started by `LocalStack` with a JSON spec (the API's execution environments
are started by the local API instead, `asya_local.functions.environments`): the function's deployed
environment (plus the local endpoint and credentials), its handler and the trigger's settings; its
import path is the function's alone (`asya_local.runtime`). It sets the environment before the handler
is imported, as Lambda does, imports the handler's module as Lambda's runtime does at init (an import
that fails is reported with the runtime's own error, `Runtime.ImportModuleError` for a module that is
not shipped, and ends the environment), and stops when it gets SIGTERM, or when the process that
started it (`parent` in the spec) is gone (`asya_local.functions.parent_watch`).
Every invocation is marked on the worker's clock file (`invocation`), so a watchdog (the stack's, or
the local API's for its environments) can end the environment when it runs past the function's
timeout (`asya_local.functions.watchdog`). A spec with `faults` makes the function's AWS clients (not
the event source's) fail on purpose (`asya_local.functions.faults`).

    python -m asya_local.functions.<worker> '<json spec>'
"""

from __future__ import annotations

import importlib
import json
import os
import signal
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from types import ModuleType
from typing import Any, Protocol

from asya_local.functions.faults import FaultSpec, WorkerFaults
from asya_local.functions.lambda_shapes import LambdaContext
from asya_local.functions.parent_watch import end_with_parent
from asya_local.functions.runtime_logging import install_root_handler
from asya_local.functions.watchdog import InvocationClock

Handler = Callable[[Any, Any], Any]


class Worker(Protocol):
    def run(self) -> None: ...

    def stop(self) -> None:
        """Called from the SIGTERM handler: end `run` soon, without blocking."""


class InitError(Exception):
    """The function's init failed; `record` is what Lambda's Python runtime reports for it."""

    def __init__(self, record: dict[str, Any]) -> None:
        super().__init__(f"{record['errorType']}: {record['errorMessage']}")
        self.record = record


def handler_module(spec: dict[str, Any]) -> tuple[ModuleType, Handler]:
    """The module named by the function's handler setting, and the handler in it: the init, as Lambda's
    Python runtime does it, failing with the runtime's own error types and messages (`InitError`)."""
    module_name, _, function_name = spec["handler"].rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except Exception as exc:
        raise InitError(init_error(module_name, exc)) from exc
    try:
        handler: Handler = getattr(module, function_name)
    except AttributeError:
        message = f"Handler '{function_name}' missing on module '{module_name}'"
        raise InitError(_record("Runtime.HandlerNotFound", message, [])) from None
    return module, handler


def init_error(module: str, exc: BaseException) -> dict[str, Any]:
    """The error record Lambda's Python runtime logs when importing the handler's module raises `exc`:
    an ImportError is `Runtime.ImportModuleError` (no stack trace), a SyntaxError
    `Runtime.UserCodeSyntaxError`, anything else its own type with its stack trace."""
    if isinstance(exc, ImportError):
        return _record("Runtime.ImportModuleError", f"Unable to import module '{module}': {exc}", [])
    if isinstance(exc, SyntaxError):
        trace = [f'  File "{exc.filename}" Line {exc.lineno}\n    {exc.text}']
        return _record("Runtime.UserCodeSyntaxError", f"Syntax error in module '{module}': {exc}", trace)
    return _record(type(exc).__name__, str(exc), traceback.format_list(traceback.extract_tb(exc.__traceback__)))


def _record(error_type: str, message: str, trace: list[str]) -> dict[str, Any]:
    return {"errorMessage": message, "errorType": error_type, "requestId": "", "stackTrace": trace}


def report_init_error(record: dict[str, Any], started: float) -> None:
    """Log a failed init as Lambda does for a function with JSON logs: the runtime's error record, then
    the platform's `INIT_REPORT` line."""
    stamp = datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")
    say(json.dumps({"timestamp": stamp, "log_level": "ERROR", **record}))
    duration = (time.monotonic() - started) * 1000
    say(f"INIT_REPORT Init Duration: {duration:.2f} ms\tPhase: init\tStatus: error\tError Type: {record['errorType']}")


_clock = InvocationClock(None)
faults: WorkerFaults | None = None  # set by `main` when the spec asks for faults


@contextmanager
def invocation(spec: dict[str, Any]) -> Iterator[LambdaContext]:
    """One invocation: a fresh context (its clock starts now), marked on the worker's clock file
    while the function runs."""
    context = LambdaContext(spec["function"], spec["timeout"], spec["memory"])
    _clock.started(context.aws_request_id)
    if faults is not None:
        faults.invocation_started()
    try:
        yield context
    finally:
        _clock.ended()


def say(line: str) -> None:
    print(line, flush=True)


def main(build: Callable[[dict[str, Any]], Worker]) -> None:
    global _clock, faults
    spec = json.loads(sys.argv[1])
    if "parent" in spec:  # in a session of its own: nothing else ends it with the stack (a test's has none)
        end_with_parent(spec["parent"])
    _clock = InvocationClock(spec.get("clock_file"))
    os.environ.update(spec["environment"])
    install_root_handler()  # as Lambda's runtime does before the init: handlers' log records in JSON
    started = time.monotonic()
    try:
        worker = build(spec)  # the event source's clients are made here, before faults are installed
    except InitError as failed:
        report_init_error(failed.record, started)
        sys.exit(1)  # as Lambda's runtime ends after a failed init; the stack starts a new environment
    if spec.get("faults"):
        faults = WorkerFaults(FaultSpec.model_validate(spec["faults"]), spec["fault_stream"], say)
        faults.install()

    def stop(_signum: int, _frame: Any) -> None:
        worker.stop()

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    worker.run()

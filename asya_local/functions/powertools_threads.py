"""Keep Powertools' current event per thread in the local API server: `apply_thread_local_events()`.

Powertools' event handler keeps the event being resolved, and its Lambda context, on a class
(`BaseRouter.current_event`, `BaseRouter.lambda_context`), shared by every resolver in the process.
On Lambda that is safe: an execution environment runs one invocation at a time. The local API server
runs concurrent invocations in one process, each in a thread of its own, in copies of the handler's
module (`asya_local.functions.gateway_server`); the copies share Powertools, so a request read the
event of whichever request came in last: a task was created with another request's payload (the
integration test of concurrent tasks caught it). The patch turns both attributes into values per
thread, read and written through the same names, on the class (a metaclass descriptor, which the
class-level assignments go through) and on instances (a descriptor in the class). The pinned version
is checked because this depends on Powertools' internals.
"""

from __future__ import annotations

import threading
from typing import Any

import aws_lambda_powertools
from aws_lambda_powertools.event_handler.api_gateway import BaseRouter

PATCHED_VERSION = "3.37.0"
PER_THREAD = ("current_event", "lambda_context")


class _PerThread:
    """A data descriptor whose value is the calling thread's own."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.values = threading.local()

    def __get__(self, instance: Any, owner: Any = None) -> Any:
        try:
            return self.values.value
        except AttributeError:
            raise AttributeError(self.name) from None

    def __set__(self, instance: Any, value: Any) -> None:
        self.values.value = value


def apply_thread_local_events() -> None:
    """Patch `BaseRouter` in this process (idempotent)."""
    if isinstance(BaseRouter.__dict__.get(PER_THREAD[0]), _PerThread):
        return
    if aws_lambda_powertools.__version__ != PATCHED_VERSION:
        raise RuntimeError(
            f"{__name__} patches aws-lambda-powertools {PATCHED_VERSION} internals, found "
            f"{aws_lambda_powertools.__version__}: re-check BaseRouter.current_event and update the patch"
        )
    slots = {name: _PerThread(name) for name in PER_THREAD}
    for name, slot in slots.items():  # instances read through the class
        setattr(BaseRouter, name, slot)
    # `BaseRouter.current_event = event` (how Powertools sets it) goes through the metaclass's descriptor
    setattr(BaseRouter, "__class__", type("PerThreadRouterMeta", (type(BaseRouter),), dict(slots)))  # noqa: B010

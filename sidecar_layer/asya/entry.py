"""The one way the mesh's functions make their Lambda entry points.

What a function runs (its settings, clients, handler) is built on its first event, not at import:
Lambda sets the environment before the first event either way, and tests and the local stack set
theirs after importing the module. It is then kept for every later event of the execution
environment. `use` puts a ready-made one in place (tests, benches, another transport).
"""

from __future__ import annotations

import gc
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, Generic, Protocol, TypeVar


class Handles(Protocol):
    def handle(self, event: dict[str, Any], context: Any = None) -> dict[str, Any]: ...


F = TypeVar("F", bound=Handles)


class LambdaEntry(Generic[F]):
    """`lambda_handler = LambdaEntry(build)`: calls `build()` at the first event, then `handle`s
    every event with what it built."""

    def __init__(self, build: Callable[[], F]) -> None:
        self._build = build
        self._built: F | None = None

    def __call__(self, event: dict[str, Any], context: Any) -> dict[str, Any]:
        return self.built.handle(event, context)

    @property
    def built(self) -> F:
        if self._built is None:
            self._built = self._build()
        return self._built

    def use(self, function: F) -> F:
        """Run `function` from now on instead of what `build` makes."""
        self._built = function
        return function


@contextmanager
def kept_for_life() -> Iterator[None]:
    """Import a function's own modules with Python's cyclic garbage collector paused, then freeze what
    they made (`gc.freeze`). What an init imports lives as long as the execution environment, so the
    collections its allocations set off find nothing to free, yet they walked the whole heap: about
    30 ms of an actor's cold start (`python -m bench.cold_start`). Frozen, it is never walked again,
    by the first event's collections or any later one. Code outside the block (a handler's module, a
    model its `__init__` loads) runs with the collector as it was."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
        gc.freeze()

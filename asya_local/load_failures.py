"""Which actors cannot load their handler, read from the worker log's lines as they come.

An actor whose handler cannot be loaded still starts: its sidecar says why once, at ERROR, with the
problem in a field of its own (`asya.sidecar`, `asya.handler.PROBLEM_FIELD`), and fails each envelope
with it. `asya up` keeps what those records say, so its live view names such an actor under the "is
up" line for as long as the stack runs, not only in the lines that scroll past at the start.
"""

from __future__ import annotations

import threading

import orjson

from asya.handler import NOT_LOADED, PROBLEM_FIELD


class LoadFailures:
    """A worker log tap (`take`): actor → why it cannot load its handler; thread-safe."""

    def __init__(self) -> None:
        self._found: dict[str, str] = {}
        self._lock = threading.Lock()

    def take(self, line: str) -> None:
        if PROBLEM_FIELD not in line or not line.startswith("{"):
            return
        try:
            record = orjson.loads(line)
        except orjson.JSONDecodeError:
            return
        actor, problem = record.get("actor"), record.get(PROBLEM_FIELD)
        if isinstance(actor, str) and isinstance(problem, str):
            with self._lock:
                self._found[actor] = problem

    def found(self) -> dict[str, str]:
        with self._lock:
            return dict(sorted(self._found.items()))

    def lines(self) -> list[str]:
        """One line per actor, as a person reads it."""
        return [f"{actor} {NOT_LOADED}: {problem}" for actor, problem in self.found().items()]

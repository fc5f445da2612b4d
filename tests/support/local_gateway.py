"""The local API Gateway stand-in as the unit tests serve it, in their own process on loopback, its function
run in execution environments (child processes, `tests.support.gateway_stand_in`): its spec, an
`open_event_stream` the tests steer, and a server started and stopped around a test."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx2

from asya_local.endpoint.process import free_port
from asya_local.functions.gateway_server import Gateway, GatewayServer

KEY = "test-key"
SPEC = {
    "function": "asya-t-gateway",
    "handler": "tests.support.gateway_stand_in.handler",
    "environment": {},
    "timeout": 1.0,
    "memory": 256,
    "api_key": KEY,
    "rest_api_id": "api-1",
}


class RefusedError(Exception):
    """A refusal as the gateway raises it (`TaskError`): a 4xx status and what is wrong."""

    status = 422


class StandIn:
    """An `open_event_stream` the test steers (it runs in the API's own process)."""

    def __init__(self) -> None:
        self.acknowledged = threading.Event()
        self.stream_closed = threading.Event()
        self.opened: list[tuple[str, str | None]] = []
        self.last_chunk_at = 0.0

    def open_event_stream(self, task_id: str, last_event_id: str | None) -> Iterator[str] | None:
        if task_id == "missing":
            return None
        if task_id == "broken":
            raise RuntimeError("the task store is down")
        if task_id == "refused":
            raise RefusedError("Last-Event-ID: 'x' is not an event's id")
        self.opened.append((task_id, last_event_id))
        return self._chunks()

    def _chunks(self) -> Iterator[str]:
        try:
            yield 'id: 1\nevent: status\ndata: {"status": "running"}\n\n'
            acknowledged = self.acknowledged.wait(5)
            yield ": keep-alive\n\n"
            self.last_chunk_at = time.monotonic()
            data = json.dumps({"status": "succeeded", "acknowledged": acknowledged})
            yield f"id: 2\nevent: status\ndata: {data}\n\n"
        finally:
            self.stream_closed.set()


@contextmanager
def serving(**spec: Any) -> Iterator[tuple[GatewayServer, httpx2.Client]]:
    """The API on a free port, its spec `SPEC` with `spec`'s changes; stopped (environments too) after."""
    server = GatewayServer(Gateway({**SPEC, **spec}), free_port())
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        with httpx2.Client(base_url=server.url, headers={"x-api-key": KEY}, trust_env=False, timeout=20) as client:
            yield server, client
    finally:
        server.stop()
        thread.join(10)

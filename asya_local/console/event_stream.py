"""The console's Server-Sent Events, as Flask answers them: the framing, the keep-alives that hold a
stream open through proxies and the browser, and a task's events relayed from the gateway's stream
while nothing blocks the page's own thread."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

from flask import Response, stream_with_context

from asya.live import STATUS
from asya.task_record import TERMINAL
from asya_local.gateway_client import GatewayClient, GatewayError, GatewayUnreachableError

KEEP_ALIVE_SECONDS = 15.0
KEEP_ALIVE = "keep-alive"


def event_stream(frames: Callable[[], Iterator[str]]) -> Response:
    """An event stream with keep-alive comments, so that proxies and the browser keep it open."""

    def with_keep_alive() -> Iterator[str]:
        yield "retry: 2000\n\n"
        yield from frames()

    response = Response(stream_with_context(with_keep_alive()), mimetype="text/event-stream")
    response.headers["Cache-Control"] = "no-cache"
    response.headers["X-Accel-Buffering"] = "no"
    return response


def sse_event(name: str, data: str) -> str:
    lines = "".join(f"data: {line}\n" for line in (data.splitlines() or [""]))
    return f"event: {name}\n{lines}\n"


def followed(gateway: GatewayClient, task_id: str) -> Iterator[tuple[str, Any]]:
    """The task's events from the gateway, a `status` event with the task as it is first (the gateway
    sends its current status first too), keep-alives in between while nothing happens."""
    events: list[tuple[str, Any]] = []
    done = threading.Event()
    ready = threading.Condition()

    def follow() -> None:
        try:
            for event in gateway.follow(task_id):
                with ready:
                    events.append(event)
                    ready.notify()
        except (GatewayError, GatewayUnreachableError):
            pass
        finally:
            done.set()
            with ready:
                ready.notify()

    threading.Thread(target=follow, daemon=True).start()
    while True:
        with ready:
            if not events and not done.is_set():
                ready.wait(KEEP_ALIVE_SECONDS)
            taken, events[:] = list(events), []
        if not taken and not done.is_set():
            yield (KEEP_ALIVE, None)
        for event in taken:
            yield event
            if event[0] == STATUS and event[1].get("status") in TERMINAL:
                return
        if done.is_set() and not taken:
            return

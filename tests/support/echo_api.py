"""A tiny API function for the local API server's tests: answers with the body it was sent, read
twice with a pause between, as a handler that waits (a `?wait=`) reads its request again, and the
process id of the execution environment that ran it."""

from __future__ import annotations

import os
import time
from typing import Any

from aws_lambda_powertools.event_handler import APIGatewayRestResolver

app = APIGatewayRestResolver()
PAUSE_SECONDS = 0.2


@app.post("/echo")
def echo() -> dict[str, Any]:
    first = app.current_event.json_body
    time.sleep(PAUSE_SECONDS)  # another invocation starts meanwhile
    return {"first": first, "then": app.current_event.json_body, "environment": os.getpid()}


def handler(event: dict[str, Any], context: Any) -> dict[str, Any]:
    return app.resolve(event, context)

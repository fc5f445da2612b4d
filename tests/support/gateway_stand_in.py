"""A stand-in gateway function for the local API's unit tests, run in its execution environments
(child processes): it echoes the event it was given, with the environment's process id and how many
invocations the environment ran before this one, or fails as the path asks."""

from __future__ import annotations

import json
import os
import time
from typing import Any

invocations = 0  # kept by the module, as a function keeps what it built: one environment's own count


def handler(event: dict[str, Any], _context: Any) -> Any:
    global invocations
    before, invocations = invocations, invocations + 1
    path = event["path"]
    if path.startswith("/slow"):
        time.sleep(0.3)
    if path == "/hang":
        time.sleep(60)
    if path == "/exit":
        os._exit(3)  # the environment crashes mid-invocation
    if path == "/boom":
        raise RuntimeError("boom")
    if path == "/malformed":
        return {"body": "no status"}
    if path == "/unmarshalable":  # Lambda's runtime cannot return it as JSON
        return {"statusCode": 200, "body": "", "headers": {"at": object()}}
    if path == "/large":  # an answer over Lambda's 6 MB response payload, once encoded
        return {"statusCode": 200, "body": json.dumps({"text": "é" * 1_100_000})}
    answer = {**event, "environment": os.getpid(), "invocations": before}
    return {"statusCode": 200, "body": json.dumps(answer)}

"""The stand-in functions of `test_local_gateway.py`: its small CDK stack's code (this folder is their
asset). They report to files in STANDIN_DIR, which the tests read. Like any function's code, they
import only what Lambda's runtime gives them."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any


def _reports() -> Path:
    return Path(os.environ["STANDIN_DIR"])


def api_handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    """Echoes the proxy event it was given, with single- and multi-value headers."""
    return {
        "statusCode": 200,
        "headers": {"X-Echo": "1"},
        "multiValueHeaders": {"Set-Cookie": ["a=1", "b=2"]},
        "body": json.dumps(event),
    }


def open_event_stream(task_id: str, last_event_id: str | None, keepalive_seconds: float = 15.0) -> Iterator[str] | None:
    """Two status events; the second only once the client acknowledged the first (or 10 s passed)."""
    if task_id == "missing":
        return None
    return _events(task_id, last_event_id)


def _events(task_id: str, last_event_id: str | None) -> Iterator[str]:
    acknowledged = _reports() / f"{task_id}.ack"
    try:
        yield f"id: 1\nevent: status\ndata: {json.dumps({'status': 'running', 'after': last_event_id})}\n\n"
        deadline = time.monotonic() + 10
        while not acknowledged.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        yield ": keep-alive\n\n"
        (_reports() / f"{task_id}.last").write_text(repr(time.time()))
        data = json.dumps({"status": "succeeded", "acknowledged": acknowledged.exists()})
        yield f"id: 2\nevent: status\ndata: {data}\n\n"
    finally:
        (_reports() / f"{task_id}.closed").touch()


def stream_handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    """Logs each record; fails a record marked `fail_once` the first time it sees it."""
    failures = []
    with (_reports() / "stream.jsonl").open("a") as log:
        for record in event["Records"]:
            change = record["dynamodb"]
            task_id = change["NewImage"]["id"]["S"]
            seen = {"id": task_id, "source": record["eventSourceARN"], "created": change["ApproximateCreationDateTime"]}
            log.write(json.dumps(seen) + "\n")
            marker = _reports() / f"{task_id}.failed"
            if "fail_once" in change["NewImage"] and not marker.exists():
                marker.touch()
                failures.append({"itemIdentifier": change["SequenceNumber"]})
    return {"batchItemFailures": failures}


def backstop_handler(event: dict[str, Any], _context: Any) -> dict[str, Any]:
    with (_reports() / "backstop.log").open("a") as log:
        log.write(event["detail-type"] + "\n")
    return {"ok": True}

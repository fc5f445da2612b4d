"""What the gateway writes to SQS and the events log, as JSON within a size: a request that can never
be written is the client's error (a 4xx), never a 5xx a client would retry for ever."""

from __future__ import annotations

from typing import Any

import orjson

from asya_gateway.task_error import TaskError

# The largest envelope the gateway takes with its payload going to S3 (`asya.claims`): API Gateway
# takes at most 10 MB a request, and Lambda 6 MB an invocation.
MAX_CLAIMED_BYTES = 6 * 1024 * 1024


def as_json(document: Any, limit: int, what: str) -> str:
    """`document` as JSON, as SQS or the event log will carry it. A request that can never be written is
    the client's error: nested past the 254 levels JSON is written with (422), or over `limit` bytes
    (413); a 5xx would tell the client to retry it for ever."""
    try:
        body = orjson.dumps(document).decode()
    except TypeError as exc:  # nested too deep, or a lone surrogate from a `\\ud800` escape
        raise TaskError(422, f"{what} cannot be written as JSON ({exc}; at most 250 levels)") from None
    return within(body, limit, what)


def within(body: str, limit: int, what: str) -> str:
    size = len(body.encode())
    if size > limit:
        raise TaskError(413, f"{what} is {size} bytes, over the {limit}-byte limit")
    return body

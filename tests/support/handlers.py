"""Handlers used by the unit tests, one per style and per behaviour under test."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import AsyncIterator, Generator, Iterator
from pathlib import Path
from typing import Any

import asya

CALLS: list[Any] = []


def enrich(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "seen": True}


def nothing(payload: Any) -> None:
    CALLS.append(payload)


def as_list(payload: Any) -> list[Any]:
    return [1, 2, 3]


def explode(payload: Any) -> Any:
    CALLS.append(payload)
    raise ValueError(f"bad input {payload!r}")


class TransientError(ConnectionError):
    """A subclass, to check that rules match along the MRO."""


def flaky(payload: Any) -> Any:
    raise TransientError("upstream unavailable")


def slow(payload: dict[str, Any]) -> dict[str, Any]:
    time.sleep(payload.get("sleep", 5))
    return payload


def stubborn(payload: Any) -> Any:
    """Swallows even BaseException: must still be reported as timed out."""
    deadline = time.monotonic() + payload["sleep"]
    while time.monotonic() < deadline:
        with contextlib.suppress(BaseException):  # the point of this handler
            time.sleep(0.01)
    return payload


def unserializable(payload: Any) -> Any:
    return {"items": {1, 2}}


def huge(payload: dict[str, Any]) -> dict[str, Any]:
    return {"blob": "x" * payload["size"]}


def fan_out(payload: dict[str, Any]) -> Iterator[Any]:
    for item in payload["items"]:
        yield {"item": item}


def empty_generator(payload: Any) -> Iterator[Any]:
    return
    yield


def reroute(payload: dict[str, Any]) -> Iterator[Any]:
    """Each yielded payload captures the route as it is at that moment."""
    yield {"n": 1}
    yield ("SET", ".route.next[:0]", ["c"])
    yield {"n": 2}
    yield ("SET", ".route.next", [])
    yield {"n": 3}


def verbs(payload: dict[str, Any]) -> Generator[Any, Any, None]:
    route_next = yield ("GET", ".route.next")
    route_next.append("tampered")  # a copy: must not change the envelope
    headers = yield ("GET", ".headers")
    yield ("SET", ".route.next[999:]", ["c"])
    yield ("SET", ".headers.priority", "high")
    yield ("DEL", ".headers.drop-me")
    yield ("SET", ".status.note", "checked")
    yield ("FLY", {"token": "partial"})
    yield {"seen_next": (yield ("GET", ".route.next")), "seen_headers": sorted(headers), "id": (yield ("GET", ".id"))}


def write_path(payload: dict[str, Any]) -> Iterator[Any]:
    """Writes the path named in the payload; read-only paths must raise inside the generator."""
    yield ("SET", payload["path"], payload.get("value", "x"))
    yield payload


def catches_abi_error(payload: Any) -> Iterator[Any]:
    try:
        yield ("SET", ".route.curr", "elsewhere")
    except Exception as exc:  # noqa: BLE001 - reports what the ABI raised
        yield {"caught": type(exc).__name__, "message": str(exc)}


async def async_enrich(payload: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(0)
    return {**payload, "async": True}


async def async_slow(payload: dict[str, Any]) -> dict[str, Any]:
    await asyncio.sleep(payload.get("sleep", 5))
    return payload


async def async_fan_out(payload: dict[str, Any]) -> AsyncIterator[Any]:
    route_next = yield ("GET", ".route.next")
    for item in payload["items"]:
        await asyncio.sleep(0)
        yield {"item": item, "next": route_next}


class Model:
    """A class handler: created once per execution environment."""

    instances = 0

    def __init__(self) -> None:
        type(self).instances += 1
        self.weights = 2

    def predict(self, payload: dict[str, Any]) -> dict[str, Any]:
        return {"prediction": payload["x"] * self.weights, "instances": type(self).instances}


class NeedsArgs:
    def __init__(self, path: str) -> None:
        self.path = path

    def run(self, payload: Any) -> Any:
        return payload


def whole_envelope(envelope: dict[str, Any]) -> dict[str, Any]:
    envelope["payload"] = {"saw_id": envelope["id"], "saw_prev": envelope["route"]["prev"]}
    envelope["route"]["next"] = [*envelope["route"]["next"], "c"]
    envelope["headers"]["mode"] = "envelope"
    return envelope


def envelope_changes_id(envelope: dict[str, Any]) -> dict[str, Any]:
    envelope["id"] = "forged"
    return envelope


def envelope_bad_status(envelope: dict[str, Any]) -> dict[str, Any]:
    envelope["status"] = {"attempt": "first"}
    return envelope


def records_metric(payload: Any) -> Any:
    asya.metrics.add_metric(name="TokensGenerated", unit="Count", value=42)
    return payload


NOT_CALLABLE = 42


def rewrites_status(payload: Any) -> Iterator[Any]:
    yield ("SET", ".status.reason", "handler-said")
    yield ("DEL", ".status.note")
    yield payload


def records_envelope_size(payload: Any) -> Any:
    asya.metrics.add_metric(name="EnvelopeSize", unit="Bytes", value=1)
    return payload


def echo(payload: Any) -> Any:
    """Returns its input: whatever arrives is what the sidecar must serialize and send on."""
    return payload


def picky(payload: dict[str, Any]) -> dict[str, Any]:
    """Refuses an item called "bad" (a handler error) and answers an item called "set" with a value
    JSON cannot carry (an infrastructure error, straight to x-sump): branches that fail, for the joins."""
    if payload.get("item") == "bad":
        raise ValueError("bad item")
    if payload.get("item") == "set":
        return {"items": {1, 2}}
    return {**payload, "seen": True}


def groups(payload: dict[str, Any]) -> Iterator[Any]:
    """A fan-out of fan-outs: one branch per group of items."""
    for group in payload["groups"]:
        yield {"items": group}


def gather(payloads: list[Any]) -> dict[str, Any]:
    """A join: gets its branches' results as one list."""
    CALLS.append(payloads)
    return {"joined": payloads}


def logs_and_calls_aws(payload: dict[str, Any]) -> dict[str, Any]:
    """Logs a line of its own at INFO and makes an AWS client, whose SDK logs where it found the
    endpoint at INFO ("Found endpoint for sqs via: environment_global.")."""
    import boto3

    logging.getLogger("tests.handler").info("scoring %s", payload.get("text"))
    boto3.client("sqs", region_name="us-east-1")
    return payload


def logs(payload: dict[str, Any]) -> dict[str, Any]:
    """Logs with the standard library, as most handlers do, on a logger of its own."""
    logging.getLogger("tests.handler").warning("scoring %s", payload.get("text"))
    return payload


def counts_calls(payload: dict[str, Any]) -> dict[str, Any]:
    """Counts its calls in the actor's state, compare-and-set, and says the count it wrote (docs/actors.md)."""
    from asya import state

    while True:
        count, version = state.get_versioned("calls")
        try:
            state.put("calls", (count or 0) + 1, if_version=version)
        except state.StateConflict:
            continue
        return {**payload, "count": (count or 0) + 1}


def dies_once(payload: dict[str, Any]) -> dict[str, Any]:
    """Takes its whole process down (as a segfault or the OOM killer would) the first time it sees
    `payload["marker"]` missing, and creates it: the envelope's next delivery succeeds."""
    marker = Path(payload["marker"])
    if not marker.exists():
        marker.write_text("died")
        os._exit(9)
    return payload

"""The flow programs' actors: each notes its name in the payload's `trail`, so a test reads the path a
task took from its result as well as from its hop history."""

from __future__ import annotations

import time
from collections.abc import Generator
from pathlib import Path
from typing import Any


def _noted(payload: dict[str, Any], actor: str, **changes: Any) -> dict[str, Any]:
    return {**payload, **changes, "trail": [*payload.get("trail", []), actor]}


def classify(payload: dict[str, Any]) -> dict[str, Any]:
    return _noted(payload, "classify", confidence=payload.get("given_confidence", 0.9))


def escalate(payload: dict[str, Any]) -> dict[str, Any]:
    return _noted(payload, "escalate", escalated=True)


def accept(payload: dict[str, Any]) -> dict[str, Any]:
    return _noted(payload, "accept", accepted=True)


def draft(payload: dict[str, Any]) -> dict[str, Any]:
    return _noted(payload, "draft", score=payload.get("score", 0.0), rounds=0)


def refine(payload: dict[str, Any]) -> dict[str, Any]:
    time.sleep(payload.get("sleep", 0))  # a round that takes a while: time to cancel, or a deadline to pass
    return _noted(payload, "refine", score=payload["score"] + payload.get("step", 0.3), rounds=payload["rounds"] + 1)


class Crash(BaseException):
    """Not an `Exception`: no policy retries it and no `except` takes it; the envelope goes to x-sump."""


def evaluate(payload: dict[str, Any]) -> dict[str, Any]:
    """Fails in round `fail_in_round`; crashes the first time it is called in round 1 when given a
    `crash_marker` file, which it leaves behind, so that the envelope redriven from x-sump gets on."""
    if payload.get("fail_in_round") == payload.get("rounds"):
        raise ValueError(f"the evaluator gives up in round {payload['rounds']}")
    marker = payload.get("crash_marker")
    if marker and payload["rounds"] == 1 and not Path(marker).exists():
        Path(marker).touch()
        raise Crash("the evaluator crashes in round 1")
    return _noted(payload, "evaluate")


def fallback(payload: dict[str, Any]) -> Generator[Any, Any, None]:
    """The `except`'s actor: notes what it was told was caught (the header x-asya-caught)."""
    headers = yield ("GET", ".headers")
    yield _noted(payload, "fallback", fallback=True, caught=headers.get("x-asya-caught"))


def model_a(payload: dict[str, Any]) -> dict[str, Any]:
    return _noted(payload, "model-a", answer="a", quality=0.4)


def model_b(payload: dict[str, Any]) -> dict[str, Any]:
    return _noted(payload, "model-b", answer="b", quality=0.7)


def pick(candidates: list[dict[str, Any]]) -> dict[str, Any]:
    best = max(candidates, key=lambda candidate: candidate["quality"])
    return _noted(best, "pick", candidates=[candidate["answer"] for candidate in candidates])


def flaky(payload: dict[str, Any]) -> Generator[Any, Any, None]:
    """Fails every attempt before `succeed_at`: its resiliency policy retries it, three attempts in all."""
    status = yield ("GET", ".status")
    attempt = status.get("attempt", 1)
    if attempt < payload["succeed_at"]:
        raise ConnectionError(f"attempt {attempt} failed")
    yield _noted(payload, "flaky", attempts=attempt)

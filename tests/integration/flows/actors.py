"""The flow programs' actors: each notes its name in the payload's `trail`, so a test reads the path a
task took from its result as well as from its hop history."""

from __future__ import annotations

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
    return _noted(payload, "refine", score=payload["score"] + payload.get("step", 0.3), rounds=payload["rounds"] + 1)


def evaluate(payload: dict[str, Any]) -> dict[str, Any]:
    if payload.get("fail_in_round") == payload.get("rounds"):
        raise ValueError(f"the evaluator gives up in round {payload['rounds']}")
    return _noted(payload, "evaluate")


def fallback(payload: dict[str, Any]) -> dict[str, Any]:
    return _noted(payload, "fallback", fallback=True)


def model_a(payload: dict[str, Any]) -> dict[str, Any]:
    return _noted(payload, "model-a", answer="a", quality=0.4)


def model_b(payload: dict[str, Any]) -> dict[str, Any]:
    return _noted(payload, "model-b", answer="b", quality=0.7)


def pick(candidates: list[dict[str, Any]]) -> dict[str, Any]:
    best = max(candidates, key=lambda candidate: candidate["quality"])
    return _noted(best, "pick", candidates=[candidate["answer"] for candidate in candidates])

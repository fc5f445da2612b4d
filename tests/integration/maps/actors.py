"""The maps' actors: `square` runs once per item, on the item alone."""

from __future__ import annotations

from typing import Any


def prepare(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "prepared": True}


def square(item: int) -> dict[str, int]:
    if item < 0:
        raise ValueError(f"no square of a negative item here: {item}")
    return {"n": item, "square": item * item}


def total(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "total": sum(result["square"] for result in payload["squares"])}

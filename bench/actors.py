"""Handlers the benchmarks run: as cheap as possible, so what is measured is the mesh around them."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any


def touch(payload: dict[str, Any]) -> dict[str, Any]:
    return payload


def fan(payload: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for part in range(payload["parts"]):
        yield {"part": part}


def grow(payload: dict[str, Any]) -> dict[str, Any]:
    """A payload of `size` bytes of text: what a model or a decoder hands on."""
    return {"blob": "x" * payload["size"]}


def mark(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "marked": True}

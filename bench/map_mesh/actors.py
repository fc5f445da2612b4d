"""The bench map's actors (`bench.cost_per_hop`): `square` runs once per item, on the item alone."""

from __future__ import annotations

from typing import Any


def prepare(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "prepared": True}


def square(item: int) -> int:
    return item * item


def total(payload: dict[str, Any]) -> dict[str, Any]:
    return {**payload, "total": sum(payload["squares"])}

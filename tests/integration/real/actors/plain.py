"""Needs nothing but the standard library."""

from __future__ import annotations

from typing import Any


def echo(payload: dict[str, Any]) -> dict[str, Any]:
    return payload

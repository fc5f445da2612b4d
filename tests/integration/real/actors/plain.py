"""Needs nothing but the standard library."""

from __future__ import annotations

from typing import Any


def echo(payload: dict[str, Any]) -> dict[str, Any]:
    return payload


def grow(payload: dict[str, Any]) -> dict[str, Any]:
    """An output of the size asked for: over SQS's 1 MiB it travels in S3, over Lambda's 6 MB answer it
    is a link in the gateway's."""
    return {"blob": "g" * payload["bytes"]}
